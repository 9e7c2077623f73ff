"""Sweeping a grid over a corpus: every combination on every recorded run, summed.

Per combination a :class:`ConfigTotals` over the runs (each run's totals the ones
:func:`~simulator.replay.replay` gives for it alone, and its cost kept for
:meth:`CorpusSweep.billed_more`), the corpus's Pareto front, and short combination names
for tables. Runs go to a process pool, one at a time, longest first. This module
measures; :mod:`simulator.cli` prints.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import msgspec

from simulator.compare import GRID_KNOBS, SweepResult, grid_configs, pareto_front, sweep_configs
from simulator.parallel import replay_configs
from simulator.pricing import Pricing, with_cache_prices
from simulator.recording import RecordedConversation
from simulator.results import ReplayResult, Totals
from simulator.stored import CorpusSweepResults, dump

__all__ = [
    "SHORT_KNOBS",
    "ConfigTotals",
    "CorpusReplay",
    "CorpusSweep",
    "combination_labels",
    "config_label",
    "corpus_configs",
    "corpus_sweep",
    "replay_corpus",
    "varying_knobs",
]

SHORT_KNOBS: dict[str, str] = {
    "max_tokens_for_clear": "clear@",
    "clear_at_least_tokens": "atleast=",
    "max_length_for_trunc": "trunc=",
    "trunc_tool_limits": "trunc",
    "trunc_command_limits": "trunc",
    "clear_retention_suffix_limit": "suffix=",
    "clear_cache_aware": "cache-aware",
    "trunc_only_when_shorter": "only-shorter",
    "clear_superseded": "superseded",
    "clear_offload_manifest": "manifest",
}
"""How a combination's label shows each knob, in the order labels list them: a number
follows its prefix (``clear@20k``, ``suffix=3``); a switch that is on shows its word and
one that is off shows nothing; a map of limits shows each of its entries, by name,
after its prefix (``trunc[Read]=4k trunc[reading]=2k``), and nothing when empty. A knob
missing here shows as ``knob=value``."""

Progress = Callable[[int, int], None]


def varying_knobs(grid: Mapping[str, Any]) -> list[str]:
    """The knobs of ``grid`` given more than one value, in the order labels show them."""
    varying = [k for k in GRID_KNOBS if isinstance(grid.get(k), list) and len(grid[k]) > 1]
    order = list(SHORT_KNOBS)
    return sorted(varying, key=lambda k: order.index(k) if k in order else len(order))


def _amount(value: Any) -> str:
    """Whole thousands as ``20k``, hundreds as ``2.5k``; other values as they are."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 1000:
        if value % 1000 == 0:
            return f"{value // 1000}k"
        if value % 100 == 0:
            return f"{value / 1000:.1f}k"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _part(knob: str, value: Any) -> str:
    short = SHORT_KNOBS.get(knob)
    if isinstance(value, Mapping):
        prefix = knob if short is None else short
        return " ".join(f"{prefix}[{k}]={_amount(value[k])}" for k in sorted(value))
    if short is None:
        return f"{knob}={_amount(value)}"
    if isinstance(value, bool):
        return short if value else ""
    return f"{short}{_amount(value)}"


def config_label(config: Mapping[str, Any], knobs: Sequence[str]) -> str:
    """``config`` named by its values of ``knobs``, in that order (see :data:`SHORT_KNOBS`);
    ``no <switch>`` for each knob when that shows nothing (every switch off)."""
    parts = [p for p in (_part(k, config[k]) for k in knobs if k in config) if p]
    if parts:
        return " ".join(parts)
    # An empty map of limits is named in full: ``no trunc`` would read as no truncation.
    return " ".join(
        f"no {k if isinstance(config.get(k), Mapping) else SHORT_KNOBS.get(k, k)}" for k in knobs
    )


def combination_labels(grid: Mapping[str, Any]) -> list[str]:
    """One label per combination of :func:`~simulator.compare.grid_configs`, in its order,
    showing only the knobs that vary (see :data:`SHORT_KNOBS`). A combination whose
    varying switches are all off and that varies nothing else is ``no <switch>``; a grid
    that varies nothing gives its one combination every knob's value."""
    knobs = varying_knobs(grid) or [k for k in GRID_KNOBS if k in grid]
    return [config_label(config, knobs) for config in grid_configs(grid)]


