"""Tests for the clear phase (engine/_clear) with chat messages (docs/behaviour.md §4, §8 and
the decisions)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import pytest

from reduction_app.engine import ChatModelAgentState, InMemoryBackend, default_clear_handler
from reduction_app.engine._storage._paths import content_digest
from reduction_app.engine.config import ToolReductionConfig
from reduction_app.engine.errors import MessageError, NoBackendError, OffloadError, ReductionError
from reduction_app.engine.messages import Media, Message, MessagePart, ToolCall, ToolInfo
from reduction_app.engine.notices import get_language, set_language
from reduction_app.engine.tool_io import (
    ClearResult,
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolResult,
)
from tests.engine.clear_support import (
    ARGS,
    DROPPED,
    ID1,
    ID2,
    PLACEHOLDER_ID1,
    CountingBackend,
    FailingBackend,
    agentic_text,
    assert_untouched,
    c2,
    call_msg,
    chars,
    constant,
    containing,
    exactly,
    middleware,
    snapshot,
    starting,
    state,
    summary,
    tau_bench_traj,
)

FLAG = "_reduction_mw_processed"


def placeholder(path: str, read_tool: str = "read_file") -> str:
    return (
        f"<persisted-output>Tool result saved to: {path}\n"
        f"Use {read_tool} to view</persisted-output>"
    )


def zh_placeholder(path: str) -> str:
    return f"<persisted-output>工具结果已保存至: {path}\n使用 read_file 进行查看</persisted-output>"


def rounds(*results: tuple[str, str, str], tail: bool = True) -> list[Message]:
    """``user, (A(id, name), T(text))...`` plus a final round that retention keeps."""
    msgs: list[Message] = [Message.user("q")]
    for call_id, name, text in results:
        msgs += [call_msg((call_id, name)), Message.tool(text, call_id)]
    if tail:
        msgs += [call_msg(("keep", "get_weather")), Message.tool("kept", "keep")]
    return msgs


@pytest.fixture
def restore_language() -> Iterator[None]:
    saved = get_language()
    yield
    set_language(saved)


# --- trigger (§4.2, decision 2) --------------------------------------------------------------


def test_clear_at_threshold_returns_same_state() -> None:
    """Case 23 read through decision 2: 69 tokens with max 69 is not over the limit."""
    backend = InMemoryBackend()
    mw, events = middleware(backend, max_tokens_for_clear=69)
    s = state(c2())
    assert mw.before_model_rewrite_state(s) is s
    assert len(backend) == 0
    assert events == [
        dataclasses.replace(
            summary(events), reason="below_threshold", tokens_before=69, tokens_after=69
        )
    ]
    assert summary(events).threshold == 69
    assert summary(events).applied is False


def test_clear_triggers_strictly_above_threshold() -> None:
    mw, events = middleware(InMemoryBackend(), max_tokens_for_clear=68)
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == PLACEHOLDER_ID1
    assert summary(events).reason == "applied"


# --- skip_clear (decision 3) ------------------------------------------------------------------


def test_clear_skip_clear_returns_the_same_state_untouched() -> None:
    """Decision 3: no counting, no rewriter, no flags, no post-process, no events."""
    called: list[str] = []

    def counter(messages: Any, tools: Any) -> int:
        called.append("counter")
        return 1000

    def rewriter(msg: Any, window: Any) -> list[Any]:
        called.append("rewriter")
        return []

    mw, events = middleware(
        InMemoryBackend(),
        skip_clear=True,
        max_tokens_for_clear=1,
        token_counter=counter,
        clear_message_rewriter=rewriter,
        clear_post_process=lambda s: called.append("post"),
    )
    s = state(c2())
    snap = snapshot(s)
    assert mw.before_model_rewrite_state(s) is s
    assert_untouched(s, snap)
    assert called == []
    assert events == []


def test_clear_skip_clear_still_runs_a_per_tool_clear_handler() -> None:
    """§2.4 / case 3 analogue: a tool that brings its own clear handler is still cleared."""

    def handler(detail: ToolDetail) -> ClearResult:
        return ClearResult(
            need_clear=True,
            tool_argument=detail.tool_argument,
            tool_result=ToolResult.of_text("gone"),
        )

    msgs = rounds(("a", "own", "A"), ("b", "other", "B"))
    mw, events = middleware(
        InMemoryBackend(),
        skip_clear=True,
        max_tokens_for_clear=1,
        tool_config={"own": ToolReductionConfig(clear_handler=handler)},
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert [m.content for m in out.messages if m.role == "tool"] == ["gone", "B", "kept"]
    assert summary(events).calls_cleared == 1


# --- range (§4.3) -----------------------------------------------------------------------------


def test_clear_default_clear_conformance_case_23() -> None:
    """Case 23: per-tool default handler, retention 0 (→ 1): T1 offloaded, T2 and args kept."""
    backend = InMemoryBackend()
    handler = default_clear_handler(
        lambda d: f"/tmp/clear/{d.tool_context.call_id}", True, "read_file"
    )
    mw, _ = middleware(
        backend,
        max_tokens_for_clear=20,
        clear_retention_suffix_limit=0,
        tool_config={"get_weather": ToolReductionConfig(clear_handler=handler)},
    )
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == PLACEHOLDER_ID1
    assert backend.files == {f"/tmp/clear/{ID1}": "Sunny"}
    assert out.messages[2].tool_calls[0].arguments == ARGS
    assert out.messages[4].tool_calls[0].arguments == ARGS
    assert out.messages[5] == Message.tool("Sunny", ID2)
    assert out.messages[2].extra == {FLAG: True}
    assert out.messages[4].extra == {}


def test_clear_retention_two_keeps_two_rounds() -> None:
    msgs = rounds(("a", "t", "A"), ("b", "t", "B"), ("c", "t", "C"), tail=False)
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1, clear_retention_suffix_limit=2)
    out = mw.before_model_rewrite_state(state(msgs))
    assert [m.content for m in out.messages if m.role == "tool"] == [
        placeholder("/tmp/clear/a"),
        "B",
        "C",
    ]


def test_clear_negative_retention_keeps_nothing() -> None:
    msgs = rounds(("a", "t", "A"), ("b", "t", "B"), tail=False)
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1, clear_retention_suffix_limit=-1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert [m.content for m in out.messages if m.role == "tool"] == [
        placeholder("/tmp/clear/a"),
        placeholder("/tmp/clear/b"),
    ]
    assert backend.files == {"/tmp/clear/a": "A", "/tmp/clear/b": "B"}


def test_clear_fewer_rounds_than_retention_clears_nothing() -> None:
    backend = InMemoryBackend()
    mw, events = middleware(backend, max_tokens_for_clear=1, clear_retention_suffix_limit=3)
    s = state(c2())
    assert mw.before_model_rewrite_state(s) is s
    assert len(backend) == 0
    assert summary(events).reason == "nothing_in_range"
    assert (summary(events).tokens_before, summary(events).tokens_after) == (69, 69)


def test_clear_no_rounds_at_all_changes_nothing() -> None:
    """Case 40: five messages without tool calls, counter 100 per message, max 250."""
    msgs = [
        Message.system("s"),
        Message.user("u"),
        Message.assistant("a"),
        Message.user("u2"),
        Message.assistant("b"),
    ]
    mw, events = middleware(
        None,
        skip_clear=False,
        max_tokens_for_clear=250,
        token_counter=lambda m, t: 100 * len(m),
    )
    s = state(msgs)
    out = mw.before_model_rewrite_state(s)
    assert out is s
    assert len(out.messages) == 5
    assert summary(events).reason == "nothing_in_range"


def test_clear_plain_assistant_messages_are_not_rounds() -> None:
    msgs = [*rounds(("a", "t", "A"), ("b", "t", "B"), tail=False), Message.assistant("done")]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert [m.content for m in out.messages if m.role == "tool"] == [
        placeholder("/tmp/clear/a"),
        "B",
    ]


def test_clear_range_starts_at_first_unprocessed_assistant() -> None:
    """A flagged assistant before the range is skipped, even if its result is not cleared."""
    msgs = rounds(("a", "t", "A"), ("b", "t", "B"))
    msgs[1] = dataclasses.replace(msgs[1], extra={FLAG: True})
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == "A"
    assert out.messages[4].content == placeholder("/tmp/clear/b")
    assert backend.files == {"/tmp/clear/b": "B"}


def test_clear_string_true_flag_does_not_count_as_processed() -> None:
    """§4.11: only the boolean ``True`` counts."""
    msgs = rounds(("a", "t", "A"))
    msgs[1] = dataclasses.replace(msgs[1], extra={FLAG: "true", "other": 1})
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == placeholder("/tmp/clear/a")
    assert out.messages[1].extra == {FLAG: True, "other": 1}


# --- per-call loop (§4.6) ---------------------------------------------------------------------


def test_clear_finds_results_out_of_order() -> None:
    msgs = [
        Message.user("q"),
        call_msg(("a", "t"), ("b", "t")),
        Message.tool("B", "b"),
        Message.tool("A", "a"),
        call_msg(("keep", "t")),
        Message.tool("kept", "keep"),
    ]
    backend = InMemoryBackend()
    mw, events = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2] == Message.tool(placeholder("/tmp/clear/b"), "b")
    assert out.messages[3] == Message.tool(placeholder("/tmp/clear/a"), "a")
    assert backend.files == {"/tmp/clear/a": "A", "/tmp/clear/b": "B"}
    assert [e.call_id for e in events if e.kind == "tool"] == ["a", "b"]


def test_clear_result_scan_stops_at_first_non_result() -> None:
    """§4.6 step 1: a result after a user message does not belong to the call; none is cleared."""
    msgs = [
        Message.user("q"),
        call_msg(("a", "t")),
        Message.user("interrupt"),
        Message.tool("A", "a"),
        call_msg(("keep", "t")),
        Message.tool("kept", "keep"),
    ]
    backend = InMemoryBackend()
    mw, events = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[3] == Message.tool("A", "a")
    assert out.messages[1].extra == {FLAG: True}
    assert len(backend) == 0
    assert summary(events).reason == "nothing_cleared"


def test_clear_scan_is_not_bounded_by_the_number_of_calls() -> None:
    """§4.6 step 1: every tool result right after the call is searched, not only ``k`` of them."""
    msgs = [
        Message.user("q"),
        call_msg(("a", "t")),
        Message.tool("stray", "zzz"),
        Message.tool("A", "a"),
        call_msg(("keep", "t")),
        Message.tool("kept", "keep"),
    ]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == "stray"
    assert out.messages[3].content == placeholder("/tmp/clear/a")


def test_clear_exclude_tools_conformance_case_29() -> None:
    """Case 29: the excluded call's result stays and no file is written for it."""
    msgs = [
        Message.system("s"),
        Message.user("u"),
        call_msg((ID1, "get_weather")),
        Message.tool("Sunny", ID1),
        call_msg((ID2, "get_important_data")),
        Message.tool("Important Data Content", ID2),
        call_msg(("call_3", "get_weather")),
        Message.tool("Sunny", "call_3"),
    ]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1, clear_exclude_tools=["get_important_data"])
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[3].content == PLACEHOLDER_ID1
    assert backend.read(f"/tmp/clear/{ID1}") == "Sunny"
    assert out.messages[5].content == "Important Data Content"
    with pytest.raises(FileNotFoundError, match=f"^file not found: /tmp/clear/{ID2}$"):
        backend.read(f"/tmp/clear/{ID2}")


