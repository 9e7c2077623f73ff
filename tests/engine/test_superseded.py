"""Tests for engine/_clear/_superseded.py and the ``clear_superseded`` step of the clear
phase (docs/behaviour.md §4.12).

Counts use the one-token-per-character counter of ``clear_support.chars`` (content plus
arguments; tool names are not counted). Every result is 200 characters and every
offloading placeholder naming ``/tmp/clear/cN`` is 94, so each cleared result frees 106.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from reduction_app.engine import InMemoryBackend
from reduction_app.engine._clear._superseded import (
    EDIT_COMMANDS,
    EDIT_TOOLS,
    FAILED_EDIT_PREFIXES,
    PATH_KEYS,
    READ_TOOLS,
    Readers,
    superseded_calls,
)
from reduction_app.engine.blocks import FunctionToolCall
from reduction_app.engine.config import ReductionConfig, ToolReductionConfig
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.messages import Message
from reduction_app.engine.notices import clear_placeholder, trunc_notice
from reduction_app.engine.tool_io import ClearResult, ToolDetail, ToolOutputPart, ToolResult
from tests.engine.clear_support import (
    agentic_call,
    agentic_results,
    agentic_text,
    applied_summary,
    assert_untouched,
    call_msg,
    chars,
    middleware,
    offload_placeholder,
    snapshot,
    state,
)
from tests.engine.test_clear_properties import (
    CONFIGS,
    SETTINGS,
    Round,
    agentic_conversation,
    chat_conversation,
    check_properties,
    rounds,
    shape,
)

FLAG = "_reduction_mw_processed"
A, B, C, D = "A" * 200, "B" * 200, "C" * 200, "D" * 200
KEEP = ("k", "ls", '{"d": "z"}', "kept")
"""The retained round: 14 tokens."""
READERS = Readers.of("read_file", {})


def conversation(*calls: tuple[str, str, str, str], keep: Any = KEEP) -> list[Message]:
    """``user "q"``, then one round ``(id, tool, arguments, result)`` per call."""
    msgs = [Message.user("q")]
    for call_id, name, arguments, text in (*calls, keep):
        msgs += [call_msg((call_id, name, arguments)), Message.tool(text, call_id)]
    return msgs


def with_results(msgs: list[Message], **texts: str) -> list[Message]:
    """``msgs`` with the results of the given call ids replaced."""
    return [
        dataclasses.replace(m, content=texts[m.tool_call_id])
        if m.role == "tool" and m.tool_call_id in texts
        else m
        for m in msgs
    ]


def flagged(msgs: list[Message], *indexes: int) -> list[Message]:
    return [
        dataclasses.replace(m, extra={FLAG: True}) if i in indexes else m
        for i, m in enumerate(msgs)
    ]


def cleared_event(call_id: str, strategy: str, tool: str = "ls") -> ReductionEvent:
    return ReductionEvent(
        phase="clear",
        kind="tool",
        tool_name=tool,
        call_id=call_id,
        chars_before=200,
        chars_after=94,
        tokens_before=200,
        tokens_after=94,
        tokens_saved=106,
        offload_path=f"/tmp/clear/{call_id}",
        strategy=strategy,
    )


THREE = conversation(
    ("c1", "ls", '{"d": "a"}', A),
    ("c2", "ls", '{"d":"a"}', B),  # the same arguments as c1, spaced otherwise
    ("c3", "ls", '{"d": "b"}', C),
)
"""1 + 210 + 209 + 210 + 14 = 644 tokens; c1 is superseded by c2, nothing else is."""


# --- which results are superseded -------------------------------------------------------------


def test_superseded_calls_same_tool_and_arguments_as_json() -> None:
    assert chars(THREE, []) == 644
    assert superseded_calls(THREE, 1, 7, READERS) == {1: [0]}


def test_superseded_calls_different_arguments_or_tool_are_not_superseded() -> None:
    msgs = conversation(
        ("c1", "ls", '{"d": "a"}', A),
        ("c2", "ls", '{"d": "b"}', B),
        ("c3", "grep", '{"d": "a"}', C),
        ("c4", "ls", "d a", D),
        ("c5", "ls", '"d a"', D),  # JSON never equals raw text, even the same string
    )
    assert superseded_calls(msgs, 1, 11, READERS) == {}


def test_superseded_calls_raw_text_arguments_compare_as_text() -> None:
    msgs = conversation(("c1", "ls", "d a", A), ("c2", "ls", "d a", B), ("c3", "ls", "d  a", C))
    assert superseded_calls(msgs, 1, 7, READERS) == {1: [0]}


def test_superseded_calls_the_superseding_call_may_be_retained() -> None:
    msgs = conversation(("c1", "ls", '{"d": "z"}', A), ("c2", "ls", '{"d": "b"}', B))
    assert superseded_calls(msgs, 1, 5, READERS) == {1: [0]}


def test_superseded_calls_a_later_call_in_the_same_message_counts() -> None:
    msgs = [
        Message.user("q"),
        call_msg(("c1", "ls", "{}"), ("c2", "ls", "{}")),
        Message.tool(A, "c1"),
        Message.tool(B, "c2"),
    ]
    assert superseded_calls(msgs, 1, 4, READERS) == {1: [0]}


def test_superseded_calls_only_a_whole_newer_copy_supersedes() -> None:
    """A later copy that is cleared, truncated or has no result shows nothing."""
    truncated = trunc_notice(
        original_size=300,
        file_path="/tmp/trunc/c2",
        preview_size=5,
        preview_first="AAAAA",
        preview_last="AAAAA",
        read_tool_name="read_file",
    )
    for newer in (offload_placeholder("c2"), truncated):
        msgs = conversation(("c1", "ls", "{}", A), ("c2", "ls", "{}", newer))
        assert superseded_calls(msgs, 1, 5, READERS) == {}, newer
    unanswered = [*conversation(("c1", "ls", "{}", A)), call_msg(("c2", "ls", "{}"))]
    assert superseded_calls(unanswered, 1, 3, READERS) == {}


def test_superseded_calls_leave_flagged_and_cleared_results_out() -> None:
    msgs = conversation(("c1", "ls", "{}", A), ("c2", "ls", "{}", B), ("c3", "ls", "{}", C))
    msgs = with_results(flagged(msgs, 1), c2=offload_placeholder("c2"))
    assert superseded_calls(msgs, 1, 7, READERS) == {}


def test_superseded_calls_a_later_whole_read_of_the_same_file() -> None:
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.py", "limit": 5}', A),
        ("c2", "str_replace_editor", '{"command": "view", "path": "b.py"}', B),
        ("c3", "cat", '{"filename": "b.py"}', C),
        ("c4", "view_file", '{"file_path": "a.py"}', D),
    )
    assert superseded_calls(msgs, 1, 9, READERS) == {1: [0], 3: [0]}


def test_superseded_calls_a_partial_read_supersedes_no_read() -> None:
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.py"}', A),
        ("c2", "read_file", '{"path": "a.py", "offset": 10}', B),
        ("c3", "str_replace_editor", '{"command": "view", "path": "a.py", "view_range": [1]}', C),
        ("c4", "Read", '{"file_path": "a.py", "offset": 1, "limit": 9}', D),
    )
    assert superseded_calls(msgs, 1, 9, READERS) == {}


def test_superseded_calls_read_tools_are_configurable() -> None:
    msgs = conversation(
        ("c1", "fetch_doc", '{"path": "a.md"}', A),
        ("c2", "fetch_doc", '{"path": "a.md", "v": 2}', B),  # not whole: supersedes nothing
        ("c3", "cat_file", '{"path": "b.md", "v": 1}', C),
        ("c4", "cat_file", '{"path": "b.md"}', D),
        ("c5", "read_file", '{"path": "c.md", "v": 1}', A),
        ("c6", "read_file", '{"path": "c.md"}', B),
    )
    assert superseded_calls(msgs, 1, 13, READERS) == {9: [0]}
    entries = {
        "fetch_doc": ToolReductionConfig(reads_files=True),
        "read_file": ToolReductionConfig(reads_files=False),
    }
    readers = Readers.of("cat_file", entries)
    assert readers == Readers(
        tools=frozenset({"fetch_doc", "cat_file", "view_file", "open_file", "cat", "Read"}),
        never=frozenset({"read_file"}),
    )
    assert superseded_calls(msgs, 1, 13, readers) == {5: [0]}
    msgs[3] = call_msg(("c2", "fetch_doc", '{"filename": "a.md"}'))
    assert superseded_calls(msgs, 1, 13, READERS) == {9: [0]}
    assert superseded_calls(msgs, 1, 13, readers) == {1: [0], 5: [0]}


# --- reads of a file edited since -------------------------------------------------------------

EDIT = '{"path": "a.py", "old_str": "x", "new_str": "y"}'
"""The arguments of an edit of ``a.py``."""


def test_superseded_calls_a_read_then_an_edit_of_the_file() -> None:
    """The read is cleared; the edit's own result never is."""
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.py"}', A),
        ("c2", "edit_file", EDIT, B),
    )
    assert superseded_calls(msgs, 1, 5, READERS) == {1: [0]}