@dataclass
class ConfigTotals:
    """One config over a corpus of runs: sums, and each run's figures in corpus order."""

    name: str
    config: dict[str, Any] | None
    """The config replayed (``None``: no reduction)."""
    cost_usd: float = 0.0
    """Cache-aware cost (the preset's input, cached and cache-write prices)."""
    cost_with_recovery_usd: float = 0.0
    """Cache-aware cost plus the recovery of each miss (:attr:`Totals.cost_with_recovery_usd`)."""
    input_tokens_billed: int = 0
    long_context_tokens: int = 0
    """Of ``input_tokens_billed``, those billed at the long-context rates."""
    refetches: int = 0
    misses: int = 0
    costs: list[float] = field(default_factory=list)
    """Per run, its cache-aware cost."""
    recovery_costs: list[float] = field(default_factory=list)
    """Per run, its cost with recovery."""
    run_refetches: list[int] = field(default_factory=list)
    run_misses: list[int] = field(default_factory=list)
    run_calls: list[int] = field(default_factory=list)
    """Per run, its model calls."""

    def add(self, totals: Totals) -> None:
        """One more run's replay, after those already added. A result stored before
        misses were measured (no cost with recovery) counts its cost without recovery."""
        recovery = totals.cost_with_recovery_usd
        if recovery is None:
            recovery = totals.cost_usd
        self.cost_usd += totals.cost_usd
        self.cost_with_recovery_usd += recovery
        self.input_tokens_billed += totals.input_tokens_billed
        self.long_context_tokens += totals.long_context_tokens
        self.refetches += totals.refetches
        self.misses += totals.misses
        self.costs.append(totals.cost_usd)
        self.recovery_costs.append(recovery)
        self.run_refetches.append(totals.refetches)
        self.run_misses.append(totals.misses)
        self.run_calls.append(totals.model_calls)

    def saving(self, baseline: ConfigTotals, *, recovery: bool = False) -> float:
        """The share of ``baseline``'s cost this config saves (negative: it costs more);
        with ``recovery``, its cost with recovery against the baseline's."""
        if recovery:
            base = baseline.cost_with_recovery_usd
            return 1 - self.cost_with_recovery_usd / base if base else 0.0
        return 1 - self.cost_usd / baseline.cost_usd if baseline.cost_usd else 0.0

    def worse_than(self, baseline: ConfigTotals, *, recovery: bool = False) -> list[int]:
        """Runs (indexes) this config bills more than ``baseline`` for (to the micro-dollar
        the replay rounds to); with ``recovery``, by cost with recovery."""
        mine, theirs = (
            (self.recovery_costs, baseline.recovery_costs)
            if recovery
            else (self.costs, baseline.costs)
        )
        return [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a > b]