def test_clear_exclude_tools_matches_the_calls_function_name() -> None:
    """§4.6 step 2: the tool message's ``tool_name`` is not what exclusion looks at."""
    msgs = [
        Message.user("q"),
        call_msg(("a", "secret")),
        Message.tool("A", "a", tool_name="public"),
        call_msg(("b", "public")),
        Message.tool("B", "b", tool_name="secret"),
        call_msg(("keep", "t")),
        Message.tool("kept", "keep"),
    ]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1, clear_exclude_tools=["secret"])
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == "A"
    assert out.messages[4].content == placeholder("/tmp/clear/b")


def test_clear_exclusion_beats_a_per_tool_handler() -> None:
    calls: list[ToolDetail] = []

    def handler(detail: ToolDetail) -> ClearResult:
        calls.append(detail)
        return ClearResult(need_clear=False)

    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        clear_exclude_tools=["t"],
        tool_config={"t": ToolReductionConfig(clear_handler=handler)},
    )
    out = mw.before_model_rewrite_state(state(rounds(("a", "t", "A"))))
    assert out.messages[2].content == "A"
    assert calls == []


def test_clear_without_backend_uses_the_dropped_placeholder() -> None:
    """Case 25: the default handler without offloading."""
    mw, events = middleware(None, max_tokens_for_clear=20)
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == DROPPED
    assert [e.offload_path for e in events if e.kind == "tool"] == [""]


