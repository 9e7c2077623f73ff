"""What a replay measured: per model call, in total, and as JSON.

Values only; :mod:`simulator.replay` computes them. Two units live side by side: the
price preset's measure (what a provider bills) and, in :class:`ClearPass`, the engine's
own count (what the clear phase compares with ``max_tokens_for_clear``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reduction_app.engine import ReductionEvent

__all__ = [
    "MISS_EXAMPLES",
    "REFERENCE_STRATEGY",
    "CallRecord",
    "ClearPass",
    "MissExample",
    "ReplayResult",
    "StrategyEffect",
    "Totals",
    "strategy_effects",
]


@dataclass(frozen=True, kw_only=True)
class ClearPass:
    """What the clear phase's summary event said before one model call, in the config's
    own counter: the unit ``max_tokens_for_clear`` is in, which charts of the context
    against the threshold read (``context_tokens`` and the totals are the price preset's
    measure, what a provider bills).

    When the clear phase is off (``skip_clear``) no pass runs and no event is emitted:
    then ``threshold`` is ``None`` and both counts are the replay's count of the context
    by the config's counter, so every config's series is in the unit its threshold
    would be."""

    tokens_before: int
    """The context (messages and tool schemas) before the pass."""
    tokens_after: int
    """The context sent: after the pass, ``tokens_before`` when it changed nothing."""
    threshold: int | None
    """The ``max_tokens_for_clear`` in force; ``None`` when no pass ran."""
    cleared: bool
    """The pass cleared something (the summary's ``reason`` is ``applied``)."""
    calls_cleared: int = 0

    @classmethod
    def from_summary(cls, event: ReductionEvent) -> ClearPass:
        """The figures of a ``summary`` event."""
        return cls(
            tokens_before=event.tokens_before,
            tokens_after=event.tokens_after,
            threshold=event.threshold,
            cleared=event.reason == "applied",
            calls_cleared=event.calls_cleared,
        )


@dataclass(frozen=True, kw_only=True)
class CallRecord:
    """One model call of the replay."""

    index: int
    message_index: int = 0
    """Where the assistant message of this call sits in the recorded conversation."""
    context_tokens: int
    """Tokens sent: the tool schemas plus every message of the context."""
    cached_tokens: int
    """Tokens a prompt cache would have served: the prefix shared with the previous call
    (tool schemas first), or 0 when shorter than the minimum cacheable prefix."""
    new_tokens: int
    """``context_tokens - cached_tokens``."""
    cache_write_tokens: int = 0
    """Of ``new_tokens``, those written to the prompt cache, where the price preset bills
    cache writes apart (Anthropic): all of them once the context reaches the minimum
    cacheable prefix."""
    visible_tool_share: float
    """Share of the tool-result tokens received so far that the model still sees whole
    (1.0 before any result arrived)."""
    events: tuple[ReductionEvent, ...] = ()
    """The engine's events since the previous call: truncations of the results that
    arrived in between, then this call's clear pass."""
    clear: ClearPass
    """This call's clear pass, from its summary event (see :class:`ClearPass`)."""


@dataclass(frozen=True, kw_only=True)
class Totals:
    """A replay summed up."""

    model_calls: int
    input_tokens_billed: int
    cached_tokens: int
    uncached_tokens: int
    cache_write_tokens: int
    """Of ``uncached_tokens``, those billed as prompt-cache writes."""
    cost_usd: float
    peak_context_tokens: int
    truncations: int
    """Tool results the truncation phase cut."""
    clears: int
    """Clear passes that changed the conversation."""
    chars_offloaded: int
    """Characters written to the backend (a truncated result cleared later writes nothing
    new)."""
    refetches: int
    """Calls repeating the tool and arguments (equal as JSON) of an earlier call whose
    result was cleared or truncated by then, while no copy of it was still whole, and
    that got the same output back (or part of it): what the reduction cost the agent."""
    repeated_calls: int
    """Calls like those, but whose output differed (or never arrived): the agent asked
    again because something had changed, not because it lost sight of it."""
    mean_visible_tool_share: float
    """Mean of ``visible_tool_share`` over the calls made after the first tool result
    (1.0 when there are none): calls before it would only dilute the measure."""
    misses: int = 0
    """Tool outputs the context hid (cleared, cut, digested) holding a string the agent
    used later, at a call whose context showed that string nowhere: what the reduction
    hid that the agent needed (see :mod:`simulator.misses`). Results stored before the
    measure existed read back as 0."""
    cost_with_recovery_usd: float | None = None
    """``cost_usd`` plus, per miss, the price of recovering it
    (:data:`~simulator.misses.RECOVERY`): calls on the missing call's context (cached as
    the preset allows) bringing a share of the missed output as new input. ``None`` in
    results stored before the measure existed."""
    long_context_tokens: int = 0
    """Of ``input_tokens_billed``, those of calls whose prompt passed the price's
    long-context threshold, so billed at its long-context rates (0 without a tier)."""


@dataclass(frozen=True, kw_only=True)
class MissExample:
    """One miss, to show: the model call, the tool whose output was hidden, and the
    string the agent used from it."""

    call: int
    tool: str
    string: str


@dataclass(frozen=True, kw_only=True)
class StrategyEffect:
    """What one clear strategy did over a replay, from the engine's per-call events (the
    ``strategy`` each names: ``reference`` for Eino's own clearing)."""

    results: int
    """Tool results it cleared."""
    tokens_saved: int
    """Tokens those clears freed, in the config's own counter (negative when placeholders
    are longer than what they hid)."""


def strategy_effects(events: Iterable[ReductionEvent]) -> dict[str, StrategyEffect]:
    """Per strategy, in order of first use, the results cleared and the tokens saved."""
    counts: dict[str, list[int]] = {}
    for event in events:
        if event.phase == "clear" and event.kind == "tool":
            entry = counts.setdefault(event.strategy or REFERENCE_STRATEGY, [0, 0])
            entry[0] += 1
            entry[1] += event.tokens_saved
    return {
        name: StrategyEffect(results=n, tokens_saved=saved) for name, (n, saved) in counts.items()
    }


MISS_EXAMPLES = 5
"""How many misses a result keeps as examples."""

REFERENCE_STRATEGY = "reference"
"""How :func:`strategy_effects` names the reference's own clearing (events say ``""``)."""


@dataclass(frozen=True, kw_only=True)
class ReplayResult:
    """One conversation replayed under one config."""

    name: str
    conversation: str
    config: dict[str, Any]
    """The config as JSON fields (empty when it holds a callable counter)."""
    totals: Totals
    calls: tuple[CallRecord, ...] = field(default_factory=tuple)
    contexts: dict[int, tuple[Any, ...]] = field(default_factory=dict)
    """The messages sent at the model calls ``replay(contexts=...)`` asked for, by call
    index (message values, so not part of :meth:`to_dict`)."""
    measure: str = ""
    """How tokens were counted: the tokenizer and the provider framing."""
    estimate: bool = False
    """The counts are estimates (no tokenizer of the provider is available offline)."""
    strategies: dict[str, StrategyEffect] = field(default_factory=dict)
    """What each clear strategy did (see :func:`strategy_effects`); empty when nothing
    was cleared."""
    miss_examples: tuple[MissExample, ...] = ()
    """The first few misses (:data:`MISS_EXAMPLES` at most), in call order."""
    inferred_prefix_tokens: int | None = None
    """Tokens the recording left out before its messages (a Claude Code log's system
    prompt and tool schemas), inferred from the provider's counts and counted in every
    call's ``context_tokens`` and in the clear phase's counts (see
    :mod:`simulator.prefix`); ``None`` when none was inferred or counted."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayResult:
        """What :meth:`to_dict` wrote for a result without per-call records (a sweep's,
        see :func:`simulator.parallel.totals_only`). Per-call records would need their
        events read back, which nothing needs: a result with calls is refused."""
        if data.get("calls"):
            raise ValueError("ReplayResult.from_dict: per-call records are not read back")
        return cls(
            name=data["name"],
            conversation=data["conversation"],
            config=dict(data["config"]),
            totals=Totals(**data["totals"]),
            measure=data.get("measure", ""),
            estimate=bool(data.get("estimate", False)),
            strategies={k: StrategyEffect(**v) for k, v in data.get("strategies", {}).items()},
            miss_examples=tuple(MissExample(**m) for m in data.get("miss_examples", ())),
            inferred_prefix_tokens=data.get("inferred_prefix_tokens"),
        )

    def to_dict(self) -> dict[str, Any]:
        """The shape the CLI's ``--json`` prints (one entry of ``results``), and what a
        stored ``Simulation`` holds."""
        return {
            "name": self.name,
            "conversation": self.conversation,
            "config": self.config,
            "measure": self.measure,
            "estimate": self.estimate,
            "inferred_prefix_tokens": self.inferred_prefix_tokens,
            "totals": dataclasses.asdict(self.totals),
            "strategies": {k: dataclasses.asdict(v) for k, v in self.strategies.items()},
            "miss_examples": [dataclasses.asdict(m) for m in self.miss_examples],
            "calls": [
                {
                    "index": c.index,
                    "message_index": c.message_index,
                    "context_tokens": c.context_tokens,
                    "cached_tokens": c.cached_tokens,
                    "new_tokens": c.new_tokens,
                    "cache_write_tokens": c.cache_write_tokens,
                    "visible_tool_share": c.visible_tool_share,
                    "events": [e.to_dict() for e in c.events],
                    "clear": dataclasses.asdict(c.clear),
                }
                for c in self.calls
            ],
        }