@dataclass(frozen=True)
class CorpusSweep:
    """A grid swept over a corpus: per combination its totals over every run."""

    runs: tuple[str, ...]
    """The runs' names, in the corpus's order."""
    pricing: Pricing
    combinations: tuple[ConfigTotals, ...]
    """One per combination, in grid order, named by :func:`combination_labels`; ``config``
    is the config replayed (cache prices included where it is cache-aware)."""
    full_names: tuple[str, ...]
    """Each combination as ``knob=value,...`` (every knob the grid sweeps)."""
    baseline: ConfigTotals
    """No reduction over the same runs."""
    front: tuple[int, ...]
    """Indexes into :attr:`combinations`: the Pareto front of cache-aware cost against
    re-fetches, over the corpus totals."""
    per_run: tuple[SweepResult, ...]
    """Each run's own sweep, in the order of :attr:`runs`."""

    def billed_more(self, index: int, *, recovery: bool = False) -> list[int]:
        """The runs (indexes) combination ``index`` costs more on than no reduction; with
        ``recovery``, by cost with recovery."""
        return self.combinations[index].worse_than(self.baseline, recovery=recovery)

    def cost_saved(self, index: int) -> float | None:
        """The share of no reduction's cache-aware cost that combination ``index`` saves."""
        if not self.baseline.cost_usd:
            return None
        return self.combinations[index].saving(self.baseline)

    def recovery_saved(self, index: int) -> float | None:
        """The share of no reduction's cost that combination ``index`` saves, counting its
        cost with recovery (no reduction hides nothing, so misses nothing)."""
        if not self.baseline.cost_with_recovery_usd:
            return None
        return self.combinations[index].saving(self.baseline, recovery=True)

    def tokens_saved(self, index: int) -> float | None:
        """The share of no reduction's input tokens that combination ``index`` saves."""
        base = self.baseline.input_tokens_billed
        if not base:
            return None
        return 1 - self.combinations[index].input_tokens_billed / base

    def cost_without_cache(self, totals: ConfigTotals) -> float:
        """US dollars: every input token billed at the plain input price (the
        long-context one for calls past its threshold), as if no prompt cache served any."""
        long = totals.long_context_tokens
        tier = self.pricing.long_context
        long_price = tier.input_per_mtok if tier is not None else self.pricing.input_per_mtok
        plain = totals.input_tokens_billed - long
        return (plain * self.pricing.input_per_mtok + long * long_price) / 1e6

    def to_dict(self) -> dict[str, Any]:
        """:meth:`stored` as JSON values (what ``--json`` prints and a simulation stores)."""
        return dump(self.stored())

    def stored(self) -> CorpusSweepResults:
        """As a simulation stores it (:mod:`simulator.stored`)."""

        def sums(totals: ConfigTotals) -> dict[str, Any]:
            return {
                "cost_usd": round(totals.cost_usd, 6),
                "cost_with_recovery_usd": round(totals.cost_with_recovery_usd, 6),
                "cost_without_cache_usd": round(self.cost_without_cache(totals), 6),
                "input_tokens_billed": totals.input_tokens_billed,
                "refetches": totals.refetches,
                "misses": totals.misses,
            }

        out = {
            "runs": list(self.runs),
            "pricing": self.pricing.name,
            "baseline": {"name": self.baseline.name, "totals": sums(self.baseline)},
            "combinations": [
                {
                    "name": totals.name,
                    "combination": full,
                    "config": totals.config,
                    "totals": sums(totals),
                    "cost_saved": self.cost_saved(i),
                    "cost_saved_with_recovery": self.recovery_saved(i),
                    "tokens_saved": self.tokens_saved(i),
                    "billed_more": len(self.billed_more(i)),
                    "billed_more_runs": [self.runs[r] for r in self.billed_more(i)],
                    "billed_more_with_recovery": len(self.billed_more(i, recovery=True)),
                    "billed_more_with_recovery_runs": [
                        self.runs[r] for r in self.billed_more(i, recovery=True)
                    ],
                    "pareto": i in self.front,
                }
                for i, (totals, full) in enumerate(
                    zip(self.combinations, self.full_names, strict=True)
                )
            ],
            "pareto_front": list(self.front),
        }
        return msgspec.convert(out, CorpusSweepResults)


def corpus_sweep(
    conversations: Sequence[RecordedConversation],
    grid: Mapping[str, Any],
    *,
    pricing: Pricing,
    min_cacheable_prefix: int | None = None,
    workers: int = 1,
    share: bool = True,
    progress: Progress | None = None,
    inferred_prefix: bool = True,
) -> CorpusSweep:
    """Replay every combination of ``grid`` and no reduction on every conversation, and
    sum them (see the module docstring). ``progress(done, total)`` counts replays of a
    combination on a run (the baseline's left out) as they finish. ``workers`` and
    ``share`` as :func:`~simulator.compare.sweep` takes them; ``inferred_prefix`` as
    :func:`~simulator.replay.replay`."""
    full = sweep_configs(grid, pricing)
    labels = combination_labels(grid)
    named = [(label, config) for label, (_, config) in zip(labels, full, strict=True)]
    return _corpus(
        conversations,
        named,
        [name for name, _ in full],
        pricing=pricing,
        min_cacheable_prefix=min_cacheable_prefix,
        workers=workers,
        share=share,
        progress=progress,
        inferred_prefix=inferred_prefix,
    )