def test_clear_custom_path_generator_conformance_case_24() -> None:
    msgs = [
        Message.user("q"),
        call_msg(("call_a", "get_weather")),
        Message.tool("Sunny", "call_a"),
        call_msg(("call_b", "get_weather")),
        Message.tool("Sunny", "call_b"),
    ]
    backend = InMemoryBackend()
    mw, _ = middleware(
        backend,
        max_tokens_for_clear=20,
        token_counter=constant(100),
        gen_clear_offload_file_path=lambda d: "/custom/clear/" + d.tool_context.call_id,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == placeholder("/custom/clear/call_a")
    assert backend.files == {"/custom/clear/call_a": "Sunny"}


def test_clear_custom_handler_conformance_case_27() -> None:
    """Case 27: a handler that offloads arguments and result to ``/tmp/<id>``."""

    def handler(detail: ToolDetail) -> ClearResult:
        args = json.loads(detail.tool_argument.text)
        call_id = detail.tool_context.call_id
        assert detail.tool_result is not None
        content = json.dumps({"arguments": args, "result": detail.tool_result.parts[0].text})
        return ClearResult(
            need_clear=True,
            tool_argument=ToolArgument(
                text=json.dumps({k: "argument offloaded" for k in args}, separators=(",", ":"))
            ),
            tool_result=ToolResult.of_text(f"result offloaded, retrieve it from /tmp/{call_id}"),
            need_offload=True,
            offload_file_path=f"/tmp/{call_id}",
            offload_content=content,
        )

    backend = InMemoryBackend()
    mw, events = middleware(
        backend,
        max_tokens_for_clear=20,
        tool_config={"get_weather": ToolReductionConfig(clear_handler=handler)},
    )
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[2].tool_calls[0].arguments == (
        '{"location":"argument offloaded","unit":"argument offloaded"}'
    )
    assert out.messages[3].content == f"result offloaded, retrieve it from /tmp/{ID1}"
    assert out.messages[4:] == c2()[4:]
    assert json.loads(backend.read(f"/tmp/{ID1}")) == {
        "arguments": {"location": "London, UK", "unit": "c"},
        "result": "Sunny",
    }
    (tool_event,) = [e for e in events if e.kind == "tool"]
    new_args = out.messages[2].tool_calls[0].arguments
    assert tool_event.chars_before == len(ARGS) + len("Sunny")
    assert tool_event.chars_after == len(new_args) + len(out.messages[3].content)


def test_clear_handler_need_clear_false_keeps_the_result_and_flags_the_call() -> None:
    mw, events = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        tool_config={"t": ToolReductionConfig(clear_handler=lambda d: ClearResult())},
    )
    out = mw.before_model_rewrite_state(state(rounds(("a", "t", "A"))))
    assert out.messages[2].content == "A"
    assert out.messages[1].extra == {FLAG: True}
    assert summary(events).reason == "nothing_cleared"
    assert summary(events).applied is True


def test_clear_handler_returning_something_else_is_an_error() -> None:
    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        tool_config={"t": ToolReductionConfig(clear_handler=lambda d: "nope")},  # type: ignore[arg-type,return-value]
    )
    with pytest.raises(
        ReductionError, match=starting("clear_handler for tool 't' returned 'nope', not a")
    ):
        mw.before_model_rewrite_state(state(rounds(("a", "t", "A"))))


def test_clear_handler_need_clear_without_values_is_an_error() -> None:
    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        tool_config={
            "t": ToolReductionConfig(clear_handler=lambda d: ClearResult(need_clear=True))
        },
    )
    with pytest.raises(
        ReductionError, match=containing("set need_clear without tool_argument and tool_result")
    ):
        mw.before_model_rewrite_state(state(rounds(("a", "t", "A"))))


def test_clear_empty_result_is_cleared_and_offloaded_empty() -> None:
    """§4.7: an empty ``""`` result is cleared too."""
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(rounds(("a", "t", ""))))
    assert out.messages[2].content == placeholder("/tmp/clear/a")
    assert backend.files == {"/tmp/clear/a": ""}


