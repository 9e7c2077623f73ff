"""Tests for the clear phase's ``clear_message_rewriter`` (docs/behaviour.md §4.5, cases 32–37)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from reduction_app.engine import InMemoryBackend
from reduction_app.engine.errors import MessageError
from reduction_app.engine.messages import Message
from tests.engine.clear_support import (
    CountingBackend,
    agentic_call,
    agentic_results,
    agentic_text,
    assert_untouched,
    call_msg,
    chars,
    constant,
    ending,
    exactly,
    middleware,
    snapshot,
    starting,
    state,
    summary,
)

FLAG = "_reduction_mw_processed"
REMINDER = Message.user(
    "<system-reminder>write_file and edit_file executed successfully</system-reminder>"
)


class Recorder:
    """A rewriter that records its calls and answers with ``reply(msg, window)``."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.calls: list[tuple[Any, list[Any]]] = []

    def __call__(self, msg: Any, window: list[Any]) -> Any:
        self.calls.append((msg, window))
        return self.reply(msg, window) if callable(self.reply) else self.reply


def placeholder(path: str) -> str:
    return (
        f"<persisted-output>Tool result saved to: {path}\nUse read_file to view</persisted-output>"
    )


def test_rewriter_all_tools_rewritten_to_a_reminder_case_32() -> None:
    rewriter = Recorder([REMINDER])
    msgs = [
        Message.system("s"),
        Message.user("u"),
        call_msg(("call_1", "write_file"), ("call_2", "edit_file")),
        Message.tool("T1", "call_1"),
        Message.tool("T2", "call_2"),
        Message.assistant("done"),
        call_msg(("dummy", "x")),
    ]
    mw, events = middleware(
        None, max_tokens_for_clear=10, token_counter=constant(1000), clear_message_rewriter=rewriter
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert len(out.messages) == 5
    assert out.messages[2] is REMINDER
    assert out.messages[3] == Message.assistant("done")
    assert out.messages[4] is msgs[6]
    assert rewriter.calls == [(msgs[2], [msgs[3], msgs[4]])]
    assert summary(events).reason == "applied"
    assert summary(events).calls_cleared == 0


def test_rewriter_removing_a_group_case_33() -> None:
    msgs = [
        Message.system("s"),
        Message.user("u"),
        call_msg(("call_1", "write_file"), ("call_2", "edit_file")),
        Message.tool("T1", "call_1"),
        Message.tool("T2", "call_2"),
        call_msg(("dummy", "x")),
        Message.tool("dummy dummy", "dummy"),
        Message.assistant("done"),
    ]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=10,
        token_counter=constant(1000),
        clear_message_rewriter=lambda m, w: [],
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == [msgs[0], msgs[1], msgs[5], msgs[6], msgs[7]]


def test_rewriter_returning_none_deletes_the_group() -> None:
    msgs = [Message.user("u"), call_msg(("a", "t")), Message.tool("A", "a"), call_msg(("k", "t"))]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=10,
        token_counter=constant(1000),
        clear_message_rewriter=lambda m, w: None,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == [msgs[0], msgs[3]]


def test_rewriter_with_user_messages_around_case_35() -> None:
    msgs = [
        Message.system("s"),
        Message.user("first request"),
        call_msg(("call_1", "write_file")),
        Message.tool("T", "call_1"),
        Message.user("second request"),
        call_msg(("dummy", "x")),
    ]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=10,
        token_counter=constant(1000),
        clear_message_rewriter=lambda m, w: [REMINDER],
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert [m.role for m in out.messages] == ["system", "user", "user", "user", "assistant"]
    assert out.messages[2] is REMINDER
    assert out.messages[3].content == "second request"


def test_rewriter_window_never_swallows_a_following_user_message() -> None:
    """§4.5: with the result missing, the window is empty, not positional."""
    rewriter = Recorder([REMINDER])
    msgs = [
        Message.system("s"),
        Message.user("first request"),
        call_msg(("call_1", "write_file")),
        Message.user("second request"),
        call_msg(("dummy", "x")),
    ]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=10,
        token_counter=constant(1000),
        clear_message_rewriter=rewriter,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert rewriter.calls == [(msgs[2], [])]
    assert [m.content for m in out.messages] == [
        "s",
        "first request",
        REMINDER.content,
        "second request",
        "",
    ]


def test_rewriter_not_called_for_assistant_without_tool_calls_case_36() -> None:
    rewriter = Recorder([])
    msgs = [
        Message.system("s"),
        Message.user("u"),
        Message.assistant("regular response without tools"),
        call_msg(("dummy", "x")),
    ]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=10,
        token_counter=constant(1000),
        clear_message_rewriter=rewriter,
    )
    s = state(msgs)
    out = mw.before_model_rewrite_state(s)
    assert rewriter.calls == []
    assert list(out.messages) == msgs


