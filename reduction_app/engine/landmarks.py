"""Where the clear phase's work starts, found without walking what it walked before.

An agent hands the clear phase, before every model call, the list it returned last time
plus what arrived since. Two positions decide the work (docs/behaviour.md §4.3):

* ``start``: the first assistant message without the processed flag, where the range
  begins. A plain-text assistant message (a final answer) never gets the flag, so in a
  long session this stays near the beginning for good;
* ``calls_from``: the first assistant message *with tool calls* and without the flag.
  Every call group before it was gone through already, so the per-call loop and the
  superseded search (§4.12) begin there: what they would meet before it, they skip.

Both are "the first message that ...", and flags are only ever added, so what the
previous pass found still holds for the part of the new list that is the same objects
(or equal ones) as its output, and only the rest has to be looked at: the per-call cost
no longer grows with the conversation (issue 11). :class:`Landmarks` is what one pass
leaves for the next; a middleware keeps the last one.

This module owns the positions, not the phase: ``clear.py`` uses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from reduction_app.engine._caches import shared_prefix
from reduction_app.engine.access import (
    AnyMessage,
    conversation_kind,
    is_processed,
    tool_calls_of,
)

__all__ = ["Landmarks", "find_landmarks"]


@dataclass(frozen=True, slots=True)
class Landmarks:
    """The two positions in one list of messages (its length when there is none)."""

    messages: tuple[AnyMessage, ...]
    kind: Literal["chat", "agentic"] | None
    """The conversation's style (``access.conversation_kind``)."""
    start: int
    calls_from: int
    shared: int = field(default=0, compare=False)
    """How many leading messages are those of the landmarks these were found from."""
    found_from: tuple[AnyMessage, ...] | None = field(default=None, compare=False)
    """The messages of those landmarks."""

    def after_pass(self, output: Sequence[AnyMessage]) -> Landmarks:
        """The positions in ``output``, a pass's result with the same indices (no message
        added or removed): flags were only added, so both positions can only move on."""
        out = tuple(output)
        return Landmarks(
            messages=out,
            kind=self.kind,
            start=_first_unprocessed(out, self.start, calls_only=False),
            calls_from=_first_unprocessed(out, self.calls_from, calls_only=True),
        )


def find_landmarks(messages: Sequence[Any], last: Landmarks | None) -> Landmarks:
    """The style and positions of ``messages``; ``last`` (those of an earlier list) answers
    for the part ``messages`` shares with it. A list mixing styles, or holding anything but
    messages, is a ``MessageError`` (from ``access.conversation_kind``)."""
    current = tuple(messages)
    shared = 0 if last is None else shared_prefix(last.messages, current)
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
        found_from=None if last is None else last.messages,
    )


def _kind(
    messages: tuple[Any, ...], shared: int, known: Literal["chat", "agentic"] | None
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
            and (not calls_only or tool_calls_of(msg))
        ):
            return i
    return len(messages)