def test_clear_multi_content_result_keeps_media_and_offloads_json() -> None:
    image = Media(url="https://example.com/a.png", mime_type="image/png", detail="high")
    result = Message(
        role="tool",
        tool_call_id="a",
        user_input_multi_content=(
            MessagePart(type="text", text="caption"),
            MessagePart(type="image_url", media=image),
        ),
    )
    msgs = [
        Message.user("q"),
        call_msg(("a", "t")),
        result,
        call_msg(("k", "t")),
        Message.tool("kept", "k"),
    ]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].user_input_multi_content == (
        MessagePart(type="text", text=placeholder("/tmp/clear/a")),
        MessagePart(type="image_url", media=image),
    )
    assert out.messages[2].content == ""
    assert json.loads(backend.read("/tmp/clear/a")) == [
        {"type": "text", "text": "caption"},
        {
            "type": "image",
            "image": {
                "url": "https://example.com/a.png",
                "mime_type": "image/png",
                "detail": "high",
            },
        },
    ]


def test_clear_unknown_part_type_aborts_and_leaves_the_caller_untouched() -> None:
    result = Message(
        role="tool",
        tool_call_id="a",
        user_input_multi_content=(MessagePart(type="reasoning", text="hm"),),
    )
    msgs = [
        Message.user("q"),
        call_msg(("a", "t")),
        result,
        call_msg(("k", "t")),
        Message.tool("kept", "k"),
    ]
    backend = InMemoryBackend()
    mw, events = middleware(backend, max_tokens_for_clear=1)
    s = state(msgs)
    snap = snapshot(s)
    with pytest.raises(MessageError, match=exactly("unknown msg part type: reasoning")):
        mw.before_model_rewrite_state(s)
    assert_untouched(s, snap)
    assert events == []


def test_clear_unknown_role_without_rewriter_is_skipped() -> None:
    msgs = rounds(("a", "t", "A"))
    msgs.insert(3, Message(role="critic", content="hm"))
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == placeholder("/tmp/clear/a")
    assert out.messages[3] == Message(role="critic", content="hm")


def test_clear_two_results_for_one_reused_id_in_one_message_are_both_cleared() -> None:
    """Decision 7: a model that repeats an id inside one message still gets both results."""
    msgs = [
        Message.user("q"),
        call_msg(("dup", "t"), ("dup", "t")),
        Message.tool("one", "dup"),
        Message.tool("two", "dup"),
        call_msg(("k", "t")),
        Message.tool("kept", "k"),
    ]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    two = f"/tmp/clear/dup-{content_digest('two')[:12]}"
    assert [out.messages[2].content, out.messages[3].content] == [
        placeholder("/tmp/clear/dup"),
        placeholder(two),
    ]
    assert backend.files == {"/tmp/clear/dup": "one", two: "two"}


def test_clear_finds_a_result_anywhere_in_the_run_after_its_call() -> None:
    """§4.6 step 1: the whole run of tool results after the call is searched. The
    reference looks only at the next N messages (N calls, here 1), so there the result
    behind a stray one is never found and stays as it is."""
    msgs = [
        Message.user("q"),
        call_msg(("a", "t")),
        Message.tool("stray", "x"),
        Message.tool("A", "a"),
        call_msg(("k", "t")),
        Message.tool("kept", "k"),
    ]
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert [m.content for m in out.messages[2:4]] == ["stray", placeholder("/tmp/clear/a")]
    assert backend.files == {"/tmp/clear/a": "A"}


def test_clear_read_file_tool_name_and_root_dir_shape_the_placeholder() -> None:
    backend = InMemoryBackend()
    mw, _ = middleware(
        backend, max_tokens_for_clear=20, read_file_tool_name="cat_file", root_dir="/data/"
    )
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == placeholder(f"/data/clear/{ID1}", "cat_file")
    assert backend.files == {f"/data/clear/{ID1}": "Sunny"}


# --- backends (decision 4) --------------------------------------------------------------------


def test_clear_per_tool_backend_is_used_by_the_default_handler() -> None:
    shared, own = InMemoryBackend(), InMemoryBackend()
    mw, _ = middleware(
        shared,
        max_tokens_for_clear=20,
        tool_config={"get_weather": ToolReductionConfig(backend=own)},
    )
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == PLACEHOLDER_ID1
    assert own.files == {f"/tmp/clear/{ID1}": "Sunny"}
    assert len(shared) == 0


def test_clear_per_tool_entry_without_backend_inherits_the_global_one() -> None:
    shared = InMemoryBackend()
    mw, _ = middleware(
        shared, max_tokens_for_clear=20, tool_config={"get_weather": ToolReductionConfig()}
    )
    mw.before_model_rewrite_state(state(c2()))
    assert shared.files == {f"/tmp/clear/{ID1}": "Sunny"}


def offloading_handler(detail: ToolDetail) -> ClearResult:
    return ClearResult(
        need_clear=True,
        tool_argument=detail.tool_argument,
        tool_result=ToolResult.of_text("moved"),
        need_offload=True,
        offload_file_path=f"/x/{detail.tool_context.call_id}",
        offload_content="original",
    )


def test_clear_per_tool_handler_without_backend_inherits_the_global_one() -> None:
    shared = InMemoryBackend()
    mw, _ = middleware(
        shared,
        max_tokens_for_clear=20,
        tool_config={"get_weather": ToolReductionConfig(clear_handler=offloading_handler)},
    )
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == "moved"
    assert shared.files == {f"/x/{ID1}": "original"}


def test_clear_no_backend_anywhere_is_an_error_and_nothing_changes() -> None:
    mw, events = middleware(
        None,
        max_tokens_for_clear=20,
        tool_config={"get_weather": ToolReductionConfig(clear_handler=offloading_handler)},
    )
    s = state(c2())
    snap = snapshot(s)
    with pytest.raises(NoBackendError, match=exactly("clear: no backend for offload")):
        mw.before_model_rewrite_state(s)
    assert_untouched(s, snap)
    assert events == []


