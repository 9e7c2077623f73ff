"""Comparing configs on one conversation, and sweeping a grid of numeric knobs.

``compare`` puts the totals side by side with deltas against a baseline (the first
config, or "no reduction" when asked). ``sweep`` replays every combination of a grid
over :data:`GRID_KNOBS` and marks the Pareto front of cache-aware cost against
re-fetches, each cost saving against the conversation replayed with no reduction.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from reduction_app.engine import (
    ConfigError,
    ReductionConfig,
    check_config,
    config_knobs,
    config_switches,
)
from simulator.importers import RecordedConversation
from simulator.parallel import default_workers, replay_configs
from simulator.pricing import DEFAULT_PRICING, Pricing, with_cache_prices
from simulator.replay import no_reduction, replay
from simulator.results import ReplayResult
from simulator.stored import ComparisonResults, SweepResults, dump

__all__ = [
    "GRID_KNOBS",
    "Comparison",
    "SweepResult",
    "compare",
    "cost_point",
    "grid_configs",
    "pareto_front",
    "sweep",
    "sweep_configs",
]

MAX_GRID_CONFIGS = 1_000
"""The most combinations one sweep replays."""

GRID_KNOBS = tuple(spec.name for spec in (*config_knobs(), *config_switches()))
"""The fields a grid may sweep: the engine spec's numeric knobs and its opt-in strategy
switches, as on the Tune page."""


@dataclass(frozen=True)
class Comparison:
    results: tuple[ReplayResult, ...]
    baseline: ReplayResult
    deltas: tuple[dict[str, float], ...]
    """Per result: each numeric total minus the baseline's."""

    def stored(self) -> ComparisonResults:
        """As a simulation stores it (:mod:`simulator.stored`): ``baseline`` names the
        baseline; when it is none of the results (no reduction), ``baseline_result``
        holds it whole."""
        out: dict[str, Any] = {
            "baseline": self.baseline.name,
            "results": [
                {**r.to_dict(), "deltas": d} for r, d in zip(self.results, self.deltas, strict=True)
            ],
        }
        if all(r is not self.baseline for r in self.results):
            out["baseline_result"] = self.baseline.to_dict()
        return msgspec.convert(out, ComparisonResults)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`stored` as JSON values (what ``--json`` prints and a simulation stores)."""
        return dump(self.stored())


def _deltas(result: ReplayResult, baseline: ReplayResult) -> dict[str, float]:
    mine, base = dataclasses.asdict(result.totals), dataclasses.asdict(baseline.totals)
    return {k: round(mine[k] - base[k], 6) for k in mine}


def compare(
    conversation: RecordedConversation,
    configs: Sequence[tuple[str, ReductionConfig | Mapping[str, Any] | None]],
    *,
    baseline: str = "first",
    pricing: Pricing = DEFAULT_PRICING,
    min_cacheable_prefix: int | None = None,
    contexts: Collection[int] | None = None,
    inferred_prefix: bool = True,
) -> Comparison:
    """Replay each ``(name, config)`` (a config, its JSON fields or ``None``); deltas
    against the first, or ``baseline="none"`` for no reduction. ``contexts`` and
    ``inferred_prefix`` are passed to each :func:`replay`."""
    if not configs:
        raise ValueError("compare needs at least one config")
    results = tuple(
        replay(
            conversation,
            cfg if isinstance(cfg, ReductionConfig) else with_cache_prices(cfg, pricing),
            name=name,
            pricing=pricing,
            min_cacheable_prefix=min_cacheable_prefix,
            contexts=contexts,
            inferred_prefix=inferred_prefix,
        )
        for name, cfg in configs
    )
    if baseline == "first":
        return Comparison(results, results[0], tuple(_deltas(r, results[0]) for r in results))
    if baseline != "none":
        raise ValueError(f"baseline must be 'first' or 'none', got {baseline!r}")
    # No reduction, counted like each config: where tokens are measured by each config's
    # own counter, a baseline on another counter would show a config that reduces
    # nothing as a gain or a loss. The row shown is the first config's.
    bases: dict[str, ReplayResult] = {}
    deltas = []
    for (_, cfg), result in zip(configs, results, strict=True):
        counter = (
            cfg.token_counter
            if isinstance(cfg, ReductionConfig)
            else (cfg or {}).get("token_counter")
        )
        key = counter if isinstance(counter, str) and pricing.tokenizer is None else ""
        if key not in bases:
            bases[key] = replay(
                conversation,
                {**no_reduction(), **({"token_counter": key} if key else {})},
                name="no reduction",
                pricing=pricing,
                min_cacheable_prefix=min_cacheable_prefix,
                inferred_prefix=inferred_prefix,
            )
        deltas.append(_deltas(result, bases[key]))
    return Comparison(results, next(iter(bases.values())), tuple(deltas))


def grid_configs(grid: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the grid's lists, each a valid config; other keys are fixed
    config fields. Raises ``ValueError`` naming the knob or field at fault."""
    if not isinstance(grid, Mapping):
        raise ValueError(f"grid: expected a JSON object of knob -> list of values, got {grid!r}")
    axes = {k: v for k, v in grid.items() if k in GRID_KNOBS}
    fixed = {k: v for k, v in grid.items() if k not in GRID_KNOBS}
    for knob, values in axes.items():
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid.{knob}: expected a non-empty list of values, got {values!r}")
    if not axes:
        raise ValueError(f"grid: name at least one of {list(GRID_KNOBS)}")
    # Counted before anything is built: a few bytes of grid could ask for millions of replays.
    total = math.prod(len(v) for v in axes.values())
    if total > MAX_GRID_CONFIGS:
        raise ValueError(
            f"grid: {total:,} combinations; at most {MAX_GRID_CONFIGS:,} can be swept at once"
        )
    names = sorted(axes)
    combos = [
        {**fixed, **dict(zip(names, combo, strict=True))}
        for combo in itertools.product(*(axes[n] for n in names))
    ]
    for config in combos:
        try:
            check_config(config)
        except ConfigError as exc:
            raise ValueError(f"grid: {exc}") from exc
    return combos