def test_rewriter_discarded_below_clear_at_least_tokens_case_37() -> None:
    """Counter 1000 then 999 with ``at_least=10``: the rewrite is thrown away."""
    counts = iter([1000, 999])
    msgs = [Message.user("u"), call_msg(("a", "t")), Message.tool("A", "a"), call_msg(("k", "t"))]
    backend = CountingBackend()
    mw, events = middleware(
        backend,
        max_tokens_for_clear=10,
        token_counter=lambda m, t: next(counts),
        clear_at_least_tokens=10,
        clear_message_rewriter=lambda m, w: [REMINDER],
    )
    s = state(msgs)
    out = mw.before_model_rewrite_state(s)
    assert out is s
    assert [(m.role, m.content) for m in out.messages] == [(m.role, m.content) for m in msgs]
    assert backend.log == []
    assert summary(events).reason == "below_clear_at_least_tokens"


def test_rewriter_constant_counter_with_at_least_is_not_applied_case_37() -> None:
    mw, events = middleware(
        None,
        max_tokens_for_clear=10,
        token_counter=constant(1000),
        clear_at_least_tokens=10,
        clear_message_rewriter=lambda m, w: [REMINDER],
    )
    s = state(
        [Message.user("u"), call_msg(("a", "t")), Message.tool("A", "a"), call_msg(("k", "t"))]
    )
    assert mw.before_model_rewrite_state(s) is s
    assert summary(events).reason == "below_clear_at_least_tokens"


def test_rewriter_saving_counts_toward_clear_at_least_tokens() -> None:
    """Dropping a 300-character group saves 300 + 39 argument characters."""
    msgs = [
        Message.user("u"),
        call_msg(("a", "t")),
        Message.tool("x" * 300, "a"),
        call_msg(("k", "t")),
    ]
    mw, events = middleware(
        None,
        max_tokens_for_clear=1,
        token_counter=chars,
        clear_at_least_tokens=339,
        clear_message_rewriter=lambda m, w: [],
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert list(out.messages) == [msgs[0], msgs[3]]
    assert summary(events).tokens_saved == 339


def test_rewriter_output_goes_through_the_per_call_loop() -> None:
    """The rewriter's own tool messages are cleared, and their content is what is offloaded."""

    def rewrite(msg: Any, window: list[Any]) -> list[Any]:
        return [msg, *(dataclasses.replace(t, content=t.content.upper()) for t in window)]

    backend = InMemoryBackend()
    msgs = [
        Message.user("u"),
        call_msg(("a", "t")),
        Message.tool("quiet", "a"),
        call_msg(("k", "t")),
        Message.tool("kept", "k"),
    ]
    mw, events = middleware(backend, max_tokens_for_clear=1, clear_message_rewriter=rewrite)
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == placeholder("/tmp/clear/a")
    assert backend.files == {"/tmp/clear/a": "QUIET"}
    assert out.messages[1].extra == {FLAG: True}
    assert summary(events).calls_cleared == 1


def test_rewriter_is_not_called_again_for_a_flagged_group() -> None:
    rewriter = Recorder(lambda m, w: [m, *w])
    backend = CountingBackend()
    mw, _ = middleware(backend, max_tokens_for_clear=1, clear_message_rewriter=rewriter)
    first = mw.before_model_rewrite_state(
        state(
            [
                Message.user("u"),
                call_msg(("a", "t")),
                Message.tool("A", "a"),
                call_msg(("k", "t")),
                Message.tool("kept", "k"),
            ]
        )
    )
    assert len(rewriter.calls) == 1
    grown = [*first.messages, call_msg(("c", "t")), Message.tool("C", "c")]
    mw.before_model_rewrite_state(state(grown))
    assert [c[0].tool_calls[0].id for c in rewriter.calls] == ["a", "k"]
    assert backend.log == [("/tmp/clear/a", "A"), ("/tmp/clear/k", "kept")]


def test_rewriter_is_not_called_for_a_group_holding_our_placeholders() -> None:
    rewriter = Recorder(lambda m, w: [m, *w])
    msgs = [
        Message.user("u"),
        call_msg(("a", "t")),
        Message.tool(placeholder("/tmp/clear/a"), "a"),
        call_msg(("k", "t")),
    ]
    mw, _ = middleware(InMemoryBackend(), max_tokens_for_clear=1, clear_message_rewriter=rewriter)
    mw.before_model_rewrite_state(state(msgs))
    assert rewriter.calls == []


def test_rewriter_ignores_clear_exclude_tools() -> None:
    """§4.5: exclusions apply to the per-call loop, not to the rewriter."""
    rewriter = Recorder([REMINDER])
    msgs = [
        Message.user("u"),
        call_msg(("a", "secret")),
        Message.tool("A", "a"),
        call_msg(("k", "t")),
    ]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=1,
        clear_exclude_tools=["secret"],
        clear_message_rewriter=rewriter,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert len(rewriter.calls) == 1
    assert out.messages[1] is REMINDER


def test_rewriter_keeps_orphan_results() -> None:
    """Our deviation from §4.5: a result with no call before it is kept, not dropped."""
    orphan = Message.tool("lost", "nobody")
    msgs = [Message.user("u"), Message.assistant("hi"), orphan, call_msg(("k", "t"))]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=1,
        clear_message_rewriter=lambda m, w: [REMINDER],
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2] is orphan


