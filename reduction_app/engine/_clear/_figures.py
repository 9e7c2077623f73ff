"""What the clear phase reports and weighs about a pass: each cleared call's event with
its token figures, the summary event every call ends with (docs/behaviour.md §4.9), and
the estimate of the opt-in cache-aware strategy (§4.14). ``_phase`` decides when they
are emitted and what the estimate changes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from reduction_app.engine._clear._cache_aware import CacheEstimate, cached_end, calls_so_far
from reduction_app.engine._clear._pass import Cleared, Pass, checked_tokens, first_difference
from reduction_app.engine._steps import Steps, call
from reduction_app.engine.access import AnyMessage
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.messages import ToolInfo

if TYPE_CHECKING:
    from reduction_app.engine.runtime import Runtime

__all__ = ["cache_estimate", "figures", "summary_event"]


def summary_event(
    threshold: int, reason: str, before: int, after: int, **fields: Any
) -> ReductionEvent:
    """The clear phase's summary event: why it stopped or what it applied (``reason``),
    with the tokens before and after."""
    return ReductionEvent(
        phase="clear",
        kind="summary",
        reason=reason,
        threshold=threshold,
        tokens_before=before,
        tokens_after=after,
        tokens_saved=before - after,
        **fields,
    )


def figures(rt: Runtime, item: Cleared, kind: str) -> Steps[ReductionEvent]:
    """The event of one cleared call. Token figures come from the result message's counts,
    which the pass's own counting already cached, unless the message holds several results
    or the arguments changed; then the texts are counted."""
    event = ReductionEvent(
        phase="clear",
        kind="tool",
        tool_name=item.ref.name,
        call_id=item.ref.call_id,
        offload_path=item.path,
        strategy=item.strategy,
    )
    count_message = getattr(rt.counter, "count_message", None)
    if item.messages is None or count_message is None:
        return (yield from rt.with_figures(event, item.before, item.after, kind))
    tokens_before = yield call(count_message, item.messages[0])
    tokens_after = yield call(count_message, item.messages[1])
    return dataclasses.replace(
        event,
        chars_before=len(item.before),
        chars_after=len(item.after),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        tokens_saved=tokens_before - tokens_after,
    )


def cache_estimate(
    ps: Pass, messages: Sequence[AnyMessage], tools: list[ToolInfo], saved: int
) -> Steps[CacheEstimate]:
    """What the pass saves against the cache rewrite it causes (docs/behaviour.md §4.14).
    The tokens the cache held from the first change to the previous call's end are two
    counts of prefixes, which a built-in counter sums from its per-message cache."""
    cfg = ps.rt.config
    first = len(messages) if ps.first_change is None else ps.first_change
    if ps.out is not ps.edit:  # the offload manifest moved (or appeared) too
        moved = first_difference(ps.edit, ps.out)
        first = min(first, len(messages) if moved is None else moved)
    end = cached_end(messages)
    rewritten = 0
    if first < end:
        upto_end = checked_tokens((yield call(ps.rt.counter, messages[:end], tools)))
        upto_first = checked_tokens((yield call(ps.rt.counter, messages[:first], tools)))
        rewritten = upto_end - upto_first
    return CacheEstimate(
        saved=saved,
        rewritten=rewritten,
        calls_ahead=calls_so_far(messages),
        read_percent=cfg.clear_cache_read_percent,
        write_percent=cfg.clear_cache_write_percent,
    )
