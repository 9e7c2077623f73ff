"""Tests for engine/_clear/_landmarks.py: where the clear phase's work starts, carried
from one call to the next (issue 11), and the guarantee that a carried middleware gives
exactly what a fresh one gives."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reduction_app.engine import (
    ApproxTokenCounter,
    ChatModelAgentState,
    InMemoryBackend,
    WriteRequest,
    access,
)
from reduction_app.engine._clear import _landmarks as landmarks
from reduction_app.engine._clear import _phase as clear
from reduction_app.engine._clear import _rewriter as clear_rewriter
from reduction_app.engine._clear._landmarks import Landmarks, carry_landmarks, find_landmarks
from reduction_app.engine._clear._phase import clear_range
from reduction_app.engine.errors import MessageError, OffloadError
from reduction_app.engine.messages import Message
from tests.engine.clear_support import FailingBackend, agentic_text, call_msg, chars, middleware
from tests.engine.test_clear_properties import (
    CONFIGS,
    SETTINGS,
    Round,
    agentic_conversation,
    chat_conversation,
    rounds,
)

FLAG = "_reduction_mw_processed"


def session(n_rounds: int) -> list[Message]:
    """Rounds of one call each, with a plain answer (never flagged) after the first."""
    msgs: list[Message] = [Message.system("s"), Message.user("q")]
    for i in range(n_rounds):
        msgs += [call_msg((f"c{i}", "grep")), Message.tool("r" * 100, f"c{i}")]
        if i == 0:
            msgs += [Message.assistant("first answer"), Message.user("next")]
    return msgs


def test_find_landmarks_fresh_is_the_range_start() -> None:
    msgs = session(3)
    marks = find_landmarks(msgs, None)
    assert marks == Landmarks(messages=tuple(msgs), kind="chat", start=2, calls_from=2)
    assert marks.start == clear_range(msgs, 1)[0]


def test_plain_answers_hold_the_start_but_not_where_the_work_starts() -> None:
    """Call groups before the first unflagged one are skipped; the plain answer at 4 is
    never flagged, so the range still starts there."""
    msgs = session(4)
    flagged = [
        dataclasses.replace(m, extra={FLAG: True}) if i in (2, 6) else m for i, m in enumerate(msgs)
    ]
    marks = find_landmarks(flagged, None)
    assert (marks.start, marks.calls_from) == (4, 8)


def test_carried_landmarks_answer_for_the_shared_prefix_only() -> None:
    msgs = session(4)
    last = find_landmarks(msgs, None)
    # The caller replaced message 1: nothing of the last landmarks past it is trusted.
    changed = [msgs[0], Message.user("other"), *msgs[2:]]
    assert find_landmarks(changed, last) == find_landmarks(changed, None)
    # Appended messages: the positions found before still hold.
    longer = [*msgs, call_msg(("c9", "grep")), Message.tool("x", "c9")]
    assert find_landmarks(longer, last) == find_landmarks(longer, None)


def test_carried_landmarks_never_skip_a_group_the_caller_unflagged() -> None:
    """A caller may send back an earlier message changed (here, a group's call without its
    flag, as a wire format would): the work starts there again."""
    msgs = session(4)
    flagged = [
        dataclasses.replace(m, extra={FLAG: True}) if i in (2, 6) else m for i, m in enumerate(msgs)
    ]
    last = find_landmarks(flagged, None)
    assert (last.start, last.calls_from) == (4, 8)
    unflagged = [*flagged[:2], msgs[2], *flagged[3:]]
    assert find_landmarks(unflagged, last) == find_landmarks(unflagged, None)
    assert find_landmarks(unflagged, last).calls_from == 2


def test_a_carried_middleware_clears_a_group_sent_back_unflagged() -> None:
    """End to end: the second call sends the first call's output back with every flag
    stripped; the carried middleware goes through the groups again as a fresh one does."""
    backend = InMemoryBackend()
    carried, _ = middleware(backend, token_counter=chars, max_tokens_for_clear=300)
    out = carried.before_model_rewrite_state(ChatModelAgentState(messages=session(6)))
    stripped = [dataclasses.replace(m, extra={}) for m in out.messages]
    fresh, _ = middleware(backend, token_counter=chars, max_tokens_for_clear=300)
    again = carried.before_model_rewrite_state(ChatModelAgentState(messages=stripped))
    want = fresh.before_model_rewrite_state(ChatModelAgentState(messages=stripped))
    assert list(again.messages) == list(want.messages)
    assert any(access.is_processed(m) for m in again.messages)


def test_carried_kind_still_refuses_a_mixed_list() -> None:
    msgs = session(2)
    last = find_landmarks(msgs, None)
    with pytest.raises(MessageError, match="messages mix chat Message and AgenticMessage"):
        find_landmarks([*msgs, agentic_text("user", "hi")], last)


def test_after_pass_moves_on_past_what_the_pass_flagged() -> None:
    msgs = session(3)
    marks = find_landmarks(msgs, None)
    out = [dataclasses.replace(m, extra={FLAG: True}) if i == 2 else m for i, m in enumerate(msgs)]
    assert marks.after_pass(out) == find_landmarks(out, None)


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the calls of the per-message checks the clear phase makes, from every
    module of it that imports them."""
    calls = {"is_processed": 0, "has_tool_calls": 0, "tool_calls_of": 0}
    patched: set[str] = set()
    for module in (landmarks, clear, clear_rewriter):
        for name in calls:
            real = getattr(access, name)
            if getattr(module, name, None) is not real:
                continue
            patched.add(name)

            def counted(msg: Any, _name: str = name, _real: Any = real) -> Any:
                calls[_name] += 1
                return _real(msg)

            monkeypatch.setattr(module, name, counted)
    assert patched == set(calls)
    return calls