def test_clear_per_tool_skip_clear_without_handler_is_never_cleared() -> None:
    """Case 43: an entry ``{skip_clear}`` is that entry, with no clear handler."""
    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        tool_config={"t": ToolReductionConfig(skip_clear=True)},
    )
    out = mw.before_model_rewrite_state(state(rounds(("a", "t", "A"), ("b", "u", "B"))))
    assert out.messages[2].content == "A"
    assert out.messages[4].content == placeholder("/tmp/clear/b")


# --- nothing twice, nothing lost (decision 5) -------------------------------------------------


def test_clear_twice_with_new_messages_leaves_every_offload_file_intact() -> None:
    backend = CountingBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    first = mw.before_model_rewrite_state(state(rounds(("a", "t", "A"), ("b", "t", "B"))))
    files = backend.files
    grown = [
        *first.messages,
        Message.assistant("ok"),
        Message.user("more"),
        call_msg(("c", "t")),
        Message.tool("C", "c"),
    ]
    second = mw.before_model_rewrite_state(state(grown))
    assert backend.files == {**files, "/tmp/clear/keep": "kept"}
    assert backend.log[len(files) :] == [("/tmp/clear/keep", "kept")]
    assert second.messages[:5] == first.messages[:5]
    assert second.messages[6].content == placeholder("/tmp/clear/keep")
    assert second.messages[-1].content == "C"


def test_clear_our_placeholder_without_a_flag_is_not_cleared_again() -> None:
    """Decision 5: a conversation sent back over the wire keeps its placeholders, not its flags."""
    backend = CountingBackend()
    mw, events = middleware(backend, max_tokens_for_clear=1)
    first = mw.before_model_rewrite_state(state(rounds(("a", "t", "A"))))
    stripped = [dataclasses.replace(m, extra={}) for m in first.messages]
    stripped += [call_msg(("c", "t")), Message.tool("C", "c")]
    events.clear()
    second = mw.before_model_rewrite_state(state(stripped))
    assert backend.log == [("/tmp/clear/a", "A"), ("/tmp/clear/keep", "kept")]
    assert second.messages[2].content == placeholder("/tmp/clear/a")
    assert [e.call_id for e in events if e.kind == "tool"] == ["keep"]


def test_clear_dropped_and_chinese_placeholders_are_not_cleared_again() -> None:
    zh = zh_placeholder("/tmp/clear/b")
    backend = CountingBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(rounds(("a", "t", DROPPED), ("b", "t", zh))))
    assert [m.content for m in out.messages if m.role == "tool"] == [DROPPED, zh, "kept"]
    assert out.messages[1].extra == {FLAG: True}
    assert backend.log == []


def test_clear_flagged_call_inside_the_range_is_not_processed_again() -> None:
    """Decision 5 (§4.11): a flagged call after an unflagged reply is skipped."""
    seen: list[str] = []

    def handler(detail: ToolDetail) -> ClearResult:
        seen.append(detail.tool_context.call_id)
        return ClearResult()

    msgs = [
        Message.user("q"),
        Message.assistant("hello"),
        *rounds(("a", "t", "A"), ("b", "t", "B"))[1:],
    ]
    msgs[2] = dataclasses.replace(msgs[2], extra={FLAG: True})
    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        tool_config={"t": ToolReductionConfig(clear_handler=handler)},
    )
    mw.before_model_rewrite_state(state(msgs))
    assert seen == ["b"]


def test_clear_truncated_result_points_at_the_truncation_file() -> None:
    """§4.7: the placeholder names the truncation file and nothing new is written."""
    backend = CountingBackend()
    mw, events = middleware(
        backend, skip_truncation=False, max_length_for_trunc=10, max_tokens_for_clear=1
    )
    tool = mw.wrap_invokable_tool_call(lambda a: "x" * 30, ToolContext(name="t", call_id="c1"))
    notice = tool("{}")
    assert backend.log == [("/tmp/trunc/c1", "x" * 30)]
    out = mw.before_model_rewrite_state(state(rounds(("c1", "t", notice))))
    assert out.messages[2].content == placeholder("/tmp/trunc/c1")
    assert backend.log == [("/tmp/trunc/c1", "x" * 30)]
    clear_tool = [e for e in events if e.phase == "clear" and e.kind == "tool"]
    assert clear_tool[0].offload_path == "/tmp/trunc/c1"


def test_clear_truncated_stream_points_at_the_stream_file() -> None:
    backend = CountingBackend()
    mw, _ = middleware(
        backend, skip_truncation=False, max_length_for_trunc=10, max_tokens_for_clear=1
    )
    tool = mw.wrap_streamable_tool_call(
        lambda a: iter(["x" * 20, "tail"]), ToolContext(name="t", call_id="s1")
    )
    streamed = "".join(tool("{}"))
    assert backend.files == {"/tmp/trunc/s1": "x" * 20 + "tail"}
    out = mw.before_model_rewrite_state(state(rounds(("s1", "t", streamed))))
    assert out.messages[2].content == placeholder("/tmp/trunc/s1")
    assert backend.files == {"/tmp/trunc/s1": "x" * 20 + "tail"}


def test_clear_chinese_truncation_notice_is_recognised() -> None:
    backend = CountingBackend()
    mw, _ = middleware(
        backend,
        skip_truncation=False,
        max_length_for_trunc=10,
        max_tokens_for_clear=1,
        language="zh",
    )
    notice = mw.wrap_invokable_tool_call(lambda a: "字" * 30, ToolContext(name="t", call_id="z"))(
        "{}"
    )
    out = mw.before_model_rewrite_state(state(rounds(("z", "t", notice), tail=True)))
    assert out.messages[2].content == zh_placeholder("/tmp/trunc/z")
    assert backend.log == [("/tmp/trunc/z", "字" * 30)]


# --- the caller's messages (decision 6) -------------------------------------------------------


