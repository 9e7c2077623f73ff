"""Tests for reduction_app.engine.landmarks: where the clear phase's work starts, carried
from one call to the next (issue 11), and the guarantee that a carried middleware gives
exactly what a fresh one gives."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from reduction_app.engine import access, clear, landmarks
from reduction_app.engine.backends import InMemoryBackend
from reduction_app.engine.clear import ChatModelAgentState, clear_range
from reduction_app.engine.errors import MessageError
from reduction_app.engine.landmarks import Landmarks, find_landmarks
from reduction_app.engine.messages import Message
from tests.engine.clear_support import agentic_text, call_msg, chars, middleware
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
    """Counts the calls of the per-message checks the clear phase makes."""
    calls = {"is_processed": 0, "tool_calls_of": 0}
    for module in (landmarks, clear):
        for name in calls:
            real = getattr(access, name)

            def counted(msg: Any, _name: str = name, _real: Any = real) -> Any:
                calls[_name] += 1
                return _real(msg)

            monkeypatch.setattr(module, name, counted)
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
    assert short == {"is_processed": 4, "tool_calls_of": 5}


def _named(*groups: list[Round]) -> bool:
    """Every call has an id: an empty one gets a random path, different in each middleware."""
    return all(call_id for rs in groups for r in rs for call_id, _, _ in r.calls)


def _twice(messages: list[Any], config: dict[str, Any], extra: list[Any]) -> None:
    """A carried middleware and a fresh one give the same output on the carried list plus
    ``extra``, and the carried landmarks equal fresh ones."""
    # One backend: offload paths depend on what it holds (a reused id gets "-2").
    backend = InMemoryBackend()
    carried, _ = middleware(backend, **config)
    first = carried.before_model_rewrite_state(ChatModelAgentState(messages=messages))
    after = [*first.messages, *extra]
    fresh, _ = middleware(backend, **config)
    got = carried.before_model_rewrite_state(ChatModelAgentState(messages=after))
    want = fresh.before_model_rewrite_state(ChatModelAgentState(messages=after))
    assert list(got.messages) == list(want.messages)
    marks = carried._rt.landmarks
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