def corpus_configs(
    conversations: Sequence[RecordedConversation],
    named: Sequence[tuple[str, Mapping[str, Any]]],
    *,
    pricing: Pricing,
    min_cacheable_prefix: int | None = None,
    workers: int = 1,
    share: bool = True,
    progress: Progress | None = None,
    inferred_prefix: bool = True,
) -> CorpusSweep:
    """:func:`corpus_sweep` of a list of named configs rather than a grid's combinations
    (each named as given, in :attr:`CorpusSweep.full_names` too)."""
    return _corpus(
        conversations,
        named,
        [name for name, _ in named],
        pricing=pricing,
        min_cacheable_prefix=min_cacheable_prefix,
        workers=workers,
        share=share,
        progress=progress,
        inferred_prefix=inferred_prefix,
    )


def _corpus(
    conversations: Sequence[RecordedConversation],
    named: Sequence[tuple[str, Mapping[str, Any]]],
    full_names: Sequence[str],
    *,
    pricing: Pricing,
    min_cacheable_prefix: int | None,
    workers: int,
    share: bool,
    progress: Progress | None,
    inferred_prefix: bool,
) -> CorpusSweep:
    if not conversations:
        raise ValueError("corpus_sweep: no conversations to sweep")
    replayed = replay_corpus(
        conversations,
        named,
        pricing=pricing,
        min_cacheable_prefix=min_cacheable_prefix,
        workers=workers,
        share=share,
        progress=progress,
        inferred_prefix=inferred_prefix,
    )
    combinations = replayed.configs
    baseline = replayed.baseline
    assert baseline is not None
    sweeps = [SweepResult.of(results[:-1], results[-1]) for results in replayed.per_run]
    points = [(round(t.cost_usd * 1_000_000), t.refetches) for t in combinations]
    return CorpusSweep(
        runs=tuple(conv.name for conv in conversations),
        pricing=pricing,
        combinations=combinations,
        full_names=tuple(full_names),
        baseline=baseline,
        front=tuple(pareto_front(points)),
        per_run=tuple(sweeps),
    )


# Replaying the runs ---------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusReplay:
    """Named configs replayed over a corpus (:func:`replay_corpus`)."""

    configs: tuple[ConfigTotals, ...]
    """One per config, in the order given; ``config`` with the preset's cache prices
    where it is cache-aware."""
    baseline: ConfigTotals | None
    """No reduction over the same runs, when asked for."""
    per_run: tuple[list[ReplayResult], ...]
    """Per run, each config's result (totals only), then the baseline's when asked for."""


def replay_corpus(
    conversations: Sequence[RecordedConversation],
    named: Sequence[tuple[str, Mapping[str, Any] | None]],
    *,
    pricing: Pricing,
    min_cacheable_prefix: int | None = None,
    workers: int = 1,
    share: bool = True,
    progress: Progress | None = None,
    baseline: bool = True,
    inferred_prefix: bool = True,
) -> CorpusReplay:
    """Replay each ``(name, config)`` on every conversation, and no reduction after them
    when ``baseline``, and sum them run by run in the corpus's order; in parallel over
    the runs as :func:`corpus_sweep` (see the module docstring). A cache-aware config is
    given the preset's cache prices unless it names them. ``progress(done, total)``
    counts replays of a config on a run, the baseline's left out."""
    if not conversations:
        raise ValueError("replay_corpus: no conversations to replay")
    configs: Named = [(name, with_cache_prices(config, pricing)) for name, config in named]
    if baseline:
        configs.append(("no reduction", None))
    per_run = _replay_runs(
        conversations,
        configs,
        len(named),
        pricing,
        min_cacheable_prefix,
        workers,
        share,
        progress,
        inferred_prefix,
    )
    totals = tuple(ConfigTotals(name, None if c is None else dict(c)) for name, c in configs)
    for results in per_run:
        for sums, result in zip(totals, results, strict=True):
            sums.add(result.totals)
    return CorpusReplay(
        configs=totals[: len(named)],
        baseline=totals[-1] if baseline else None,
        per_run=tuple(per_run),
    )


