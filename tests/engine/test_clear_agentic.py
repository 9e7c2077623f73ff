"""Tests for the clear phase (engine/_clear) with agentic messages (docs/behaviour.md §5:
several results in one message)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from reduction_app.engine import ChatModelAgentState, InMemoryBackend
from reduction_app.engine._storage._paths import content_digest
from reduction_app.engine.blocks import (
    AgenticMessage,
    FunctionToolResult,
    ToolResultContent,
    ToolSearchResult,
    UserInputText,
)
from reduction_app.engine.errors import MessageError
from reduction_app.engine.messages import Media
from tests.engine.clear_support import (
    ARGS,
    DROPPED,
    CountingBackend,
    FailingBackend,
    agentic_call,
    agentic_results,
    agentic_text,
    assert_untouched,
    constant,
    exactly,
    middleware,
    snapshot,
    state,
    summary,
)

FLAG = "_reduction_mw_processed"


def placeholder(path: str) -> str:
    return (
        f"<persisted-output>Tool result saved to: {path}\nUse read_file to view</persisted-output>"
    )


def texts(msg: Any) -> list[tuple[str, str]]:
    """``(call_id, text)`` of every result block of ``msg``."""
    return [
        (b.call_id, "".join(c.text for c in b.content))
        for b in msg.content_blocks
        if isinstance(b, FunctionToolResult)
    ]


def tail() -> list[AgenticMessage]:
    return [agentic_call(("keep", "t")), agentic_results(("keep", "kept"))]


def test_clear_agentic_several_results_in_one_message_each_by_call_id() -> None:
    """§5: parallel results in one user message, out of order, each cleared by its id."""
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("a", "t"), ("b", "t")),
        agentic_results(("b", "B result"), ("a", "A result")),
        *tail(),
    ]
    backend = InMemoryBackend()
    mw, events = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert texts(out.messages[2]) == [
        ("b", placeholder("/tmp/clear/b")),
        ("a", placeholder("/tmp/clear/a")),
    ]
    assert backend.files == {"/tmp/clear/a": "A result", "/tmp/clear/b": "B result"}
    assert out.messages[1].extra == {FLAG: True}
    assert out.messages[3:] == msgs[3:]
    assert [e.call_id for e in events if e.kind == "tool"] == ["a", "b"]


def test_clear_agentic_results_spread_over_messages_are_found() -> None:
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("a", "t"), ("b", "t"), ("c", "t")),
        agentic_results(("c", "C")),
        agentic_results(("a", "A"), ("b", "B")),
        *tail(),
    ]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert texts(out.messages[2]) == [("c", placeholder("/tmp/clear/c"))]
    assert texts(out.messages[3]) == [
        ("a", placeholder("/tmp/clear/a")),
        ("b", placeholder("/tmp/clear/b")),
    ]


def test_clear_agentic_result_message_with_user_text_keeps_the_text() -> None:
    mixed = AgenticMessage(
        role="user",
        content_blocks=(
            FunctionToolResult(call_id="a", content=(ToolResultContent(text="A"),)),
            UserInputText(text="and also, hurry"),
        ),
    )
    msgs = [agentic_text("user", "q"), agentic_call(("a", "t")), mixed, *tail()]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content_blocks[1] == UserInputText(text="and also, hurry")
    assert texts(out.messages[2]) == [("a", placeholder("/tmp/clear/a"))]


def test_clear_agentic_scan_stops_at_a_user_message() -> None:
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("a", "t")),
        agentic_text("user", "wait"),
        agentic_results(("a", "A")),
        *tail(),
    ]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert texts(out.messages[3]) == [("a", "A")]
    assert len(backend) == 0


def test_clear_agentic_media_stays_and_offload_is_json() -> None:
    image = Media(url="https://example.com/p.png", mime_type="image/png", base64_data="QUJD")
    result = AgenticMessage(
        role="user",
        content_blocks=(
            FunctionToolResult(
                call_id="a",
                name="t",
                content=(
                    ToolResultContent(text="chart"),
                    ToolResultContent(type="image", media=image),
                ),
            ),
        ),
    )
    msgs = [agentic_text("user", "q"), agentic_call(("a", "t")), result, *tail()]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    block = out.messages[2].content_blocks[0]
    assert block == FunctionToolResult(
        call_id="a",
        name="t",
        content=(
            ToolResultContent(text=placeholder("/tmp/clear/a")),
            ToolResultContent(type="image", media=image),
        ),
    )
    assert json.loads(backend.read("/tmp/clear/a")) == [
        {"type": "text", "text": "chart"},
        {
            "type": "image",
            "image": {
                "url": "https://example.com/p.png",
                "base64_data": "QUJD",
                "mime_type": "image/png",
            },
        },
    ]


def test_clear_agentic_empty_result_content_is_cleared_as_empty_text() -> None:
    """§5: a result block with no content reads as ``[text ""]``."""
    empty = AgenticMessage(role="user", content_blocks=(FunctionToolResult(call_id="a"),))
    msgs = [agentic_text("user", "q"), agentic_call(("a", "t")), empty, *tail()]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert texts(out.messages[2]) == [("a", placeholder("/tmp/clear/a"))]
    assert backend.files == {"/tmp/clear/a": ""}


def test_clear_agentic_tool_search_result_is_not_cleared() -> None:
    search = AgenticMessage(
        role="user",
        content_blocks=(
            ToolSearchResult(call_id="a", result={"tools": ["x"]}),
            FunctionToolResult(call_id="b", content=(ToolResultContent(text="B"),)),
        ),
    )
    msgs = [agentic_text("user", "q"), agentic_call(("a", "search"), ("b", "t")), search, *tail()]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content_blocks[0] == ToolSearchResult(
        call_id="a", result={"tools": ["x"]}
    )
    assert texts(out.messages[2]) == [("b", placeholder("/tmp/clear/b"))]


def test_clear_agentic_reused_id_in_one_message_clears_each_block() -> None:
    """Decision 7: two result blocks for one repeated id go to two files."""
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("dup", "t"), ("dup", "t")),
        agentic_results(("dup", "one"), ("dup", "two")),
        *tail(),
    ]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    two = f"/tmp/clear/dup-{content_digest('two')[:12]}"
    assert texts(out.messages[2]) == [
        ("dup", placeholder("/tmp/clear/dup")),
        ("dup", placeholder(two)),
    ]
    assert backend.files == {"/tmp/clear/dup": "one", two: "two"}


def test_clear_agentic_exclusion_and_flag() -> None:
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("a", "secret"), ("b", "t")),
        agentic_results(("a", "A"), ("b", "B")),
        *tail(),
    ]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1, clear_exclude_tools=["secret"])
    out = mw.before_model_rewrite_state(state(msgs))
    assert texts(out.messages[2]) == [("a", "A"), ("b", placeholder("/tmp/clear/b"))]
    assert out.messages[1].extra == {FLAG: True}
    assert out.messages[1].content_blocks == msgs[1].content_blocks


def test_clear_agentic_twice_with_new_messages_keeps_files_intact() -> None:
    backend = CountingBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    first = mw.before_model_rewrite_state(
        state(
            [
                agentic_text("user", "q"),
                agentic_call(("a", "t")),
                agentic_results(("a", "A")),
                *tail(),
            ]
        )
    )
    stripped = [dataclasses.replace(m, extra={}) for m in first.messages]
    grown = [
        *stripped,
        agentic_text("assistant", "ok"),
        agentic_call(("c", "t")),
        agentic_results(("c", "C")),
    ]
    mw.before_model_rewrite_state(state(grown))
    assert backend.log == [("/tmp/clear/a", "A"), ("/tmp/clear/keep", "kept")]


def test_clear_agentic_caller_untouched_on_failing_write() -> None:
    backend = FailingBackend(fail_on=2)
    mw, events = middleware(backend, max_tokens_for_clear=1)
    s = state(
        [
            agentic_text("user", "q"),
            agentic_call(("a", "t"), ("b", "t")),
            agentic_results(("a", "A"), ("b", "B")),
            *tail(),
        ]
    )
    snap = snapshot(s)
    with pytest.raises(Exception, match=exactly("clear: failed to write /tmp/clear/b: disk full")):
        mw.before_model_rewrite_state(s)
    assert_untouched(s, snap)
    assert events == []


def test_clear_agentic_clear_flow_conformance_case_39() -> None:
    """Case 39 (agentic): no backend, the old result gets the no-offload placeholder."""
    msgs = [
        agentic_text("system", "s"),
        agentic_text("user", "u"),
        agentic_call(("call_old", "get_weather", '{"location":"London"}')),
        agentic_results(("call_old", "Sunny and warm")),
        agentic_text("user", "and now?"),
        agentic_call(("call_new", "get_weather")),
    ]
    mw, _ = middleware(None, max_tokens_for_clear=1, token_counter=constant(10_000))
    out = mw.before_model_rewrite_state(state(msgs))
    assert len(out.messages) == 6
    assert out.messages[2].content_blocks == msgs[2].content_blocks
    assert out.messages[2].extra == {FLAG: True}
    assert texts(out.messages[3]) == [("call_old", DROPPED)]
    assert out.messages[5] == msgs[5]
    assert out.messages[5].content_blocks[0].arguments == ARGS  # type: ignore[union-attr]


def test_clear_agentic_no_rounds_conformance_case_40() -> None:
    msgs = [
        agentic_text("system", "s"),
        agentic_text("user", "u"),
        agentic_text("assistant", "a"),
        agentic_text("user", "u2"),
        agentic_text("assistant", "b"),
    ]
    mw, events = middleware(None, max_tokens_for_clear=250, token_counter=lambda m, t: 100 * len(m))
    s = state(msgs)
    assert mw.before_model_rewrite_state(s) is s
    assert summary(events).reason == "nothing_in_range"


def test_clear_agentic_post_process_conformance_case_40() -> None:
    posts: list[Any] = []
    msgs = [
        agentic_text("user", "u"),
        agentic_call(("a", "t")),
        agentic_results(("a", "A")),
        *tail(),
    ]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=1,
        token_counter=constant(10_000),
        clear_post_process=posts.append,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert posts == [out]


def test_clear_agentic_events_with_the_approx_counter() -> None:
    """The result block renders as ``type: function_tool_result`` plus indented lines; only
    the ``[0]       text: …`` line changes, from 5 to 93 characters of text (+88 → +22
    tokens). The event's token figures are the whole result message's (role "user" 1,
    plus the block), which the pass already counted: 29 → 51."""
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("a", "t")),
        agentic_results(("a", "Sunny")),
        *tail(),
    ]
    mw, events = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    mw.before_model_rewrite_state(state(msgs))
    tool, total = events
    assert (tool.tokens_before, tool.tokens_after, tool.tokens_saved) == (29, 51, -22)
    block_before = (
        "type: function_tool_result\n      call_id: a\n      name: \n"
        "      content: (1 blocks)\n        [0]       text: Sunny\n"
    )
    assert len(block_before) == 113
    # 113 // 4 = 28 → (113 + 88) // 4 = 50: the conversation grows by 22 tokens.
    assert total.tokens_after - total.tokens_before == 22
    assert total.tokens_saved == -22


def test_clear_agentic_unknown_message_is_kept_without_a_rewriter() -> None:
    empty_user = AgenticMessage(role="user")
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("a", "t")),
        agentic_results(("a", "A")),
        empty_user,
        *tail(),
    ]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[3] is empty_user
    assert texts(out.messages[2]) == [("a", placeholder("/tmp/clear/a"))]


def test_clear_agentic_mixed_with_chat_is_a_message_error() -> None:
    from reduction_app.engine.messages import Message

    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    msgs: list[Any] = [agentic_text("user", "q"), Message.user("hi")]
    with pytest.raises(
        MessageError, match=exactly("messages mix chat Message and AgenticMessage values")
    ):
        mw.before_model_rewrite_state(ChatModelAgentState(messages=msgs))
