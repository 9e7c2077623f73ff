"""Reduction events: what each phase did, as values handed to ``on_event``.

A truncation emits one ``tool`` event per reduced output; a clear pass one ``tool`` event
per cleared call, then one ``summary`` event, also when it did nothing (``reason`` says
why). Events are emitted only once the state they describe is final: after the offload
was written and the new messages exist.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

__all__ = [
    "REASON_APPLIED",
    "REASON_BELOW_AT_LEAST",
    "REASON_BELOW_CACHE_BREAK_EVEN",
    "REASON_BELOW_THRESHOLD",
    "REASON_NOTHING_CLEARED",
    "REASON_NOTHING_IN_RANGE",
    "STRATEGY_SUPERSEDED",
    "ReductionEvent",
]

Phase = Literal["truncation", "clear"]
EventKind = Literal["tool", "summary"]

REASON_APPLIED = "applied"
REASON_BELOW_THRESHOLD = "below_threshold"
REASON_NOTHING_IN_RANGE = "nothing_in_range"
REASON_BELOW_AT_LEAST = "below_clear_at_least_tokens"
REASON_NOTHING_CLEARED = "nothing_cleared"
REASON_BELOW_CACHE_BREAK_EVEN = "below_cache_break_even"

STRATEGY_SUPERSEDED = "superseded"


@dataclass(frozen=True, kw_only=True)
class ReductionEvent:
    """One thing a phase did, or decided not to do."""

    phase: Phase
    """``truncation`` (after a tool returned) or ``clear`` (before a model call)."""
    kind: EventKind
    """``tool``: one tool output was reduced; ``summary``: the outcome of one clear pass."""
    tool_name: str = ""
    call_id: str = ""
    chars_before: int = 0
    """Characters of the reduced text before (``tool`` events; 0 in summaries)."""
    chars_after: int = 0
    tokens_before: int = 0
    """Tokens by the config's counter: for a truncation, of the output text; for a cleared
    call, of the result message holding it (the counts the pass already made, role lines
    included), or of the texts when that message holds several results or the call's
    arguments changed; for a summary, of the whole conversation."""
    tokens_after: int = 0
    tokens_saved: int = 0
    """``tokens_before - tokens_after``; negative when the replacement is longer."""
    offload_path: str = ""
    """Where the original now lives; empty when nothing was offloaded."""
    streamed: bool = False
    """Whether the output was a stream (truncation only)."""
    applied: bool = False
    """``summary`` only: whether the pass changed the conversation."""
    calls_cleared: int = 0
    """``summary`` only: how many tool calls were cleared."""
    reason: str = ""
    """``summary`` only: ``applied``; ``nothing_cleared`` (the pass ran, marked the calls
    it went through, and found nothing to clear); or why nothing happened:
    ``below_threshold``, ``nothing_in_range``, ``below_clear_at_least_tokens``, or
    ``below_cache_break_even`` (``clear_cache_aware``: the pass would cost more in prompt
    cache rewrites than it saves)."""
    threshold: int = 0
    """``summary`` only: the ``max_tokens_for_clear`` in force."""
    strategy: str = ""
    """A cleared call (``clear`` ``tool`` events) only: which strategy cleared it. Empty for
    the reference's clearing of the range; ``superseded`` when ``clear_superseded`` cleared
    it because a later call shows the same output (:data:`STRATEGY_SUPERSEDED`)."""

    def to_dict(self) -> dict[str, Any]:
        """The event as a JSON-ready dict."""
        # Every field is a str, int or bool: no deep copy (``asdict``) is needed.
        return {name: getattr(self, name) for name in _FIELD_NAMES}


_FIELD_NAMES = tuple(f.name for f in fields(ReductionEvent))
