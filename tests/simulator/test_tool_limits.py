"""Limits per tool and per shell command kind: which a corpus calls for, and recommend
searching them where one limit for every output cannot do as well."""

from __future__ import annotations

import json

from reduction_app.engine import Message, ToolInfo
from simulator.importers import RecordedConversation, load_files
from simulator.recommend import Budget, recommend
from simulator.tool_limits import KIND_FIELD, LADDER, TOOL_FIELD, dimensions, with_limit
from tests.conftest import CONVERSATIONS, needs_recordings
from tests.simulator.cases import ENGINE, call, result

NEEDLE = "=" * 1990 + " needle_identifier " + "=" * 1991
"""4,000 characters, ``needle_identifier`` in the middle and no other string."""
BULK = "= " * 4000
"""8,000 characters holding no string."""
TOOLS = (
    ToolInfo(name="read_file", description="Read a file."),
    ToolInfo(name="grep_repo", description="Search the repository."),
    ToolInfo(name="bash", description="Run a command."),
)


def two_tools(name: str) -> RecordedConversation:
    """A read whose output holds the needle, then four searches of bulk, a few more
    calls, and an answer naming the needle: cutting reads below 4,000 characters misses
    it; cutting the searches hides nothing used."""
    messages = [Message.system("You are a test agent."), Message.user("Find the answer.")]
    messages += [call("r", json.dumps({"path": "a.py"})), result("r", NEEDLE)]
    for n in range(4):
        args = json.dumps({"pattern": f"p{n}"})
        messages += [call(f"g{n}", args, "grep_repo"), result(f"g{n}", BULK, "grep_repo")]
    for n in range(6):
        messages += [call(f"x{n}", json.dumps({"path": f"x{n}"})), result(f"x{n}", "ok")]
    messages.append(Message.assistant("The answer is in needle_identifier"))
    return RecordedConversation(name, messages, TOOLS)


def test_dimensions_are_the_tools_holding_the_long_outputs() -> None:
    """The searches hold 32,000 characters of outputs over 1,000, the read 4,000: both
    pass the 5% share, the larger first; the short reads are not counted."""
    found = dimensions([two_tools("a")])
    assert [(d.field, d.key, d.outputs, d.chars) for d in found] == [
        (TOOL_FIELD, "grep_repo", 4, 32000),
        (TOOL_FIELD, "read_file", 1, 4000),
    ]
    assert round(sum(d.share for d in found), 6) == 1


def test_a_shell_tool_is_searched_by_its_commands_kinds() -> None:
    """A tool whose every call is a shell command: its commands' kinds, not the tool."""
    messages = [Message.user("Go.")]
    for n, command in enumerate(["cat big.py", "grep -rn x .", "python -m pytest"]):
        messages += [
            call(f"c{n}", json.dumps({"command": command}), "bash"),
            result(f"c{n}", BULK, "bash"),
        ]
    messages.append(Message.assistant("Done."))
    found = dimensions([RecordedConversation("shell", messages, TOOLS)])
    assert {(d.field, d.key) for d in found} == {
        (KIND_FIELD, "reading"),
        (KIND_FIELD, "searching"),
        (KIND_FIELD, "running"),
    }


def test_with_limit_adds_to_the_limits_already_set() -> None:
    (grep, read) = dimensions([two_tools("a")])
    config = with_limit({"max_length_for_trunc": 5000}, grep, 1000)
    assert with_limit(config, read, 8000) == {
        "max_length_for_trunc": 5000,
        TOOL_FIELD: {"grep_repo": 1000, "read_file": 8000},
    }


def test_recommend_finds_a_limit_for_one_tool_that_no_single_limit_matches() -> None:
    """With no miss allowed, one limit for every output stops at 4,000 characters (the
    needle's read kept whole), which leaves the searches' bulk long; a limit for the
    searches alone cuts them to the ladder's first step, and saves more."""
    corpus = [two_tools("a"), two_tools("b")]
    grid = {"max_length_for_trunc": [2000, 50000], "skip_clear": True}
    budget = Budget(misses_per_100_calls=0, refetches_per_100_calls=0, max_run_loss=0)
    plain = recommend(corpus, pricing=ENGINE, grid=grid, budget=budget, tool_limits=False)
    found = recommend(corpus, pricing=ENGINE, grid=grid, budget=budget)
    assert plain.best is not None and found.best is not None
    assert TOOL_FIELD not in plain.configs[plain.best].config
    best = found.configs[found.best]
    assert best.misses == 0
    assert best.config[TOOL_FIELD]["grep_repo"] == LADDER[0]
    assert best.cost_with_recovery_usd < plain.configs[plain.best].cost_with_recovery_usd
    assert "trunc[grep_repo]=1k" in best.name
    # A grid that sets the limits itself is searched as given.
    given = {**grid, TOOL_FIELD: {"grep_repo": 2000}}
    fixed = recommend(corpus, pricing=ENGINE, grid=given, budget=budget, max_seconds=0)
    assert {json.dumps(t.config[TOOL_FIELD]) for t in fixed.configs} == {'{"grep_repo": 2000}'}


@needs_recordings
def test_the_shipped_corpora_call_for_read_and_shell_command_kinds() -> None:
    claude = dimensions(load_files([CONVERSATIONS / "claude-code-long"]))
    assert (claude[0].field, claude[0].key) == (TOOL_FIELD, "Read")
    assert (KIND_FIELD, "reading") in {(d.field, d.key) for d in claude}
    mini = dimensions(load_files([CONVERSATIONS / "mini-swe-agent"]))
    assert [(d.field, d.key) for d in mini] == [
        (KIND_FIELD, "reading"),
        (KIND_FIELD, "running"),
        (KIND_FIELD, "searching"),
    ]
