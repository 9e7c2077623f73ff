"""Property-based tests of the clear phase (CONVENTIONS "Reducers are deterministic";
decisions 5, 6, 7): over random conversations it never splits a call from its result,
never loses content, is idempotent, and never changes what the caller passed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from reduction_app.engine import ChatModelAgentState, InMemoryBackend
from reduction_app.engine.blocks import AgenticMessage, FunctionToolResult
from reduction_app.engine.messages import Message
from reduction_app.engine.notices import is_clear_placeholder
from tests.conftest import max_examples
from tests.engine.clear_support import (
    agentic_call,
    agentic_results,
    agentic_text,
    assert_untouched,
    call_msg,
    middleware,
    snapshot,
)

SETTINGS = settings(max_examples=max_examples(100), deadline=None)
PATH_RE = re.compile(r"Tool result saved to: (\S+)\n")
TEXT = st.text(alphabet="ab \n{}字", max_size=300)
IDS = st.sampled_from(["call_1", "call_2", "dup", "x/../y", ""])


@dataclass(frozen=True)
class Round:
    calls: list[tuple[str, str, str]]
    """``(call id, tool name, result text)`` per call."""
    order: list[int]
    """The order in which the results come back."""
    groups: list[int]
    """Agentic only: how many results each result message carries."""
    user_before: bool
    reply_after: bool


@st.composite
def rounds(draw: st.DrawFn) -> list[Round]:
    out = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 3))
        calls = [
            (
                draw(st.one_of(IDS, st.uuids().map(str))),
                draw(st.sampled_from(["t", "u"])),
                draw(TEXT),
            )
            for _ in range(n)
        ]
        order = draw(st.permutations(range(n)))
        groups: list[int] = []
        left = n
        while left:
            size = draw(st.integers(1, left))
            groups.append(size)
            left -= size
        out.append(Round(calls, list(order), groups, draw(st.booleans()), draw(st.booleans())))
    return out


CONFIGS = st.fixed_dictionaries(
    {
        "max_tokens_for_clear": st.integers(1, 60),
        "clear_retention_suffix_limit": st.sampled_from([-1, 0, 1, 2]),
        "clear_at_least_tokens": st.sampled_from([0, 0, 1, 50]),
        "clear_exclude_tools": st.sampled_from([(), ("u",)]),
    }
)


def chat_conversation(rs: list[Round]) -> list[Message]:
    msgs = [Message.system("system prompt"), Message.user("first question")]
    for r in rs:
        if r.user_before:
            msgs.append(Message.user("more"))
        msgs.append(call_msg(*((cid, name) for cid, name, _ in r.calls)))
        msgs += [Message.tool(r.calls[i][2], r.calls[i][0]) for i in r.order]
        if r.reply_after:
            msgs.append(Message.assistant("reply"))
    return msgs


def agentic_conversation(rs: list[Round]) -> list[AgenticMessage]:
    msgs = [agentic_text("system", "system prompt"), agentic_text("user", "first question")]
    for r in rs:
        if r.user_before:
            msgs.append(agentic_text("user", "more"))
        msgs.append(agentic_call(*((cid, name) for cid, name, _ in r.calls)))
        ordered = [(r.calls[i][0], r.calls[i][2]) for i in r.order]
        start = 0
        for size in r.groups:
            msgs.append(agentic_results(*ordered[start : start + size]))
            start += size
        if r.reply_after:
            msgs.append(agentic_text("assistant", "reply"))
    return msgs


def result_texts(msg: Any) -> list[tuple[str, str]]:
    """``(call id, text)`` per result a message holds (none for other messages)."""
    if isinstance(msg, Message):
        return [(msg.tool_call_id, msg.content)] if msg.role == "tool" else []
    return [
        (b.call_id, "".join(c.text for c in b.content))
        for b in msg.content_blocks
        if isinstance(b, FunctionToolResult)
    ]


def call_ids(msg: Any) -> list[str]:
    if isinstance(msg, Message):
        return [tc.id for tc in msg.tool_calls]
    return [b.call_id for b in msg.content_blocks if b.type == "function_tool_call"]


def shape(msgs: list[Any]) -> list[tuple[str, list[str], list[str]]]:
    return [(m.role, call_ids(m), [cid for cid, _ in result_texts(m)]) for m in msgs]


def check_properties(original: list[Any], config: dict[str, Any]) -> None:
    backend = InMemoryBackend()
    mw, _ = middleware(backend, **config)
    s = ChatModelAgentState(messages=original)
    snap = snapshot(s)
    out = mw.before_model_rewrite_state(s)

    # (4) the caller's list and messages are unchanged
    assert_untouched(s, snap)

    # (1) every call keeps its results right after it, and no result loses its call
    assert shape(list(out.messages)) == shape(original)

    # (2) nothing is lost: each replaced result's file holds exactly the original text
    for before, after in zip(original, out.messages, strict=True):
        for (cid, old), (cid2, new) in zip(result_texts(before), result_texts(after), strict=True):
            assert cid == cid2
            if new != old:
                assert is_clear_placeholder(new)
                (path,) = PATH_RE.findall(new)
                assert path.startswith("/tmp/clear/")
                assert backend.read(path) == old

    # (3) idempotent: a second pass over its own output changes nothing, writes nothing
    files = backend.files
    again = mw.before_model_rewrite_state(ChatModelAgentState(messages=list(out.messages)))
    assert list(again.messages) == list(out.messages)
    assert backend.files == files

    # decision 5: the output sent back with a new round leaves every earlier file intact
    grown = [*out.messages, *original[1:]]
    mw.before_model_rewrite_state(ChatModelAgentState(messages=grown))
    assert all(backend.files[p] == c for p, c in files.items())


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_properties_chat(rs: list[Round], config: dict[str, Any]) -> None:
    check_properties(chat_conversation(rs), config)


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_clear_properties_agentic(rs: list[Round], config: dict[str, Any]) -> None:
    check_properties(agentic_conversation(rs), config)


@SETTINGS
@given(first=rounds(), later=rounds(), config=CONFIGS)
def test_clear_properties_appending_keeps_every_offload_file(
    first: list[Round], later: list[Round], config: dict[str, Any]
) -> None:
    """Decision 5: send the output back with new rounds appended, twice over."""
    backend = InMemoryBackend()
    mw, _ = middleware(backend, **config)
    out = mw.before_model_rewrite_state(ChatModelAgentState(messages=chat_conversation(first)))
    files = backend.files
    grown = [*out.messages, *chat_conversation(later)[1:]]
    out2 = mw.before_model_rewrite_state(ChatModelAgentState(messages=grown))
    assert all(backend.files[p] == c for p, c in files.items())
    for done, now in zip(out.messages, out2.messages, strict=False):
        for (_, old), (_, new) in zip(result_texts(done), result_texts(now), strict=True):
            if is_clear_placeholder(old):
                assert new == old
    for before, after in zip(grown, out2.messages, strict=True):
        for (_, old), (_, new) in zip(result_texts(before), result_texts(after), strict=True):
            if new != old:
                (path,) = PATH_RE.findall(new)
                assert backend.read(path) == old
