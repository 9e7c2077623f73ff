"""SWE-agent's keep-last-N observations, rebuilt from the engine's knobs."""

from __future__ import annotations

import json
from io import StringIO

import pytest

from reduction_app.engine import Message
from simulator.calibration import STRATEGY_RUNS, Shipped, check_strategy
from simulator.cli import main
from simulator.recording import RecordedConversation
from simulator.replay import replay
from simulator.strategies import (
    elided_observation,
    keep_last_observations,
    strategy_config,
    tool_names,
)
from tests.conftest import CONVERSATIONS, needs_recordings
from tests.simulator.cases import ENGINE, call, result


def _three_reads() -> RecordedConversation:
    return RecordedConversation(
        "reads",
        [
            Message.system("s"),
            Message.user("go"),
            call("c1", '{"path": "a"}'),
            result("c1", "a\n" * 30),
            call("c2", '{"path": "b"}', name="ls"),
            result("c2", "b\n" * 20, name="ls"),
            call("c3", '{"path": "c"}'),
            result("c3", "c\n" * 10),
            Message.assistant("done"),
        ],
    )


def test_elided_observation_counts_lines() -> None:
    assert elided_observation("a\nb\nc\n") == "Old environment output: (3 lines omitted)"


def test_keep_last_observations_with_the_engine_by_hand() -> None:
    """Keep the last one: before the final answer, c1's and c2's results are elided."""
    conv = _three_reads()
    config = strategy_config({"keep_last_observations": 1}, tool_names(conv.messages))
    assert sorted(config.tool_config) == ["ls", "read_file"]
    r = replay(conv, config, pricing=ENGINE, contexts={3})
    last = r.contexts[3]
    assert [m.content for m in last if m.role == "tool"] == [
        "Old environment output: (30 lines omitted)",
        "Old environment output: (20 lines omitted)",
        "c\n" * 10,
    ]
    direct = keep_last_observations(list(conv.messages[:8]), 1)
    assert [m.content for m in last] == [m.content for m in direct]


@needs_recordings
@pytest.mark.parametrize("item", STRATEGY_RUNS, ids=lambda i: i.path)
def test_strategy_engine_agrees_with_swe_agents_rule_on_every_call(item: Shipped) -> None:
    check = check_strategy(CONVERSATIONS, item)
    assert check.engine == check.direct
    assert sum(check.engine) <= check.full_history


@needs_recordings
def test_strategy_elides_on_the_longer_runs() -> None:
    checks = {i.path: check_strategy(CONVERSATIONS, i) for i in STRATEGY_RUNS}
    pydicom = checks["swe-agent/gpt4-pydicom-1458.traj"]
    assert (pydicom.full_history, sum(pydicom.engine)) == (123_688, 117_177)
    recorded = checks["swe-agent/gpt-4o-test-repo-1c2844.traj"]
    assert recorded.strategy == {"keep_last_observations": 5}  # read from its replay_config


def test_strategy_config_refuses_unknown_strategies() -> None:
    with pytest.raises(ValueError) as info:
        strategy_config({"summarise": True}, ["ls"])
    assert str(info.value) == (
        "unknown strategy {'summarise': True}; known: keep_last_observations"
    )


@needs_recordings
def test_cli_calibrate_prints_both_tables_and_json() -> None:
    out, err = StringIO(), StringIO()
    assert main(["calibrate"], out=out, err=err) == 0, err.getvalue()
    text = out.getvalue()
    assert "| **all** | | | 86 | 559,124 |" in text
    assert text.count("every call") == len(STRATEGY_RUNS)
    out = StringIO()
    assert main(["calibrate", "--json"], out=out, err=err) == 0
    data = json.loads(out.getvalue())
    assert len(data["calibration"]) == 6 and len(data["strategies"]) == 4