def test_clear_never_mutates_the_callers_messages() -> None:
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=20)
    s = state(c2())
    snap = snapshot(s)
    out = mw.before_model_rewrite_state(s)
    assert out is not s
    assert out.messages is not s.messages
    assert_untouched(s, snap)
    assert s.messages[3].content == "Sunny"


def test_clear_failing_write_raises_and_leaves_the_caller_untouched() -> None:
    backend = FailingBackend(fail_on=2)
    mw, events = middleware(backend, max_tokens_for_clear=1)
    s = state(rounds(("a", "t", "A"), ("b", "t", "B")))
    snap = snapshot(s)
    with pytest.raises(
        OffloadError, match=exactly("clear: failed to write /tmp/clear/b: disk full")
    ) as e:
        mw.before_model_rewrite_state(s)
    assert isinstance(e.value.cause, OSError)
    assert_untouched(s, snap)
    assert events == []


class Boom(Exception):
    pass


def test_clear_failing_handler_passes_through_unchanged() -> None:
    error = Boom("handler failed")

    def handler(detail: ToolDetail) -> ClearResult:
        raise error

    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        tool_config={"t": ToolReductionConfig(clear_handler=handler)},
    )
    s = state(rounds(("a", "u", "A"), ("b", "t", "B")))
    snap = snapshot(s)
    with pytest.raises(Boom) as raised:
        mw.before_model_rewrite_state(s)
    assert raised.value is error
    assert_untouched(s, snap)


@pytest.mark.parametrize("failing_call", [1, 2])
def test_clear_failing_counter_passes_through_unchanged(failing_call: int) -> None:
    """The counter fails before the range (1st call) or after the loop (2nd call)."""
    calls: list[int] = []

    def counter(messages: Any, tools: Any) -> int:
        calls.append(1)
        if len(calls) == failing_call:
            raise Boom("counter failed")
        return 1000

    backend = InMemoryBackend()
    mw, events = middleware(
        backend, max_tokens_for_clear=1, token_counter=counter, clear_at_least_tokens=1
    )
    s = state(rounds(("a", "t", "A")))
    snap = snapshot(s)
    with pytest.raises(Boom, match=exactly("counter failed")):
        mw.before_model_rewrite_state(s)
    assert_untouched(s, snap)
    assert len(backend) == 0
    assert events == []


def test_clear_none_message_is_a_message_error() -> None:
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    msgs: list[Any] = c2()
    msgs.insert(2, None)
    with pytest.raises(MessageError, match=starting("messages[2] is NoneType, not a Message")):
        mw.before_model_rewrite_state(ChatModelAgentState(messages=msgs))


def test_clear_mixed_message_styles_are_a_message_error() -> None:
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    msgs: list[Any] = [*c2(), agentic_text("user", "hi")]
    with pytest.raises(
        MessageError, match=exactly("messages mix chat Message and AgenticMessage values")
    ):
        mw.before_model_rewrite_state(ChatModelAgentState(messages=msgs))


# --- unique paths (decision 7) ----------------------------------------------------------------


def test_clear_reused_call_ids_with_different_content_get_distinct_files() -> None:
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(
        state(rounds(("dup", "t", "one"), ("dup", "t", "two"), ("dup", "t", "one")))
    )
    two = f"/tmp/clear/dup-{content_digest('two')[:12]}"
    assert [m.content for m in out.messages if m.role == "tool"][:3] == [
        placeholder("/tmp/clear/dup"),
        placeholder(two),
        placeholder("/tmp/clear/dup"),
    ]
    assert backend.files == {"/tmp/clear/dup": "one", two: "two"}


def test_clear_reused_id_is_unique_across_passes_and_middlewares() -> None:
    """The uniqueness check reads the backend, so a fresh middleware does not overwrite."""
    backend = InMemoryBackend()
    middleware(backend, max_tokens_for_clear=1)[0].before_model_rewrite_state(
        state(rounds(("dup", "t", "one")))
    )
    out = middleware(backend, max_tokens_for_clear=1)[0].before_model_rewrite_state(
        state(rounds(("dup", "t", "two")))
    )
    two = f"/tmp/clear/dup-{content_digest('two')[:12]}"
    assert out.messages[2].content == placeholder(two)
    assert backend.files["/tmp/clear/dup"] == "one"
    assert backend.files[two] == "two"


def test_clear_unsafe_call_id_stays_under_root_dir() -> None:
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1)
    mw.before_model_rewrite_state(state(rounds(("../../etc/passwd", "t", "A"))))
    (path,) = [p for p in backend.files if backend.files[p] == "A"]
    assert path.startswith("/tmp/clear/")
    assert ".." not in path.removeprefix("/tmp/clear/").split("/")
    assert "/" not in path.removeprefix("/tmp/clear/")


def test_clear_tau_bench_reused_ids_keep_every_original() -> None:
    """Decision 7 on real data: tau-bench run 0 reuses two call ids for different calls."""
    traj = tau_bench_traj(0)
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1, clear_retention_suffix_limit=-1)
    out = mw.before_model_rewrite_state(state(traj))
    reused = "call_oIHazX6yQrB8hUwl4cRilFKj"
    assert backend.read(f"/tmp/clear/{reused}") == traj[7].content
    assert backend.read(f"/tmp/clear/{reused}-{content_digest('255.0')[:12]}") == "255.0"
    other = f"/tmp/clear/call_HGn16KZh9oNCruxsMJ4gYXan-{content_digest(traj[13].content)[:12]}"
    assert backend.read(other) == traj[13].content
    for before, after in zip(traj, out.messages, strict=True):
        if before.role == "tool":
            path = after.content.split("saved to: ")[1].split("\n")[0]
            assert backend.read(path) == before.content


# --- clear_at_least_tokens (§4.8) -------------------------------------------------------------