def test_superseded_calls_an_edit_then_a_read_supersedes_nothing() -> None:
    msgs = conversation(
        ("c1", "edit_file", EDIT, A),
        ("c2", "read_file", '{"path": "a.py"}', B),
    )
    assert superseded_calls(msgs, 1, 5, READERS) == {}


def test_superseded_calls_a_partial_read_then_an_edit() -> None:
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.py", "offset": 10}', A),
        ("c2", "str_replace_editor", '{"command": "view", "path": "a.py", "view_range": [1]}', B),
        ("c3", "write_file", '{"path": "a.py", "content": "new"}', C),
    )
    assert superseded_calls(msgs, 1, 7, READERS) == {1: [0], 3: [0]}


def test_superseded_calls_an_edit_of_another_file_keeps_the_read() -> None:
    """Paths compare as given: ``./a.py`` is another file."""
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.py"}', A),
        ("c2", "edit_file", '{"path": "b.py", "old_str": "x"}', B),
        ("c3", "edit_file", '{"path": "./a.py", "old_str": "x"}', C),
        ("c4", "edit_file", '{"file_path": "a.py", "path": "a.py"}', D),  # names two: none
    )
    assert superseded_calls(msgs, 1, 9, READERS) == {}


def test_superseded_calls_an_edit_keeps_its_own_result() -> None:
    """Edits are not reads: a later edit of the same file clears no earlier edit."""
    msgs = conversation(
        ("c1", "edit_file", EDIT, A),
        ("c2", "str_replace_editor", '{"command": "create", "path": "a.py", "file_text": ""}', B),
        ("c3", "write_file", '{"path": "a.py", "content": "new"}', C),
    )
    assert superseded_calls(msgs, 1, 7, READERS) == {}