Named = list[tuple[str, Mapping[str, Any] | None]]

_RUNS: list[RecordedConversation] = []
"""In a forked pool process: the corpus, inherited from the process that forked it."""


def _replay_runs(
    conversations: Sequence[RecordedConversation],
    named: Named,
    counted: int,
    pricing: Pricing,
    min_prefix: int | None,
    workers: int,
    share: bool,
    progress: Progress | None,
    inferred_prefix: bool,
) -> list[list[ReplayResult]]:
    """Per run, each ``named`` config's result (totals only), in order; progress counts
    the first ``counted`` configs."""
    combinations = counted
    total = combinations * len(conversations)
    if workers <= 1 or len(conversations) < 2:
        out = []
        for n, conv in enumerate(conversations):
            done = n * combinations

            def step(k: int, _: int, done: int = done) -> None:
                if progress is not None:
                    progress(done + k, total)

            out.append(
                replay_configs(
                    conv,
                    named,
                    pricing=pricing,
                    min_cacheable_prefix=min_prefix,
                    workers=workers,
                    share=share,
                    progress=step,
                    counted=combinations,
                    inferred_prefix=inferred_prefix,
                )
            )
        return out
    return _pooled(
        conversations,
        named,
        counted,
        pricing,
        min_prefix,
        workers,
        share,
        progress,
        total,
        inferred_prefix,
    )


def _run_one(
    index: int,
    conversation: RecordedConversation | None,
    named: Named,
    pricing: Pricing,
    min_prefix: int | None,
    share: bool,
    inferred_prefix: bool,
) -> tuple[int, list[ReplayResult]]:
    conv = _RUNS[index] if conversation is None else conversation
    results = replay_configs(
        conv,
        named,
        pricing=pricing,
        min_cacheable_prefix=min_prefix,
        workers=1,
        share=share,
        inferred_prefix=inferred_prefix,
    )
    return index, results


def _pooled(
    conversations: Sequence[RecordedConversation],
    named: Named,
    counted: int,
    pricing: Pricing,
    min_prefix: int | None,
    workers: int,
    share: bool,
    progress: Progress | None,
    total: int,
    inferred_prefix: bool,
) -> list[list[ReplayResult]]:
    out: list[list[ReplayResult] | None] = [None] * len(conversations)
    # The longest runs first, so that no long one is left to run alone at the end.
    order = sorted(range(len(conversations)), key=lambda i: -len(conversations[i].messages))
    context = None
    forked = sys.platform.startswith("linux")
    if forked:
        context = multiprocessing.get_context("fork")
        _RUNS[:] = conversations
        _load_tokenizer(pricing)
    done = 0
    try:
        with ProcessPoolExecutor(min(workers, len(conversations)), mp_context=context) as pool:
            running: set[Future[tuple[int, list[ReplayResult]]]] = {
                pool.submit(
                    _run_one,
                    i,
                    None if forked else conversations[i],
                    named,
                    pricing,
                    min_prefix,
                    share,
                    inferred_prefix,
                )
                for i in order
            }
            while running:
                ready, running = wait(running, return_when=FIRST_COMPLETED)
                for future in ready:
                    index, results = future.result()
                    out[index] = results
                    done += counted
                    if progress is not None:
                        progress(done, total)
    finally:
        _RUNS.clear()
    return _all(out)


def _all(out: list[list[ReplayResult] | None]) -> list[list[ReplayResult]]:
    assert all(r is not None for r in out)
    return [r for r in out if r is not None]


def _load_tokenizer(pricing: Pricing) -> None:
    """Load the preset's tokenizer here, so that forked processes start with it."""
    if pricing.tokenizer is not None:
        from reduction_app.engine import get_token_counter

        counter: Any = get_token_counter(pricing.tokenizer)
        getattr(counter, "encoding", None)