def test_clear_at_least_below_the_saving_returns_the_original_state() -> None:
    """§4.8: placeholders are longer than ``Sunny``, so C2 saves -25 tokens."""
    backend = CountingBackend()
    posts: list[Any] = []
    mw, events = middleware(
        backend, max_tokens_for_clear=20, clear_at_least_tokens=1, clear_post_process=posts.append
    )
    s = state(c2())
    assert mw.before_model_rewrite_state(s) is s
    assert backend.log == []
    assert posts == []
    assert events == [
        dataclasses.replace(
            events[0],
            reason="below_clear_at_least_tokens",
            tokens_before=69,
            tokens_after=69,
            tokens_saved=0,
            threshold=20,
        )
    ]


def test_clear_at_least_exactly_met_writes_then_commits() -> None:
    """One token per character: 500 and 400 characters become 93-character placeholders."""
    backend = CountingBackend()
    order: list[str] = []
    mw, _ = middleware(
        backend,
        max_tokens_for_clear=1,
        token_counter=chars,
        clear_at_least_tokens=(500 - 93) + (400 - 93),
        clear_post_process=lambda s: order.append(f"post {len(backend.log)} files"),
        on_event=lambda e: order.append(e.kind),
    )
    msgs = rounds(("a", "t", "x" * 500), ("b", "t", "y" * 400))
    out = mw.before_model_rewrite_state(state(msgs))
    assert backend.log == [("/tmp/clear/a", "x" * 500), ("/tmp/clear/b", "y" * 400)]
    assert order == ["post 2 files", "tool", "tool", "summary"]
    assert out.messages[4].content == placeholder("/tmp/clear/b")
    assert len(placeholder("/tmp/clear/a")) == 93


def test_clear_at_least_one_more_is_not_applied() -> None:
    backend = CountingBackend()
    mw, events = middleware(
        backend, max_tokens_for_clear=1, token_counter=chars, clear_at_least_tokens=715
    )
    s = state(rounds(("a", "t", "x" * 500), ("b", "t", "y" * 400)))
    assert mw.before_model_rewrite_state(s) is s
    assert backend.log == []
    assert summary(events).reason == "below_clear_at_least_tokens"


def test_clear_at_least_failing_stashed_write_leaves_the_caller_untouched() -> None:
    backend = FailingBackend(fail_on=2)
    posts: list[Any] = []
    mw, events = middleware(
        backend,
        max_tokens_for_clear=1,
        token_counter=chars,
        clear_at_least_tokens=1,
        clear_post_process=posts.append,
    )
    s = state(rounds(("a", "t", "x" * 500), ("b", "t", "y" * 400)))
    snap = snapshot(s)
    with pytest.raises(
        OffloadError, match=exactly("clear: failed to write /tmp/clear/b: disk full")
    ):
        mw.before_model_rewrite_state(s)
    assert_untouched(s, snap)
    assert backend.files == {"/tmp/clear/a": "x" * 500}
    assert posts == []
    assert events == []


# --- commit and post-process (§4.9) -----------------------------------------------------------


def test_clear_post_process_is_called_once_with_the_new_state() -> None:
    posts: list[Any] = []
    mw, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=20,
        clear_post_process=lambda s: posts.append(s) or "ignored",
    )
    out = mw.before_model_rewrite_state(state(c2()))
    assert posts == [out]
    assert posts[0] is out


def test_clear_post_process_is_not_called_when_nothing_applies() -> None:
    posts: list[Any] = []
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=100, clear_post_process=posts.append)
    mw.before_model_rewrite_state(state(c2()))
    mw2, _ = middleware(
        InMemoryBackend(),
        max_tokens_for_clear=1,
        clear_retention_suffix_limit=5,
        clear_post_process=posts.append,
    )
    mw2.before_model_rewrite_state(state(c2()))
    assert posts == []


def test_clear_post_process_runs_for_a_committed_pass_that_cleared_nothing() -> None:
    """Case 40: two rounds, a high counter, every call excluded: the flags are committed."""
    posts: list[Any] = []
    mw, events = middleware(
        None,
        max_tokens_for_clear=1,
        clear_exclude_tools=["get_weather"],
        clear_post_process=posts.append,
    )
    out = mw.before_model_rewrite_state(state(c2()))
    assert posts == [out]
    assert out.messages[2].extra == {FLAG: True}
    assert summary(events).reason == "nothing_cleared"
    assert summary(events).calls_cleared == 0


def test_clear_state_keeps_its_tool_infos() -> None:
    tools = (ToolInfo(name="get_weather"),)
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=20)
    s = ChatModelAgentState(messages=c2(), tool_infos=tools, deferred_tool_infos=tools)
    out = mw.before_model_rewrite_state(s)
    assert out.tool_infos is tools
    assert out.deferred_tool_infos is tools


def test_clear_counter_receives_the_states_tool_infos() -> None:
    seen: list[Any] = []
    tools = [ToolInfo(name="t")]

    def counter(messages: Any, tool_infos: Any) -> int:
        seen.append(list(tool_infos))
        return 0

    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1, token_counter=counter)
    mw.before_model_rewrite_state(ChatModelAgentState(messages=c2(), tool_infos=tools))
    assert seen == [tools]


# --- events -----------------------------------------------------------------------------------


def test_clear_events_carry_exact_figures_for_c2() -> None:
    """C2 with the approx counter: the result message ``Sunny`` → a 106-character placeholder.

    Token figures are those of the whole tool message, which the pass already counted:
    ``"tool\n\nSunny\n"`` (12 chars, 3 tokens) → 113 chars (28 tokens)."""
    mw, events = middleware(InMemoryBackend(), max_tokens_for_clear=20)
    mw.before_model_rewrite_state(state(c2()))
    tool, total = events
    assert (tool.phase, tool.kind, tool.tool_name, tool.call_id) == (
        "clear",
        "tool",
        "get_weather",
        ID1,
    )
    assert (tool.chars_before, tool.chars_after) == (5, 106)
    assert (tool.tokens_before, tool.tokens_after, tool.tokens_saved) == (3, 28, -25)
    assert tool.offload_path == f"/tmp/clear/{ID1}"
    assert (total.kind, total.reason, total.applied, total.calls_cleared) == (
        "summary",
        "applied",
        True,
        1,
    )
    assert (total.tokens_before, total.tokens_after, total.tokens_saved) == (69, 94, -25)
    assert total.threshold == 20


