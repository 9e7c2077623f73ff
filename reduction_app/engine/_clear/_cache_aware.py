"""Whether a clear pass pays for the prompt-cache rewrite it causes: the arithmetic of the
opt-in ``clear_cache_aware`` strategy, ``S × (w + (R − 1) × r) − B × (w − r)`` and the
counts it needs (docs/behaviour.md §4.14). ``_phase`` decides what to do with the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from reduction_app.engine.access import AnyMessage

__all__ = ["CacheEstimate", "cache_ceiling", "cached_end", "calls_so_far"]


@dataclass(frozen=True, slots=True)
class CacheEstimate:
    """What a pass would save and what it would cost, in tokens and price percents."""

    saved: int
    """Tokens the pass removes (``S``)."""
    rewritten: int
    """Tokens the cache held from the pass's first change to the last model call (``B``)."""
    calls_ahead: int
    """Model calls expected from this one on, this one included (``R``)."""
    read_percent: int
    write_percent: int

    @property
    def net(self) -> int:
        """The saving, in token-percents of an uncached token's price; negative when the
        pass costs more than it saves."""
        r, w = self.read_percent, self.write_percent
        return self.saved * (w + (self.calls_ahead - 1) * r) - self.rewritten * (w - r)

    @property
    def pays(self) -> bool:
        return self.net > 0


def calls_so_far(messages: Sequence[AnyMessage]) -> int:
    """The model calls the conversation shows: its assistant messages, at least one."""
    # Used as R, the calls still to come: an agent run that made n calls is, on a median
    # guess, half done.
    return max(1, sum(1 for m in messages if m.role == "assistant"))


def cached_end(messages: Sequence[AnyMessage]) -> int:
    """Where the previous call's prompt ended: right after the last assistant message
    (what follows it arrived since, so no cache holds it); 0 when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            return i + 1
    return 0


def cache_ceiling(ceiling_tokens: int, threshold: int) -> int:
    """The token count over which a pass is applied whatever the cache: the configured
    ceiling, or twice the clear threshold when it is 0."""
    return ceiling_tokens if ceiling_tokens > 0 else 2 * threshold
