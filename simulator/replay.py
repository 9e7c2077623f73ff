"""Replaying a recorded conversation as if the agent had run with a given config.

Each tool result passes through truncation as it arrives and the clear phase runs
before each model call, as the agent would have lived it; recorded answers stay as
recorded and no model is called. :func:`replay_many` replays several configs in one
walk where they share, each result the one :func:`replay` gives alone. The result
values live in :mod:`simulator.results`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from reduction_app.engine import AgenticMessage, ReductionConfig
from simulator.branches import Branch
from simulator.members import Member
from simulator.prepared import Prepared
from simulator.pricing import DEFAULT_PRICING, Pricing
from simulator.recording import RecordedConversation
from simulator.results import (
    MISS_EXAMPLES,
    CallRecord,
    MissExample,
    ReplayResult,
    Totals,
    strategy_effects,
)

__all__ = ["DEFAULT_MIN_CACHEABLE_PREFIX", "Prepared", "no_reduction", "replay", "replay_many"]

DEFAULT_MIN_CACHEABLE_PREFIX = 1024
"""Tokens: the shortest prefix OpenAI and Anthropic prompt caches serve."""

Config = ReductionConfig | Mapping[str, Any] | None


def no_reduction() -> dict[str, Any]:
    """The baseline config: both phases off."""
    return {"skip_truncation": True, "skip_clear": True}


def replay(
    conversation: RecordedConversation,
    config: Config,
    *,
    name: str | None = None,
    pricing: Pricing = DEFAULT_PRICING,
    min_cacheable_prefix: int | None = None,
    contexts: Collection[int] | None = None,
    inferred_prefix: bool = True,
) -> ReplayResult:
    """Replay ``conversation`` under ``config`` (``None``: no reduction) and measure it.

    ``min_cacheable_prefix``: tokens, the shortest prefix a prompt cache serves; ``None``:
    the price preset's. ``contexts``: indices of model calls whose messages (as sent,
    after the clear phase) the result keeps in ``ReplayResult.contexts``; calls past the
    end are ignored. ``inferred_prefix``: count the prefix a recording left out, where one
    is inferred (see :mod:`simulator.prefix`).
    """
    results = replay_many(
        conversation,
        [(name or "config", config)],
        pricing=pricing,
        min_cacheable_prefix=min_cacheable_prefix,
        contexts=contexts,
        inferred_prefix=inferred_prefix,
    )
    return results[0]


def replay_many(
    conversation: RecordedConversation,
    configs: Sequence[tuple[str, Config]],
    *,
    pricing: Pricing = DEFAULT_PRICING,
    min_cacheable_prefix: int | None = None,
    contexts: Collection[int] | None = None,
    prepared: Prepared | None = None,
    done: Callable[[list[int]], None] | None = None,
    inferred_prefix: bool = True,
) -> list[ReplayResult]:
    """Replay each ``(name, config)`` as :func:`replay` does, in one walk where they share
    (see :mod:`simulator.branches`); results in the order of ``configs``.

    ``prepared``: the conversation already prepared under ``pricing`` (and
    ``inferred_prefix``), to share its counts with earlier calls too (a process replaying
    many batches keeps one). ``done(positions)`` is called as configs finish, with their
    positions in ``configs``.
    """
    if prepared is None:
        prepared = Prepared(conversation, pricing, inferred_prefix=inferred_prefix)
    elif prepared.conversation is not conversation or prepared.pricing != pricing:
        raise ValueError("prepared: made for another conversation or price preset")
    elif prepared.inferred_prefix != inferred_prefix:
        raise ValueError("prepared: made with the inferred prefix switched the other way")
    if min_cacheable_prefix is None:
        min_cacheable_prefix = pricing.min_cacheable_prefix
    agentic = any(isinstance(m, AgenticMessage) for m in prepared.messages[:1])
    members = [
        Member(i, name, config, prepared.prefix, agentic=agentic)
        for i, (name, config) in enumerate(configs)
    ]
    groups: dict[str, list[Member]] = {}
    alone: list[list[Member]] = []
    for member in members:
        if member.key is None:
            alone.append([member])
        else:
            groups.setdefault(member.key, []).append(member)
    wanted = contexts or ()
    todo = [Branch(prepared, group, min_cacheable_prefix, wanted) for group in alone]
    todo += [Branch(prepared, group, min_cacheable_prefix, wanted) for group in groups.values()]
    ended: dict[int, Branch] = {}
    while todo:
        branch = todo.pop()
        branch.run(todo.append)
        for member in branch.members:
            ended[member.position] = branch
        if done is not None:
            done([m.position for m in branch.members])
    return [_result(prepared, m, ended[m.position]) for m in members]


def _result(prepared: Prepared, member: Member, branch: Branch) -> ReplayResult:
    pricing = prepared.pricing
    calls = [
        CallRecord(
            index=n,
            message_index=measure.message_index,
            context_tokens=measure.context_tokens,
            cached_tokens=measure.cached_tokens,
            new_tokens=measure.new_tokens,
            cache_write_tokens=measure.cache_write_tokens,
            visible_tool_share=round(1.0 if measure.share is None else measure.share, 6),
            events=events,
            clear=clear,
        )
        for n, (measure, (events, clear)) in enumerate(
            zip(branch.measures, member.passes, strict=True)
        )
    ]
    shares = [m.share for m in branch.measures if m.share is not None]
    billed = sum(c.context_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    writes = sum(c.cache_write_tokens for c in calls)
    cost, long_tokens = _cost(pricing, calls)
    events = member.events
    chars = branch.files.chars if branch.files is not None else member.chars_offloaded
    totals = Totals(
        model_calls=len(calls),
        input_tokens_billed=billed,
        cached_tokens=cached,
        uncached_tokens=billed - cached,
        cache_write_tokens=writes,
        cost_usd=round(cost, 6),
        long_context_tokens=long_tokens,
        peak_context_tokens=max((c.context_tokens for c in calls), default=0),
        truncations=sum(1 for e in events if e.kind == "tool" and e.phase == "truncation"),
        clears=sum(1 for e in events if e.kind == "summary" and e.reason == "applied"),
        chars_offloaded=chars,
        refetches=branch.repeats.refetches,
        repeated_calls=branch.repeats.repeated,
        mean_visible_tool_share=round(sum(shares) / len(shares), 6) if shares else 1.0,
        misses=len(branch.missed),
        cost_with_recovery_usd=round(cost + sum(m.recovery_usd for m in branch.missed), 6),
    )
    examples = tuple(
        MissExample(call=m.call, tool=m.tool, string=m.string)
        for m in branch.missed[:MISS_EXAMPLES]
    )
    return ReplayResult(
        name=member.name,
        conversation=prepared.conversation.name,
        config=member.as_dict,
        totals=totals,
        calls=tuple(calls),
        contexts=dict(branch.contexts),
        measure=branch.meter.describe(),
        estimate=pricing.estimate,
        strategies=strategy_effects(events),
        miss_examples=examples,
        inferred_prefix_tokens=prepared.prefix_tokens,
    )


def _cost(pricing: Pricing, calls: list[CallRecord]) -> tuple[float, int]:
    """US dollars of input over ``calls``, each billed at the rates its prompt's length
    takes (see :attr:`Pricing.long_context`), and the tokens of those past the
    long-context threshold. Tokens are summed per tier first, so a price with one tier
    costs exactly what one sum over every call did."""
    short = [c for c in calls if not pricing.is_long(c.context_tokens)]
    long = [c for c in calls if pricing.is_long(c.context_tokens)]
    cost = 0.0
    for tier in (long, short):
        if not tier:
            continue
        cost += pricing.cost(
            uncached_tokens=sum(c.new_tokens for c in tier),
            cached_tokens=sum(c.cached_tokens for c in tier),
            cache_write_tokens=sum(c.cache_write_tokens for c in tier),
            # Every call of a tier is billed at the same rates: its first stands for all.
            prompt_tokens=tier[0].context_tokens,
        )
    return cost, sum(c.context_tokens for c in long)