def test_clear_event_exception_propagates() -> None:
    def on_event(event: Any) -> None:
        raise Boom("listener failed")

    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=20, on_event=on_event)
    with pytest.raises(Boom, match=exactly("listener failed")):
        mw.before_model_rewrite_state(state(c2()))


# --- language (decision 10) -------------------------------------------------------------------


def test_clear_chinese_placeholder_with_language_zh() -> None:
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=20, language="zh")
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == zh_placeholder(f"/tmp/clear/{ID1}")


def test_clear_chinese_dropped_placeholder_follows_set_language(restore_language: None) -> None:
    set_language("zh")
    mw, _ = middleware(None, max_tokens_for_clear=20)
    out = mw.before_model_rewrite_state(state(c2()))
    assert out.messages[3].content == "[工具输出结果已清理]"


def test_clear_default_clear_flow_conformance_case_39() -> None:
    """Case 39 (chat): no backend, high counter; old result cleared, new call untouched."""
    old_args = '{"location":"London"}'
    msgs = [
        Message.system("s"),
        Message.user("u"),
        Message.assistant(
            tool_calls=(ToolCall(id="call_old", name="get_weather", arguments=old_args),)
        ),
        Message.tool("Sunny and warm", "call_old"),
        Message.user("and now?"),
        Message.assistant(
            tool_calls=(ToolCall(id="call_new", name="get_weather", arguments="{}"),)
        ),
    ]
    mw, _ = middleware(None, max_tokens_for_clear=1, token_counter=constant(10_000))
    out = mw.before_model_rewrite_state(state(msgs))
    assert len(out.messages) == 6
    assert out.messages[2].tool_calls[0].arguments == old_args
    assert out.messages[3].content == DROPPED
    assert out.messages[2].extra == {FLAG: True}
    assert out.messages[5] == msgs[5]


# --- handler resolution and the default handler (cases 43–45) ---------------------------------


def test_clear_resolution_conformance_case_43() -> None:
    from reduction_app.engine.config import ReductionConfig
    from reduction_app.engine.runtime import Runtime

    rt = Runtime(
        ReductionConfig(
            backend=InMemoryBackend(),
            tool_config={
                "both": ToolReductionConfig(skip_truncation=True, skip_clear=True),
                "plain": ToolReductionConfig(skip_truncation=False),
            },
        )
    )
    assert rt.clear_for("unknown") is rt.default_clear
    assert rt.clear_for("both") is None
    assert rt.trunc_for("both") is None
    assert rt.clear_for("plain") is rt.default_clear
    plain_trunc = rt.trunc_for("plain")
    assert plain_trunc is not None
    assert plain_trunc is rt.default_trunc


def test_clear_default_handler_conformance_case_44() -> None:
    handler = default_clear_handler(
        lambda d: f"/tmp/clear/{d.tool_context.call_id}", True, "read_file"
    )
    detail = ToolDetail(
        tool_context=ToolContext(call_id="mock_call_id_12345"),
        tool_argument=ToolArgument(text="anything"),
        tool_result=ToolResult.of_text("hello"),
    )
    assert handler(detail) == ClearResult(
        need_clear=True,
        tool_argument=ToolArgument(text="anything"),
        tool_result=ToolResult.of_text(placeholder("/tmp/clear/mock_call_id_12345")),
        need_offload=True,
        offload_file_path="/tmp/clear/mock_call_id_12345",
        offload_content="hello",
    )


def test_clear_image_only_result_is_left_alone() -> None:
    """Case 45 read through decision 5: the reference "clears" an image-only result with its
    parts unchanged and offloads it as JSON, again on every pass sent back without flags.
    A result without text has nothing to replace, so the phase leaves it and writes nothing
    (the default handler on its own still answers as in case 45: test_handlers.py)."""
    image = MessagePart(type="image_url", media=Media(url="https://example.com/i.png"))
    result = Message(role="tool", tool_call_id="a", user_input_multi_content=(image,))
    msgs = [Message.user("q"), call_msg(("a", "t")), result, call_msg(("k", "t"))]
    backend = InMemoryBackend()
    mw, events = middleware(backend, max_tokens_for_clear=1)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2] is result
    assert backend.files == {}
    assert (summary(events).calls_cleared, summary(events).reason) == (0, "nothing_cleared")


def test_clear_empty_conversation_is_below_any_threshold() -> None:
    mw, events = middleware(InMemoryBackend(), max_tokens_for_clear=1)
    s = ChatModelAgentState(messages=[])
    assert mw.before_model_rewrite_state(s) is s
    assert summary(events).reason == "below_threshold"


def test_clear_discarded_dry_run_does_not_reserve_paths() -> None:
    """Determinism: a pass that wrote nothing must not change where later passes write."""
    backend = InMemoryBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1, clear_at_least_tokens=100)
    small = [
        Message.user("q"),
        call_msg(("dup", "t")),
        Message.tool("one", "dup"),
        call_msg(("k", "t")),
    ]
    big = [*small[:2], Message.tool("two" * 400, "dup"), small[3]]
    s = state(small)
    assert mw.before_model_rewrite_state(s) is s
    out = mw.before_model_rewrite_state(state(big))
    assert out.messages[2].content == placeholder("/tmp/clear/dup")