def test_superseded_calls_an_edit_later_in_the_same_message() -> None:
    read = ("c1", "read_file", '{"path": "a.py"}')
    change = ("c2", "edit_file", EDIT)
    for calls, expected in (((read, change), {1: [0]}), ((change, read), {})):
        msgs = [Message.user("q"), call_msg(*calls), Message.tool(A, "c1"), Message.tool(B, "c2")]
        assert superseded_calls(msgs, 1, 4, READERS) == expected


def test_superseded_calls_text_editor_view_then_an_edit_command() -> None:
    """OpenHands' and SWE-agent's ``str_replace_editor``, Anthropic's
    ``str_replace_based_edit_tool``: create, str_replace, insert and undo_edit edit."""
    view = '{"command": "view", "path": "/r/a.py"}'
    for tool in ("str_replace_editor", "str_replace_based_edit_tool"):
        for command in ("create", "str_replace", "insert", "undo_edit"):
            arguments = f'{{"command": "{command}", "path": "/r/a.py", "new_str": "y"}}'
            msgs = conversation(("c1", tool, view, A), ("c2", tool, arguments, B))
            assert superseded_calls(msgs, 1, 5, READERS) == {1: [0]}, (tool, command)
        for command in ("view", "delete"):  # a view is a read; an unknown command is neither
            arguments = f'{{"command": "{command}", "path": "/r/a.py", "view_range": [1, 9]}}'
            msgs = conversation(("c1", tool, view, A), ("c2", tool, arguments, B))
            assert superseded_calls(msgs, 1, 5, READERS) == {}, (tool, command)