def test_rewriter_unknown_role_is_an_error() -> None:
    critic = Message(role="critic", content="hm")
    msgs = [
        Message.user("u"),
        call_msg(("a", "t")),
        Message.tool("A", "a"),
        critic,
        call_msg(("k", "t")),
    ]
    mw, events = middleware(
        None,
        max_tokens_for_clear=1,
        clear_message_rewriter=lambda m, w: [m, *w],
    )
    s = state(msgs)
    snap = snapshot(s)
    with pytest.raises(MessageError) as raised:
        mw.before_model_rewrite_state(s)
    assert str(raised.value) == f"[applyClearRewrite] unexpected message: {critic!r}"
    assert_untouched(s, snap)
    assert events == []


def test_rewriter_agentic_user_without_blocks_is_an_error() -> None:
    from reduction_app.engine.blocks import AgenticMessage

    msgs = [
        agentic_text("user", "u"),
        agentic_call(("a", "t")),
        agentic_results(("a", "A")),
        AgenticMessage(role="user"),
        agentic_call(("k", "t")),
    ]
    mw, _ = middleware(None, max_tokens_for_clear=1, clear_message_rewriter=lambda m, w: [m, *w])
    with pytest.raises(MessageError, match=starting("[applyClearRewrite] unexpected message: ")):
        mw.before_model_rewrite_state(state(msgs))


def test_rewriter_agentic_window_is_the_result_messages() -> None:
    rewriter = Recorder(
        lambda m, w: [agentic_text("user", "<system-reminder>ok</system-reminder>")]
    )
    msgs = [
        agentic_text("user", "u"),
        agentic_call(("a", "t"), ("b", "t")),
        agentic_results(("a", "A"), ("b", "B")),
        agentic_text("user", "next"),
        agentic_call(("k", "t")),
    ]
    mw, _ = middleware(None, max_tokens_for_clear=1, clear_message_rewriter=rewriter)
    out = mw.before_model_rewrite_state(state(msgs))
    assert rewriter.calls == [(msgs[1], [msgs[2]])]
    assert [m.content_blocks[0].text for m in out.messages[1:3]] == [  # type: ignore[union-attr]
        "<system-reminder>ok</system-reminder>",
        "next",
    ]


def test_rewriter_returning_the_wrong_message_style_is_an_error() -> None:
    msgs = [Message.user("u"), call_msg(("a", "t")), Message.tool("A", "a"), call_msg(("k", "t"))]
    mw, _ = middleware(
        None,
        max_tokens_for_clear=1,
        clear_message_rewriter=lambda m, w: [agentic_text("user", "x")],
    )
    with pytest.raises(MessageError, match=ending("not a chat message")):
        mw.before_model_rewrite_state(state(msgs))


def test_rewriter_returning_a_non_list_is_an_error() -> None:
    msgs = [Message.user("u"), call_msg(("a", "t")), Message.tool("A", "a"), call_msg(("k", "t"))]
    mw, _ = middleware(None, max_tokens_for_clear=1, clear_message_rewriter=lambda m, w: "x")
    with pytest.raises(
        MessageError,
        match=exactly("clear_message_rewriter must return a list of messages or None, got 'x'"),
    ):
        mw.before_model_rewrite_state(state(msgs))


def test_rewriter_error_passes_through_and_the_caller_is_untouched() -> None:
    error = RuntimeError("rewriter failed")

    def rewriter(msg: Any, window: list[Any]) -> list[Any]:
        raise error

    msgs = [Message.user("u"), call_msg(("a", "t")), Message.tool("A", "a"), call_msg(("k", "t"))]
    mw, _ = middleware(None, max_tokens_for_clear=1, clear_message_rewriter=rewriter)
    s = state(msgs)
    snap = snapshot(s)
    with pytest.raises(RuntimeError) as raised:
        mw.before_model_rewrite_state(s)
    assert raised.value is error
    assert_untouched(s, snap)
