"""Whether every tool call keeps its result where each provider requires it, by the rules
docs/behaviour.md §4.10 lists: the problems of a conversation under one wire format
(:func:`pairing_problems`), and those an edit brought in (:func:`check_edit` raises
``PairingError`` for them; the clear phase calls it after each of its edits).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reduction_app.engine._tokens._caches import shared_prefix
from reduction_app.engine.access import AnyMessage, classify, conversation_kind
from reduction_app.engine.blocks import AgenticMessage, FunctionToolCall, FunctionToolResult
from reduction_app.engine.errors import MessageError, PairingError
from reduction_app.engine.formats.registry import parse
from reduction_app.engine.messages import Message

__all__ = [
    "PAIRING_RULES",
    "PairingProblem",
    "broken_by_edit",
    "check_edit",
    "edited_region",
    "pairing_problems",
    "shared_tail",
    "wire_pairing_problems",
]

Rules = Literal["openai_chat", "anthropic", "openai_responses"]
PAIRING_RULES: tuple[Rules, ...] = ("openai_chat", "anthropic", "openai_responses")
"""The rule sets, named after the wire formats that follow them."""


@dataclass(frozen=True, slots=True)
class PairingProblem:
    """One place where a conversation splits a tool call from its result."""

    index: int
    """The message the problem is at: the call's message, or the result's."""
    call_id: str
    """The call id concerned."""
    message: str
    """What is wrong, as a sentence."""

    def __str__(self) -> str:
        return f"messages[{self.index}]: {self.message}"


def pairing_problems(
    fmt: str, messages: Sequence[AnyMessage], *, allow_pending: bool = True
) -> list[PairingProblem]:
    """Every pairing problem of ``messages`` under the rules of wire format ``fmt``, in
    message order; empty when a provider of that format would take the conversation.
    Calls still waiting for their results at the very end are not a problem unless
    ``allow_pending`` is false (could the conversation be sent right now?).
    ``messages`` must be of the style ``fmt`` parses into (a ``MessageError`` otherwise)."""
    rules = _rules(fmt)
    kind = conversation_kind(messages)
    expected = "chat" if rules == "openai_chat" else "agentic"
    if kind not in (None, expected):
        raise MessageError(f"pairing rules {fmt!r} take {expected} messages, got {kind} ones")
    return _problems(messages, rules, 0, len(messages), allow_pending)


def wire_pairing_problems(
    fmt: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    system: Any = None,
    allow_pending: bool = True,
) -> list[PairingProblem]:
    """:func:`pairing_problems` of a wire-format message list, parsed by the format's own
    parser (indices are then those of the parsed messages: an Anthropic ``system``
    parameter is message 0, and Responses items are grouped into messages)."""
    return pairing_problems(fmt, parse(fmt, messages, system=system), allow_pending=allow_pending)


def broken_by_edit(
    before: Sequence[AnyMessage],
    after: Sequence[AnyMessage],
    lo: int,
    before_hi: int,
    after_hi: int,
) -> list[PairingProblem]:
    """The problems ``after`` has where ``before`` had none: ``after`` is ``before`` with
    ``before[lo:before_hi]`` replaced by ``after[lo:after_hi]``. Empty when the edit kept
    every call with its result, or when ``before`` was already unpaired around the edit.

    Only the edited messages and their neighbours are read: first whether they make the
    same calls and results in the same places (then nothing can have changed); if not,
    the region from the last assistant message before the edit to the end of the tool
    results after it, under OpenAI chat rules for chat messages and, for agentic ones,
    Anthropic's when ``before`` follows them there, else Responses' (over the whole list,
    as those pair across any distance). The rules used are the strictest ``before``
    meets, as the engine does not know which provider an agentic conversation is for;
    likewise an edit may leave calls pending at the end only if ``before`` had some."""
    if before_hi == after_hi:
        for i in range(lo, before_hi):
            if not _pair_alike(before[i], after[i]):
                break
        else:
            return []
    sample = before[0] if before else after[0]
    style = "agentic" if isinstance(sample, AgenticMessage) else "chat"
    start = lo - 1
    while start > 0 and not _is_assistant(before[start]):
        start -= 1
    start = max(start, 0)
    stop_before, stop_after = _run_end(before, before_hi), _run_end(after, after_hi)
    first: Rules = "openai_chat" if style == "chat" else "anthropic"
    for pending in (False, True):
        if not _problems(before, first, start, stop_before, pending):
            return _problems(after, first, start, stop_after, pending)
    if first == "anthropic":
        for pending in (False, True):
            if not _problems(before, "openai_responses", 0, len(before), pending):
                return _problems(after, "openai_responses", 0, len(after), pending)
    return []


def check_edit(
    step: str,
    before: Sequence[AnyMessage],
    after: Sequence[AnyMessage],
    region: tuple[int, int, int] | None = None,
) -> None:
    """Raise :class:`PairingError` naming ``step`` when ``after`` splits a call from its
    result where ``before`` did not (:func:`broken_by_edit`); ``region`` is where they
    differ (``lo, before_hi, after_hi``), found from the two tuples when not given."""
    if region is None:
        assert isinstance(before, tuple) and isinstance(after, tuple)
        region = edited_region(before, after)
    problems = broken_by_edit(before, after, *region)
    if problems:
        raise PairingError(step, problems)


def shared_tail(a: Sequence[AnyMessage], b: Sequence[AnyMessage], head: int) -> int:
    """How many trailing messages ``a`` and ``b`` share (the same objects), not counting
    their first ``head``, which differ somewhere."""
    n = 0
    limit = min(len(a), len(b)) - head
    while n < limit and a[len(a) - 1 - n] is b[len(b) - 1 - n]:
        n += 1
    return n


def edited_region(
    before: tuple[AnyMessage, ...], after: tuple[AnyMessage, ...]
) -> tuple[int, int, int]:
    """``(lo, before_hi, after_hi)``: ``after`` is ``before`` with ``before[lo:before_hi]``
    replaced by ``after[lo:after_hi]``, the shared head and tail (the same or equal
    messages) left out. Tuple compares, loops in C, about ``2n`` items at most."""
    lo = shared_prefix(before, after)
    n = min(len(before), len(after)) - lo
    b, a = len(before), len(after)
    if before[b - n :] == after[a - n :]:
        tail = n
    else:
        tail, miss = 0, n  # the last `tail` items match; the last `miss` do not
        while miss - tail > 1:
            mid = (tail + miss) // 2
            if before[b - mid : b - tail] == after[a - mid : a - tail]:
                tail = mid
            else:
                miss = mid
    return lo, b - tail, a - tail


def _rules(fmt: str) -> Rules:
    for rules in PAIRING_RULES:
        if rules == fmt:
            return rules
    raise MessageError(f"unknown pairing rules {fmt!r}; expected one of {list(PAIRING_RULES)}")


def _skeleton(msg: AnyMessage) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What pairing reads of a message: its role, call ids and result ids, in order."""
    if isinstance(msg, Message):
        calls = tuple(c.id for c in msg.tool_calls)
        return msg.role, calls, (msg.tool_call_id,) if msg.role == "tool" else ()
    return msg.role, _call_ids(msg), _result_ids(msg)