def test_superseded_calls_claude_code_read_then_edit() -> None:
    """Claude Code's ``Read`` reads (the whole file with ``file_path`` alone, part of it
    with ``offset`` or ``limit``); its ``Edit``, ``MultiEdit`` and ``Write`` edit."""
    whole = '{"file_path": "/p/a.py"}'
    part = '{"file_path": "/p/a.py", "offset": 40, "limit": 20}'
    edits = (
        ("Edit", '{"file_path": "/p/a.py", "old_string": "x", "new_string": "y"}'),
        ("MultiEdit", '{"file_path": "/p/a.py", "edits": [{"old_string": "x"}]}'),
        ("Write", '{"file_path": "/p/a.py", "content": "z"}'),
    )
    for name, arguments in edits:
        for read in (whole, part):
            msgs = conversation(("c1", "Read", read, A), ("c2", name, arguments, B))
            assert superseded_calls(msgs, 1, 5, READERS) == {1: [0]}, (name, read)
    msgs = conversation(("c1", "Read", part, A), ("c2", "Read", whole, B))
    assert superseded_calls(msgs, 1, 5, READERS) == {1: [0]}


def test_superseded_calls_an_edit_needs_a_result_that_does_not_say_it_failed() -> None:
    """An edit with no result supersedes nothing; a cleared or truncated result is still
    the edit's result, so it does; one saying the edit failed changed nothing."""
    unanswered = [
        *conversation(("c1", "read_file", '{"path": "a.py"}', A)),
        call_msg(("c2", "edit_file", EDIT)),
    ]
    assert superseded_calls(unanswered, 1, 3, READERS) == {}
    truncated = trunc_notice(
        original_size=300,
        file_path="/tmp/trunc/c2",
        preview_size=5,
        preview_first="BBBBB",
        preview_last="BBBBB",
        read_tool_name="read_file",
    )
    for result in (offload_placeholder("c2"), truncated, "Replaced. ERROR: none"):
        msgs = conversation(
            ("c1", "read_file", '{"path": "a.py"}', A), ("c2", "edit_file", EDIT, result)
        )
        assert superseded_calls(msgs, 1, 5, READERS) == {1: [0]}, result
    failed = (
        "ERROR:\nNo replacement was performed, old_str `x` did not appear verbatim in a.py.",
        "  <tool_use_error>File has not been read yet.</tool_use_error>",
    )
    for result in failed:
        msgs = conversation(
            ("c1", "read_file", '{"path": "a.py"}', A), ("c2", "edit_file", EDIT, result)
        )
        assert superseded_calls(msgs, 1, 5, READERS) == {}, result


def test_superseded_calls_edit_tools_are_configurable() -> None:
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.md"}', A),
        ("c2", "edit_file", '{"path": "a.md", "old_str": "x"}', B),
        ("c3", "read_file", '{"path": "b.md", "offset": 1}', C),
        ("c4", "str_replace_editor", '{"command": "insert", "path": "b.md"}', D),
        ("c5", "read_file", '{"path": "c.md", "offset": 1}', A),
        ("c6", "save_doc", '{"path": "c.md", "text": "new"}', B),
    )
    assert superseded_calls(msgs, 1, 13, READERS) == {1: [0], 5: [0]}
    entries = {
        "edit_file": ToolReductionConfig(edits_files=False),
        "str_replace_editor": ToolReductionConfig(edits_files=False),
        "save_doc": ToolReductionConfig(edits_files=True),
    }
    readers = Readers.of("read_file", entries)
    assert readers == Readers(
        tools=frozenset({"read_file", "view_file", "open_file", "cat", "Read"}),
        never=frozenset(),
        edit_tools=frozenset(
            {"write_file", "create_file", "Write", "Edit", "MultiEdit", "save_doc"}
        ),
        never_edit=frozenset({"edit_file", "str_replace_editor"}),
    )
    assert superseded_calls(msgs, 1, 13, readers) == {9: [0]}


def test_superseded_calls_agentic_read_then_edit() -> None:
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("c1", "str_replace_editor", '{"command": "view", "path": "a.py"}')),
        agentic_results(("c1", A)),
        agentic_call(("c2", "str_replace_editor", '{"command": "str_replace", "path": "a.py"}')),
        agentic_results(("c2", B)),
    ]
    assert superseded_calls(msgs, 1, 5, READERS) == {1: [0]}