def _checks_of_next_call(monkeypatch: pytest.MonkeyPatch, n_rounds: int) -> dict[str, int]:
    mw, _ = middleware(InMemoryBackend(), token_counter=chars, max_tokens_for_clear=500)
    out = mw.before_model_rewrite_state(ChatModelAgentState(messages=session(n_rounds)))
    more = [*out.messages, call_msg(("new", "grep")), Message.tool("r" * 100, "new")]
    with monkeypatch.context() as patched:
        calls = _counting(patched)
        mw.before_model_rewrite_state(ChatModelAgentState(messages=more))
    return calls


def test_a_carried_call_looks_only_at_what_arrived(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a pass has gone through a conversation, the next call, with one more round,
    makes the same few per-message checks whatever the conversation's length (before
    landmarks, every call walked the whole range from the first plain answer)."""
    short = _checks_of_next_call(monkeypatch, 200)
    assert short == _checks_of_next_call(monkeypatch, 800)
    assert short == {"is_processed": 4, "has_tool_calls": 5, "tool_calls_of": 0}


def _named(*groups: list[Round]) -> bool:
    """Every call has an id: an empty one gets a random path, different in each middleware."""
    return all(call_id for rs in groups for r in rs for call_id, _, _ in r.calls)


def _twice(messages: list[Any], config: dict[str, Any], extra: list[Any]) -> None:
    """A carried middleware and a fresh one give the same output on the carried list plus
    ``extra``, and the carried landmarks equal fresh ones."""
    # One backend: offload paths depend on what it holds (a reused id's other content
    # gets a path of its own).
    backend = InMemoryBackend()
    carried, _ = middleware(backend, **config)
    first = carried.before_model_rewrite_state(ChatModelAgentState(messages=messages))
    after = [*first.messages, *extra]
    fresh, _ = middleware(backend, **config)
    got = carried.before_model_rewrite_state(ChatModelAgentState(messages=after))
    want = fresh.before_model_rewrite_state(ChatModelAgentState(messages=after))
    assert list(got.messages) == list(want.messages)
    marks = carried._memory.landmarks
    if marks is not None:
        assert marks == find_landmarks(marks.messages, None)


@SETTINGS
@given(rs=rounds(), more=rounds(), config=CONFIGS, superseded=st.booleans())
def test_carried_equals_fresh_chat(
    rs: list[Round], more: list[Round], config: dict[str, Any], superseded: bool
) -> None:
    assume(_named(rs, more))
    base = chat_conversation(rs)
    extra = chat_conversation(more)[2:]
    _twice(base, {**config, "clear_superseded": superseded}, extra)


@SETTINGS
@given(rs=rounds(), more=rounds(), config=CONFIGS)
def test_carried_equals_fresh_agentic(
    rs: list[Round], more: list[Round], config: dict[str, Any]
) -> None:
    assume(_named(rs, more))
    _twice(agentic_conversation(rs), config, agentic_conversation(more)[2:])


# The middleware's mirror (carry_landmarks): what it keeps is never the caller's list ----


def _edits() -> dict[str, Any]:
    """Ways a caller may change the list it got back before sending it again."""
    extra = [call_msg(("c8", "grep")), Message.tool("r" * 100, "c8")]

    def replace(msgs: list[Any]) -> None:
        msgs[1] = Message.user("another question")

    def unflag(msgs: list[Any]) -> None:
        msgs[2] = dataclasses.replace(msgs[2], extra={})

    def truncate(msgs: list[Any]) -> None:
        del msgs[-4:]

    def extend(msgs: list[Any]) -> None:
        msgs.extend(extra)

    def prepend(msgs: list[Any]) -> None:
        msgs.insert(0, Message.system("new system prompt"))

    def refill(msgs: list[Any]) -> None:
        msgs[:] = [*session(7)]

    def nothing(msgs: list[Any]) -> None:
        pass

    return {f.__name__: f for f in (replace, unflag, truncate, extend, prepend, refill, nothing)}


EDITS = _edits()


def test_carry_landmarks_equals_find_landmarks_whatever_the_next_list() -> None:
    for name, edit in EDITS.items():
        first = session(6)
        carried = carry_landmarks(first, None)
        changed = list(first)
        edit(changed)
        got = carry_landmarks(changed, carried)
        assert got == find_landmarks(changed, None), name
        assert got.messages == changed and got.messages is not changed, name


def test_carry_landmarks_reads_the_list_it_is_given_and_keeps_its_own() -> None:
    msgs = session(3)
    items = list(msgs)
    marks = carry_landmarks(msgs, None)
    assert marks.messages is not msgs
    msgs.append(Message.user("later"))
    assert list(marks.messages) == items
    again = carry_landmarks(msgs, marks)
    assert again.messages is marks.messages  # the mirror is reused, brought up to date
    assert (again.shared, list(again.messages)) == (len(items), msgs)


def _approx_or_chars(kind: str) -> dict[str, Any]:
    if kind == "approx":
        return {"token_counter": ApproxTokenCounter(), "max_tokens_for_clear": 150}
    return {"token_counter": chars, "max_tokens_for_clear": 300}


@pytest.mark.parametrize("counter", ["approx", "chars"])
@pytest.mark.parametrize("edit", sorted(EDITS))
def test_carried_middleware_equals_fresh_after_the_caller_edits_what_it_returned(
    edit: str, counter: str
) -> None:
    """The caller changes the returned list in place and sends that very list again: the
    output is a fresh middleware's, and the carried landmarks are fresh ones."""
    backend = InMemoryBackend()
    config = _approx_or_chars(counter)
    carried, _ = middleware(backend, **config)
    out = carried.before_model_rewrite_state(ChatModelAgentState(messages=session(6)))
    assert any(access.is_processed(m) for m in out.messages)
    returned = out.messages
    assert isinstance(returned, list)
    EDITS[edit](returned)
    sent = list(returned)
    got = carried.before_model_rewrite_state(ChatModelAgentState(messages=returned))
    fresh, _ = middleware(
        backend, **{**config, "token_counter": _approx_or_chars(counter)["token_counter"]}
    )
    want = fresh.before_model_rewrite_state(ChatModelAgentState(messages=list(sent)))
    assert list(got.messages) == list(want.messages)
    assert returned == sent and all(a is b for a, b in zip(returned, sent, strict=True))
    assert got.messages is not returned
    marks = carried._memory.landmarks
    assert marks is not None and marks == find_landmarks(got.messages, None)
    assert marks.messages is not got.messages