def _pair_alike(x: AnyMessage, y: AnyMessage) -> bool:
    """Whether two messages make the same calls and results (the clear phase's in-place
    edits share the call tuples and block tuples they do not touch: checked first)."""
    if x is y:
        return True
    if isinstance(x, Message) and isinstance(y, Message):
        return (
            x.role == y.role
            and x.tool_call_id == y.tool_call_id
            and (x.tool_calls is y.tool_calls or _skeleton(x) == _skeleton(y))
        )
    if (
        isinstance(x, AgenticMessage)
        and isinstance(y, AgenticMessage)
        and x.role == y.role
        and x.content_blocks is y.content_blocks
    ):
        return True
    return _skeleton(x) == _skeleton(y)


def _is_assistant(msg: AnyMessage) -> bool:
    return msg.role == "assistant"


def _run_end(messages: Sequence[AnyMessage], index: int) -> int:
    """The first message at or after ``index`` that is not a tool result."""
    while index < len(messages) and classify(messages[index]) == "tool_result":
        index += 1
    return index


def _call_ids(msg: AnyMessage) -> tuple[str, ...]:
    if msg.role != "assistant":
        return ()
    if isinstance(msg, Message):
        return tuple(c.id for c in msg.tool_calls)
    return tuple(b.call_id for b in msg.content_blocks if isinstance(b, FunctionToolCall))