# --- the clear pass ---------------------------------------------------------------------------


def test_clear_superseded_stops_once_under_the_threshold() -> None:
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=540, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(THREE))
    # 644 - 106 = 538: at or under 540, so c2 and c3 stay whole and nothing is flagged.
    assert list(out.messages) == with_results(THREE, c1=offload_placeholder("c1"))
    assert backend.files == {"/tmp/clear/c1": A}
    assert events == [cleared_event("c1", "superseded"), applied_summary(644, 538, 1, 540)]


def test_clear_superseded_goes_on_like_the_reference_when_still_over() -> None:
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=500, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(THREE))
    cleared = with_results(
        THREE,
        c1=offload_placeholder("c1"),
        c2=offload_placeholder("c2"),
        c3=offload_placeholder("c3"),
    )
    assert list(out.messages) == flagged(cleared, 1, 3, 5)
    assert backend.files == {"/tmp/clear/c1": A, "/tmp/clear/c2": B, "/tmp/clear/c3": C}
    assert events == [
        cleared_event("c1", "superseded"),
        cleared_event("c2", ""),
        cleared_event("c3", ""),
        applied_summary(644, 326, 3, 500),
    ]


def test_clear_superseded_is_off_by_default_and_then_the_reference() -> None:
    assert ReductionConfig().clear_superseded is False
    backend = InMemoryBackend()
    mw, events = middleware(backend, token_counter=chars, max_tokens_for_clear=540)
    out = mw.before_model_rewrite_state(state(THREE))
    cleared = with_results(
        THREE,
        c1=offload_placeholder("c1"),
        c2=offload_placeholder("c2"),
        c3=offload_placeholder("c3"),
    )
    assert list(out.messages) == flagged(cleared, 1, 3, 5)
    assert [e.strategy for e in events] == ["", "", "", ""]
    assert events[-1] == applied_summary(644, 326, 3, 540)


def test_clear_superseded_with_nothing_superseded_is_the_reference() -> None:
    msgs = conversation(("c1", "ls", '{"d": "a"}', A), ("c2", "ls", '{"d": "b"}', B))
    outputs = []
    for on in (False, True):
        mw, events = middleware(
            InMemoryBackend(), token_counter=chars, max_tokens_for_clear=400, clear_superseded=on
        )
        outputs.append((mw.before_model_rewrite_state(state(msgs)).messages, events))
    assert outputs[0] == outputs[1]