def pareto_front(points: Sequence[tuple[int, int]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (lower is better)."""
    front = []
    for i, (a, b) in enumerate(points):
        dominated = any(
            (c <= a and d <= b) and (c < a or d < b) for j, (c, d) in enumerate(points) if j != i
        )
        if not dominated:
            front.append(i)
    return front


def cost_point(result: ReplayResult) -> tuple[int, int]:
    """Where a replay sits for the front: its cache-aware cost (in millionths of a dollar,
    so that equal costs compare equal) and its re-fetches."""
    return round(result.totals.cost_usd * 1_000_000), result.totals.refetches


@dataclass(frozen=True)
class SweepResult:
    results: tuple[ReplayResult, ...]
    front: tuple[int, ...]
    """Indices into ``results`` of the Pareto front: cache-aware cost (the price preset's
    input, cached and cache-write prices) against re-fetches."""
    baseline: ReplayResult | None = None
    """The conversation replayed with no reduction, what each cost saving is against."""

    @classmethod
    def of(cls, results: Sequence[ReplayResult], baseline: ReplayResult | None) -> SweepResult:
        """The sweep of these replays (one per combination, in grid order): its front."""
        points = [cost_point(r) for r in results]
        return cls(tuple(results), tuple(pareto_front(points)), baseline)

    def saving(self, result: ReplayResult) -> float | None:
        """The share of no reduction's cost that ``result`` saves (negative: it costs more);
        ``None`` without a baseline or when the baseline costs nothing."""
        if self.baseline is None or not self.baseline.totals.cost_usd:
            return None
        base = self.baseline.totals.cost_usd
        return (base - result.totals.cost_usd) / base

    def stored(self) -> SweepResults:
        """As a simulation stores it (:mod:`simulator.stored`)."""
        baseline = None
        if self.baseline is not None:
            baseline = {
                "name": self.baseline.name,
                "totals": dataclasses.asdict(self.baseline.totals),
            }
        out = {
            "baseline": baseline,
            "results": [
                {
                    "name": r.name,
                    "config": r.config,
                    "totals": dataclasses.asdict(r.totals),
                    "pareto": i in self.front,
                    "cost_saved": self.saving(r),
                }
                for i, r in enumerate(self.results)
            ],
            "pareto_front": list(self.front),
        }
        return msgspec.convert(out, SweepResults)

    def to_dict(self) -> dict[str, Any]:
        """:meth:`stored` as JSON values."""
        return dump(self.stored())


def sweep(
    conversation: RecordedConversation,
    grid: Mapping[str, Any],
    *,
    pricing: Pricing = DEFAULT_PRICING,
    min_cacheable_prefix: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
    share: bool = True,
    inferred_prefix: bool = True,
) -> SweepResult:
    """Replay every grid combination, and the conversation with no reduction (what the
    savings are against); ``progress(done, total)`` as combinations finish.

    ``workers``: processes to replay in (``None``: one per CPU; small sweeps stay in this
    process, see :mod:`simulator.parallel`). ``share``: replay combinations together,
    sharing what does not depend on the config (see :mod:`simulator.branches`);
    ``workers=1, share=False`` is the plain loop of one :func:`replay` per combination,
    which gives the same results. A sweep keeps each replay's totals, not its per-call
    records (replay a combination to see them). ``inferred_prefix``: as :func:`replay`.
    """
    named: list[tuple[str, Mapping[str, Any] | None]] = list(sweep_configs(grid, pricing))
    combinations = len(named)
    named.append(("no reduction", None))
    results = replay_configs(
        conversation,
        named,
        pricing=pricing,
        min_cacheable_prefix=min_cacheable_prefix,
        workers=default_workers() if workers is None else workers,
        share=share,
        progress=progress,
        counted=combinations,
        inferred_prefix=inferred_prefix,
    )
    baseline = results.pop()
    return SweepResult.of(results, baseline)


def sweep_configs(grid: Mapping[str, Any], pricing: Pricing) -> list[tuple[str, dict[str, Any]]]:
    """The combinations a sweep replays, named ``knob=value,...`` (the knobs the grid
    sweeps), each with the preset's cache prices where it is cache-aware."""
    out = []
    for cfg in grid_configs(grid):
        name = ",".join(f"{k}={cfg[k]}" for k in sorted(cfg) if k in GRID_KNOBS)
        priced = with_cache_prices(cfg, pricing)
        assert priced is not None
        out.append((name, priced))
    return out