def _result_ids(msg: AnyMessage) -> tuple[str, ...]:
    if isinstance(msg, Message):
        return (msg.tool_call_id,) if msg.role == "tool" else ()
    if msg.role != "user":
        return ()
    return tuple(b.call_id for b in msg.content_blocks if isinstance(b, FunctionToolResult))


def _call_names(msg: AnyMessage) -> dict[str, str]:
    if isinstance(msg, Message):
        return {c.id: c.name for c in msg.tool_calls}
    return {b.call_id: b.name for b in msg.content_blocks if isinstance(b, FunctionToolCall)}


def _problems(
    messages: Sequence[AnyMessage], rules: Rules, lo: int, hi: int, allow_pending: bool
) -> list[PairingProblem]:
    """The problems at ``messages[lo:hi]`` (those whose call or result sits there); the
    messages around are read as the rules need."""
    if rules == "openai_responses":
        return _responses(messages, lo, hi, allow_pending)
    out: list[PairingProblem] = []
    n = len(messages)
    for i in range(lo, hi):
        msg = messages[i]
        calls = _call_ids(msg)
        if calls:
            nxt = _run_end(messages, i + 1)
            # Anthropic takes all of a turn's results in one message: only that one, or
            # none yet, may follow a pending call.
            if allow_pending and nxt == n and (rules == "openai_chat" or i + 2 >= n):
                continue
            if rules == "openai_chat":
                answered = {r for j in range(i + 1, nxt) for r in _result_ids(messages[j])}
                until = "the conversation ends" if nxt == n else f"before messages[{nxt}]"
                where = f"the tool messages after it ({until})"
            elif i + 1 < n:
                answered = set(_result_ids(messages[i + 1]))
                where = f"the next message, messages[{i + 1}]"
            else:
                answered = set()
                where = "a next message: the conversation ends with it"
            names = _call_names(msg)
            out += [
                PairingProblem(
                    i, call_id, f"tool call {call_id!r} ({names[call_id]}) has no result in {where}"
                )
                for call_id in dict.fromkeys(calls)
                if call_id not in answered
            ]
        results = _result_ids(msg)
        if not results:
            continue
        owner = i - 1
        if rules == "openai_chat":
            while owner >= 0 and classify(messages[owner]) == "tool_result":
                owner -= 1
        made = set(_call_ids(messages[owner])) if owner >= 0 else set()
        for call_id in dict.fromkeys(results):
            if call_id in made:
                continue
            if owner < 0 or not made:
                kind = "tool message" if rules == "openai_chat" else "tool_result"
                problem = f"{kind} for call {call_id!r} follows no assistant message with calls"
            else:
                problem = (
                    f"result for call {call_id!r} answers no call of the assistant message "
                    f"at messages[{owner}]"
                )
            out.append(PairingProblem(i, call_id, problem))
    return out


def _responses(
    messages: Sequence[AnyMessage], lo: int, hi: int, allow_pending: bool
) -> list[PairingProblem]:
    """Responses pairs a call and its output across any distance, in that order."""
    first_call: dict[str, int] = {}
    last_output: dict[str, int] = {}
    for i, msg in enumerate(messages):
        for call_id in _call_ids(msg):
            first_call.setdefault(call_id, i)
        for call_id in _result_ids(msg):
            last_output[call_id] = i
    # Calls whose message is followed only by tool results are still pending.
    pending_from = len(messages)
    while pending_from > 0 and classify(messages[pending_from - 1]) == "tool_result":
        pending_from -= 1
    pending_from -= 1
    out: list[PairingProblem] = []
    for i in range(lo, hi):
        msg = messages[i]
        names = _call_names(msg)
        for call_id in dict.fromkeys(_call_ids(msg)):
            if last_output.get(call_id, -1) > i or (allow_pending and i >= pending_from):
                continue
            name = names[call_id]
            problem = f"function_call {call_id!r} ({name}) has no function_call_output after it"
            out.append(PairingProblem(i, call_id, problem))
        for call_id in dict.fromkeys(_result_ids(msg)):
            if first_call.get(call_id, i) < i:
                continue
            problem = f"function_call_output for {call_id!r} has no function_call before it"
            out.append(PairingProblem(i, call_id, problem))
    return out