def test_clear_superseded_by_a_retained_round() -> None:
    msgs = conversation(("c1", "ls", '{"d": "z"}', A), ("c2", "ls", '{"d": "b"}', B))
    mw, events = middleware(
        InMemoryBackend(), token_counter=chars, max_tokens_for_clear=430, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == with_results(msgs, c1=offload_placeholder("c1"))
    assert events == [cleared_event("c1", "superseded"), applied_summary(435, 329, 1, 430)]


def test_clear_superseded_by_a_later_read_of_the_file() -> None:
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.py", "limit": 5}', A),
        ("c2", "str_replace_editor", '{"command": "view", "path": "a.py"}', B),
    )
    mw, events = middleware(
        InMemoryBackend(), token_counter=chars, max_tokens_for_clear=470, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == with_results(msgs, c1=offload_placeholder("c1"))
    assert events[0] == cleared_event("c1", "superseded", tool="read_file")
    assert events[1] == applied_summary(1 + 228 + 235 + 14, 372, 1, 470)


def test_clear_superseded_leaves_excluded_tools_and_own_handlers_alone() -> None:
    """An excluded tool is never cleared; a tool with its own clear handler is left to the
    reference's step, which this pass never reaches."""
    called: list[str] = []

    def handler(detail: ToolDetail) -> ClearResult:
        called.append(detail.tool_context.call_id)
        gone = ToolResult(parts=(ToolOutputPart(type="text", text="gone"),))
        return ClearResult(need_clear=True, tool_argument=detail.tool_argument, tool_result=gone)

    msgs = conversation(
        ("c1", "grep", '{"d": "a"}', A),
        ("c2", "grep", '{"d": "a"}', B),
        ("c3", "own", '{"d": "a"}', C),
        ("c4", "own", '{"d": "a"}', D),
        ("c5", "ls", '{"d": "a"}', A),
        ("c6", "ls", '{"d": "a"}', B),
    )
    assert chars(msgs, []) == 1275
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=1170,
        clear_superseded=True,
        clear_exclude_tools=("grep",),
        tool_config={"own": ToolReductionConfig(clear_handler=handler)},
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == with_results(msgs, c5=offload_placeholder("c5"))
    assert called == []
    assert events == [cleared_event("c5", "superseded"), applied_summary(1275, 1169, 1, 1170)]


def test_clear_superseded_clear_at_least_tokens_judges_the_whole_pass() -> None:
    """The superseded step frees 106: short of 107, the pass goes on (and frees 318); short
    of 400 in all, nothing is applied."""
    backend = InMemoryBackend()
    mw, events = middleware(
        backend,
        token_counter=chars,
        max_tokens_for_clear=540,
        clear_at_least_tokens=107,
        clear_superseded=True,
    )
    out = mw.before_model_rewrite_state(state(THREE))
    assert [e.strategy for e in events] == ["superseded", "", "", ""]
    assert events[-1] == applied_summary(644, 326, 3, 540)
    assert len(backend.files) == 3 and out.messages[2].content == offload_placeholder("c1")

    backend = InMemoryBackend()
    mw, events = middleware(
        backend,
        token_counter=chars,
        max_tokens_for_clear=540,
        clear_at_least_tokens=400,
        clear_superseded=True,
    )
    s = state(THREE)
    assert mw.before_model_rewrite_state(s) is s
    assert backend.files == {}
    assert [e.reason for e in events] == ["below_clear_at_least_tokens"]


def test_clear_superseded_loses_nothing_and_runs_idempotently() -> None:
    """The caller's state is untouched, calls keep their results, every cleared result's
    file holds its original, and a second pass (flags or not) changes nothing."""
    for threshold in (540, 500):
        backend = InMemoryBackend()
        mw, _ = middleware(
            backend, token_counter=chars, max_tokens_for_clear=threshold, clear_superseded=True
        )
        s = state(THREE)
        snap = snapshot(s)
        out = mw.before_model_rewrite_state(s)
        assert_untouched(s, snap)
        assert shape(list(out.messages)) == shape(THREE)
        for before, after in zip(THREE, out.messages, strict=True):
            if after.content != before.content:
                assert after.content == offload_placeholder(before.tool_call_id)
                assert backend.read(f"/tmp/clear/{before.tool_call_id}") == before.content
        files = backend.files
        again = mw.before_model_rewrite_state(out)
        assert list(again.messages) == list(out.messages)
        unflagged = [dataclasses.replace(m, extra={}) for m in out.messages]
        fresh, _ = middleware(
            backend, token_counter=chars, max_tokens_for_clear=threshold, clear_superseded=True
        )
        wire = fresh.before_model_rewrite_state(state(unflagged))
        assert [m.content for m in wire.messages] == [m.content for m in out.messages]
        assert backend.files == files


def test_clear_superseded_agentic_parallel_results() -> None:
    """Two identical calls in one message, answered in one message: the first is
    superseded by the second, and only its block changes."""
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("c1", "ls", '{"d": "a"}'), ("c2", "ls", '{"d": "a"}')),
        agentic_results(("c1", A), ("c2", B)),
        agentic_call(KEEP[:3]),
        agentic_results((KEEP[0], KEEP[3])),
    ]
    assert chars(msgs, []) == 435
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=430, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    expected = agentic_results(("c1", offload_placeholder("c1")), ("c2", B))
    assert list(out.messages) == [*msgs[:2], expected, *msgs[3:]]
    assert backend.files == {"/tmp/clear/c1": A}
    assert events == [cleared_event("c1", "superseded"), applied_summary(435, 329, 1, 430)]