def test_a_carried_middleware_never_changes_a_list_it_returned() -> None:
    """An agent appends to the list it got and sends it again; the next pass clears into
    a new list, and the list the caller holds keeps what the caller put there."""
    backend = InMemoryBackend()
    mw, _ = middleware(backend, token_counter=ApproxTokenCounter(), max_tokens_for_clear=150)
    held = mw.before_model_rewrite_state(ChatModelAgentState(messages=session(6))).messages
    assert isinstance(held, list)
    for i in range(10, 14):
        held += [call_msg((f"c{i}", "grep")), Message.tool("r" * 100, f"c{i}")]
        items = list(held)
        deep = [dataclasses.replace(m) for m in held]
        out = mw.before_model_rewrite_state(ChatModelAgentState(messages=held))
        assert out.messages is not held
        assert all(a is b for a, b in zip(held, items, strict=True)) and held == deep
        held = list(out.messages)


def test_a_failed_pass_leaves_the_carried_middleware_as_a_fresh_one() -> None:
    """A write that fails leaves the caller's list as it was, and the next call (the same
    list, the disk free again) clears as a fresh middleware does."""
    backend = FailingBackend(fail_on=0)
    config = {"token_counter": ApproxTokenCounter(), "max_tokens_for_clear": 150}
    carried, _ = middleware(backend, **config)
    first = carried.before_model_rewrite_state(ChatModelAgentState(messages=session(6)))
    backend.fail_on = backend.writes + 1  # the next write
    more = [*first.messages, call_msg(("c9", "grep")), Message.tool("r" * 100, "c9")]
    more += [call_msg(("c10", "grep")), Message.tool("r" * 100, "c10")]
    with pytest.raises(OffloadError):
        carried.before_model_rewrite_state(ChatModelAgentState(messages=more))
    got = carried.before_model_rewrite_state(ChatModelAgentState(messages=more))
    fresh, _ = middleware(backend, **{**config, "token_counter": ApproxTokenCounter()})
    want = fresh.before_model_rewrite_state(ChatModelAgentState(messages=more))
    assert list(got.messages) == list(want.messages)


