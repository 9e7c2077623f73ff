"""Where the clear phase's work starts (docs/behaviour.md §4.3), found without walking again
what the last pass walked: :class:`Landmarks` is what one pass leaves for the next, so a
call costs what arrived since, not the whole conversation. The positions, not the
phase: ``_phase`` and ``_pass`` use them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reduction_app.engine._tokens._caches import shared_prefix
from reduction_app.engine.access import (
    AnyMessage,
    conversation_kind,
    has_tool_calls,
    is_processed,
)

__all__ = ["Landmarks", "carry_landmarks", "find_landmarks", "range_end"]


@dataclass(frozen=True, slots=True, eq=False)
class Landmarks:
    """The two positions in one list of messages (its length when there is none).

    ``start`` is the first assistant message without the processed flag, where the range
    begins (a final answer never gets the flag, so in a long session it stays near the
    beginning); ``calls_from`` the first such message *with tool calls*, where the
    per-call loop and the superseded search begin. Both are "the first message that ...",
    and flags are only ever added, so what the last pass found still holds for the part
    of a new list that is the same (or equal) messages as its output: only the rest is
    read. The range's end (:func:`range_end`) is found afresh, from the end of the list.

    A middleware keeps them over a *mirror*: a private list brought to the content of each
    list it is handed (:func:`carry_landmarks`) and each it returns, editing only the tail
    and the positions a pass wrote. The caller may change the list it got back, so the
    mirror is never that list; comparing the two is the one pass over the whole
    conversation a call makes (a list compare checks identity inline, in C).

    Equal when the positions, the style and the messages are; ``shared``, ``counted`` and
    ``found_from`` are bookkeeping and not compared."""

    messages: Sequence[AnyMessage]
    """The list the positions are in: a tuple, or in the landmarks a middleware keeps,
    its private mirror (a list only the pass holding these landmarks edits)."""
    kind: Literal["chat", "agentic"] | None
    """The conversation's style (``access.conversation_kind``)."""
    start: int
    calls_from: int
    shared: int = 0
    """How many leading messages are those of the landmarks these were found from."""
    counted: object = None
    """What names ``messages`` to the token counter (``CachingCounter.count_after``'s
    ``key``): the tuple itself, or a token for a mirror, whose content changes."""
    found_from: object = None
    """The ``counted`` of the landmarks these were found from."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Landmarks):
            return NotImplemented
        mine = (self.kind, self.start, self.calls_from, tuple(self.messages))
        return mine == (other.kind, other.start, other.calls_from, tuple(other.messages))

    def after_pass(self, output: Sequence[AnyMessage], counted: object = None) -> Landmarks:
        """The positions in ``output``, a pass's result with the same indices (no message
        added or removed): flags were only added, so both positions can only move on.
        With ``counted``, ``output`` is the middleware's mirror, handed over as it is and
        named to the counter by ``counted``; otherwise it is copied into a tuple."""
        out = tuple(output) if counted is None else output
        return Landmarks(
            messages=out,
            kind=self.kind,
            start=_first_unprocessed(out, self.start, calls_only=False),
            calls_from=_first_unprocessed(out, self.calls_from, calls_only=True),
            counted=out if counted is None else counted,
        )


def find_landmarks(messages: Sequence[Any], last: Landmarks | None) -> Landmarks:
    """The style and positions of ``messages``; ``last`` (those of an earlier list) answers
    for the part ``messages`` shares with it. A list mixing styles, or holding anything but
    messages, is a ``MessageError`` (from ``access.conversation_kind``)."""
    current = tuple(messages)
    shared = 0 if last is None else shared_prefix(last.messages, current)
    return _found(current, shared, last, current)


def carry_landmarks(messages: list[Any], last: Landmarks | None) -> Landmarks:
    """As :func:`find_landmarks`, for a middleware: ``last`` is the one it kept and is used
    up, its mirror brought to the content of ``messages`` and kept in the result (with a
    new ``counted`` token). ``messages`` is only read, and not kept.

    When ``messages`` is the mirror's list plus new messages (an agent's next call), this
    costs one list comparison (C, identity first) and the new messages; a list that
    differs earlier costs a search for the first difference and a copy from there."""
    if last is None:
        mirror: list[Any] = list(messages)
        return _found(mirror, 0, None, object())
    mirror = last.messages if isinstance(last.messages, list) else list(last.messages)
    old = len(mirror)
    if len(messages) >= old:
        mirror += messages[old:]
        shared = old if mirror == messages else shared_prefix(mirror, messages)
    else:
        shared = shared_prefix(mirror, messages)
    if shared < old or len(mirror) != len(messages):
        mirror[shared:] = messages[shared:]
    return _found(mirror, shared, last, object())


def range_end(messages: Sequence[AnyMessage], retention: int) -> int:
    """Where the retained rounds begin: the ``retention``-th latest assistant message with
    tool calls (the end of the list when ``retention`` keeps none)."""
    end, left = len(messages), retention
    while left > 0 and end > 0:
        if has_tool_calls(messages[end - 1]):
            left -= 1
        end -= 1
    return end


def _found(
    current: Sequence[Any], shared: int, last: Landmarks | None, counted: object
) -> Landmarks:
    """The landmarks of ``current``, whose first ``shared`` messages are those of ``last``."""
    kind = _kind(current, shared, None if last is None else last.kind)
    start = last.start if last is not None and last.start < shared else None
    calls_from = last.calls_from if last is not None and last.calls_from < shared else None
    if start is None:
        start = _first_unprocessed(current, shared, calls_only=False)
    if calls_from is None:
        calls_from = _first_unprocessed(current, shared, calls_only=True)
    return Landmarks(
        messages=current,
        kind=kind,
        start=start,
        calls_from=calls_from,
        shared=shared,
        counted=counted,
        found_from=None if last is None else last.counted,
    )


def _kind(
    messages: Sequence[Any], shared: int, known: Literal["chat", "agentic"] | None
) -> Literal["chat", "agentic"] | None:
    """The style of ``messages`` when the first ``shared`` are known to be ``known``."""
    if not shared or known is None:
        return conversation_kind(messages)
    rest = conversation_kind(messages[shared:])
    if rest not in (None, known):
        return conversation_kind(messages)  # raises, naming the first message out of style
    return known


def _first_unprocessed(messages: Sequence[AnyMessage], lo: int, *, calls_only: bool) -> int:
    for i in range(lo, len(messages)):
        msg = messages[i]
        if (
            msg.role == "assistant"
            and not is_processed(msg)
            and (not calls_only or has_tool_calls(msg))
        ):
            return i
    return len(messages)