def test_clear_superseded_agentic_falls_through() -> None:
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("c1", "ls", '{"d": "a"}')),
        agentic_results(("c1", A)),
        agentic_call(("c2", "ls", '{"d": "a"}')),
        agentic_results(("c2", B)),
        agentic_call(KEEP[:3]),
        agentic_results((KEEP[0], KEEP[3])),
    ]
    mw, events = middleware(
        InMemoryBackend(), token_counter=chars, max_tokens_for_clear=300, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert [e.strategy for e in events if e.kind == "tool"] == ["superseded", ""]
    assert out.messages[4] == agentic_results(("c2", offload_placeholder("c2")))
    assert [m.extra for m in out.messages] == [{}, {FLAG: True}, {}, {FLAG: True}, {}, {}, {}]


def test_clear_superseded_async_twin_gives_the_same() -> None:
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=540, clear_superseded=True
    )
    out = asyncio.run(mw.abefore_model_rewrite_state(state(THREE)))
    assert list(out.messages) == with_results(THREE, c1=offload_placeholder("c1"))
    assert events == [cleared_event("c1", "superseded"), applied_summary(644, 538, 1, 540)]


def test_clear_superseded_clears_a_read_of_a_file_edited_since() -> None:
    """Nothing is lost (the offload holds the read), every call keeps its result, the
    edit's result stays whole, and a second pass changes nothing."""
    msgs = conversation(
        ("c1", "read_file", '{"path": "a.py"}', A),
        ("c2", "edit_file", EDIT, B),
    )
    assert chars(msgs, []) == 1 + 216 + 248 + 14
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=400, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == with_results(msgs, c1=offload_placeholder("c1"))
    assert shape(list(out.messages)) == shape(msgs)
    assert backend.files == {"/tmp/clear/c1": A}
    assert events == [
        cleared_event("c1", "superseded", tool="read_file"),
        applied_summary(479, 373, 1, 400),
    ]
    again = mw.before_model_rewrite_state(out)
    assert list(again.messages) == list(out.messages)
    assert backend.files == {"/tmp/clear/c1": A}


def test_clear_superseded_agentic_read_of_a_file_edited_in_a_retained_round() -> None:
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("c1", "Read", '{"file_path": "a.py"}')),
        agentic_results(("c1", A)),
        agentic_call(("c2", "Edit", '{"file_path": "a.py"}')),
        agentic_results(("c2", "ok")),
    ]
    assert chars(msgs, []) == 1 + 21 + 200 + 21 + 2
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=200, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == [
        *msgs[:2],
        agentic_results(("c1", offload_placeholder("c1"))),
        *msgs[3:],
    ]
    assert shape(list(out.messages)) == shape(msgs)
    assert backend.files == {"/tmp/clear/c1": A}
    assert events == [
        cleared_event("c1", "superseded", tool="Read"),
        applied_summary(245, 139, 1, 200),
    ]


# --- properties -------------------------------------------------------------------------------

# Every call of these conversations has the same arguments, so every result but a tool's
# last is superseded.


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_superseded_properties_chat(rs: list[Round], config: dict[str, Any]) -> None:
    check_properties(chat_conversation(rs), {**config, "clear_superseded": True})


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_superseded_properties_agentic(rs: list[Round], config: dict[str, Any]) -> None:
    check_properties(agentic_conversation(rs), {**config, "clear_superseded": True})


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_superseded_properties_with_digest_placeholders(
    rs: list[Round], config: dict[str, Any]
) -> None:
    """With ``clear_digest_tokens`` too: placeholders with digests are recognised as cleared."""
    settings = {**config, "clear_superseded": True, "clear_digest_tokens": 8}
    check_properties(chat_conversation(rs), settings)


FILE_CALLS = {
    "t": ("t", "{}"),
    "u": ("u", '{"path": "a.py"}'),
    "read a": ("read_file", '{"path": "a.py"}'),
    "read part of a": ("read_file", '{"path": "a.py", "offset": 5}'),
    "edit a": ("edit_file", '{"path": "a.py", "old_str": "x"}'),
    "view b": ("str_replace_editor", '{"command": "view", "path": "b.py"}'),
    "edit b": ("str_replace_editor", '{"command": "str_replace", "path": "b.py"}'),
    "Read b": ("Read", '{"file_path": "b.py", "limit": 9}'),
    "Edit b": ("Edit", '{"file_path": "b.py", "old_string": "x"}'),
}
"""Calls that read and edit two files, by a key the random rounds name them with."""