class _YieldingBackend(InMemoryBackend):
    async def write(self, request: WriteRequest) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().write(request)


async def test_interleaved_async_passes_each_give_what_a_fresh_middleware_gives() -> None:
    """Two passes of one middleware interleave at their writes: the second finds no
    landmarks (the first holds them) and starts afresh; both, and the call after them,
    give what a fresh middleware gives."""
    backend = _YieldingBackend()
    config = {"token_counter": ApproxTokenCounter(), "max_tokens_for_clear": 150}
    mw, _ = middleware(backend, **config)
    first = await mw.abefore_model_rewrite_state(ChatModelAgentState(messages=session(6)))
    a = [*first.messages, call_msg(("c20", "grep")), Message.tool("a" * 100, "c20")]
    b = [*first.messages, call_msg(("c30", "grep")), Message.tool("b" * 100, "c30")]
    got_a, got_b = await asyncio.gather(
        mw.abefore_model_rewrite_state(ChatModelAgentState(messages=a)),
        mw.abefore_model_rewrite_state(ChatModelAgentState(messages=b)),
    )
    c = [*got_b.messages, call_msg(("c40", "grep")), Message.tool("c" * 100, "c40")]
    got_c = await mw.abefore_model_rewrite_state(ChatModelAgentState(messages=c))
    for sent, got in ((a, got_a), (b, got_b), (c, got_c)):
        fresh, _ = middleware(backend, **{**config, "token_counter": ApproxTokenCounter()})
        want = await fresh.abefore_model_rewrite_state(ChatModelAgentState(messages=sent))
        assert list(got.messages) == list(want.messages)
