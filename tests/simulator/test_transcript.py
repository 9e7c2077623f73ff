"""Stable ids, call identity and model-visible equality of recorded messages."""

from __future__ import annotations

import dataclasses

from reduction_app.engine import (
    PROCESSED_FLAG,
    AgenticMessage,
    FunctionToolCall,
    FunctionToolResult,
    Message,
    ToolResultContent,
)
from simulator.transcript import call_key, result_blocks, unflagged, with_stable_ids
from tests.simulator.cases import call, result


def test_call_key_json_arguments_in_any_key_order() -> None:
    assert call_key("read", '{"b": 1, "a": [1, 2]}') == call_key("read", '{"a":[1,2],"b":1}')
    assert call_key("read", '{"a": 1}') == ("read", '{"a": 1}')
    assert call_key("read", '{"a": 1}') != call_key("grep", '{"a": 1}')


def test_call_key_non_json_arguments_stay_raw() -> None:
    assert call_key("run", "ls -l") == ("run", "ls -l")
    assert call_key("run", "") == ("run", "")


def test_with_stable_ids_chat() -> None:
    messages = [
        Message.user("go"),
        call("", "{}"),
        result("", "one"),
        call("kept", "{}"),
        result("kept", "two"),
        result("", "orphan"),
    ]
    out = with_stable_ids(messages)
    assert out[1].tool_calls[0].id == "sim-1-0"
    assert out[2].tool_call_id == "sim-1-0"
    assert out[3] is messages[3] and out[4] is messages[4]
    assert out[5].tool_call_id == "sim-5"
    assert with_stable_ids(messages) == out


def test_with_stable_ids_agentic() -> None:
    messages = [
        AgenticMessage(
            role="assistant",
            content_blocks=(
                FunctionToolCall(call_id="", name="ls"),
                FunctionToolCall(call_id="x", name="ls"),
            ),
        ),
        AgenticMessage(
            role="user",
            content_blocks=(
                FunctionToolResult(call_id="", name="ls"),
                FunctionToolResult(call_id="x", name="ls"),
            ),
        ),
    ]
    out = with_stable_ids(messages)
    assert [b.call_id for b in out[0].content_blocks] == ["sim-0-0", "x"]
    assert [b.call_id for b in out[1].content_blocks] == ["sim-0-0", "x"]


def test_unflagged_removes_only_the_processed_flag() -> None:
    msg = call("c1", "{}")
    assert unflagged(msg) is msg
    flagged = dataclasses.replace(msg, extra={PROCESSED_FLAG: True, "k": 1})
    assert unflagged(flagged).extra == {"k": 1}


def test_result_blocks_numbers_reused_ids() -> None:
    text = (ToolResultContent(text="t"),)
    msg = AgenticMessage(
        role="user",
        content_blocks=(
            FunctionToolResult(call_id="a", name="ls", content=text),
            FunctionToolResult(call_id="b", name="ls", content=text),
            FunctionToolResult(call_id="a", name="ls", content=text),
        ),
    )
    assert [(n, b.call_id) for n, b in result_blocks(msg)] == [(0, "a"), (0, "b"), (1, "a")]