@st.composite
def file_rounds(draw: st.DrawFn) -> list[Round]:
    """:func:`rounds` whose calls are :data:`FILE_CALLS` keys."""
    return [
        dataclasses.replace(
            r,
            calls=[
                (cid, draw(st.sampled_from(list(FILE_CALLS))), text) for cid, _, text in r.calls
            ],
        )
        for r in draw(rounds())
    ]


def file_calls(msgs: list[Any]) -> list[Any]:
    """``msgs`` with each call's key replaced by the :data:`FILE_CALLS` tool and arguments."""
    out: list[Any] = []
    for m in msgs:
        if isinstance(m, Message):
            calls = tuple(
                dataclasses.replace(
                    tc, name=FILE_CALLS[tc.name][0], arguments=FILE_CALLS[tc.name][1]
                )
                for tc in m.tool_calls
            )
            out.append(dataclasses.replace(m, tool_calls=calls))
        else:
            blocks = tuple(
                dataclasses.replace(b, name=FILE_CALLS[b.name][0], arguments=FILE_CALLS[b.name][1])
                if isinstance(b, FunctionToolCall)
                else b
                for b in m.content_blocks
            )
            out.append(dataclasses.replace(m, content_blocks=blocks))
    return out


@SETTINGS
@given(rs=file_rounds(), config=CONFIGS)
def test_clear_superseded_properties_with_reads_and_edits_chat(
    rs: list[Round], config: dict[str, Any]
) -> None:
    """Reads superseded by later reads or edits of the same file, among other calls."""
    check_properties(file_calls(chat_conversation(rs)), {**config, "clear_superseded": True})


@SETTINGS
@given(rs=file_rounds(), config=CONFIGS)
def test_clear_superseded_properties_with_reads_and_edits_agentic(
    rs: list[Round], config: dict[str, Any]
) -> None:
    check_properties(file_calls(agentic_conversation(rs)), {**config, "clear_superseded": True})


def test_clear_superseded_truncated_result_points_at_its_truncation_file() -> None:
    """A superseded result that was truncated gets a placeholder naming its truncation
    file, and nothing new is written (decision 5)."""
    truncated = trunc_notice(
        original_size=300,
        file_path="/tmp/trunc/c1",
        preview_size=5,
        preview_first="AAAAA",
        preview_last="AAAAA",
        read_tool_name="read_file",
    )
    msgs = conversation(("c1", "ls", "{}", truncated), ("c2", "ls", "{}", B))
    assert chars(msgs, []) == 1 + 173 + 202 + 14
    backend = InMemoryBackend()
    # 390 - 171 + 94 = 313: the pass stops there, so c2 stays whole.
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=313, clear_superseded=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == clear_placeholder(
        file_path="/tmp/trunc/c1", read_tool_name="read_file"
    )
    assert out.messages[4].content == B
    assert backend.files == {}
    assert [(e.strategy, e.offload_path) for e in events if e.kind == "tool"] == [
        ("superseded", "/tmp/trunc/c1")
    ]


def _contract_names(after: str, until: str) -> list[str]:
    """The code names docs/behaviour.md §4.12 lists between two phrases of its text."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "behaviour.md").read_text("utf-8")
    section = page.split("### §4.12 ", 1)[1].split("\n### ", 1)[0]
    text = " ".join(section.split())
    return re.findall(r"`([^`]+)`", text.split(after, 1)[1].split(until, 1)[0])


def test_superseded_names_are_those_the_contract_lists() -> None:
    """The tools, commands, arguments and failure marks of the rule are written once in
    the code; the contract's lists are held to them."""
    reads = _contract_names("its tool reads files (", "the configured")
    edits = _contract_names("its tool edits files (", "or a tool whose")
    commands = _contract_names('`"command"` is ', "(the edits")
    keys = _contract_names("in exactly one of", "Paths compare")
    failed = _contract_names("the edit failed:", "changed nothing")
    assert set(reads) == READ_TOOLS
    assert set(edits) == EDIT_TOOLS
    assert set(commands) == EDIT_COMMANDS
    assert tuple(keys) == PATH_KEYS
    assert tuple(failed) == FAILED_EDIT_PREFIXES
