"""Recommending a config for a corpus of runs: ``python -m simulator recommend``.

:func:`recommend` searches the engine spec's numeric knobs and strategy switches for the
config that costs least on a corpus, counting recovery: its cost with recovery (the
cache-aware cost plus the price of recovering each miss, :attr:`~simulator.results.Totals.
cost_with_recovery_usd`), summed over the runs. A config is *admissible* when it bills no
run more than no reduction does, by that same cost; it *meets the budget* when its misses
and re-fetches over the corpus are at most the budget's. The budget is, unless given,
what Eino's ``max_tokens_for_clear=40000`` alone (:data:`BUDGET_CONFIG`) misses and
re-fetches on the same runs. The recommendation is the cheapest admissible config that
meets the budget, or none.

The search goes coarse first, then finer:

1. The coarse round replays every combination of a grid (:data:`DEFAULT_GRID`, or the
   one given), :data:`BUDGET_CONFIG` and no reduction on every run.
2. Each later round takes the best few configs found so far (:data:`SEEDS`: admissible
   and within the budget first, then the nearest to it, each cheapest first, one per
   distinct result) and replays their untried neighbours (:func:`neighbours`): each
   numeric knob of the grid moved halfway towards the nearest value tried that measured
   otherwise (from the far end of the values next to it that measured the same), or
   1.5× down or up past the last value tried, rounded to the knob's step; and each
   switch of the grid flipped.
3. The rounds stop when no neighbour is left untried, or when the next round would not
   end within ``max_seconds`` by the time per config the last round took; a round that
   fits only in part replays the neighbours of the best configs first. The coarse round
   always runs whole, so there is always an answer.

Rounds replay over the corpus with :func:`~simulator.corpus_sweep.replay_corpus`, in
parallel over the runs. Configs that set ``clear_cache_aware`` are replayed, and
recommended, with the preset's cache prices (:func:`~simulator.pricing.with_cache_prices`),
so the recommended config is what reproduces the figures. This module searches;
:mod:`simulator.cli` prints.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reduction_app.engine import config_knobs, config_switches
from simulator.compare import GRID_KNOBS, grid_configs, pareto_front
from simulator.corpus_sweep import (
    SHORT_KNOBS,
    ConfigTotals,
    CorpusReplay,
    config_label,
    replay_corpus,
)
from simulator.pricing import Pricing
from simulator.recording import RecordedConversation

__all__ = [
    "BUDGET_CONFIG",
    "DEFAULT_GRID",
    "SEEDS",
    "Budget",
    "Recommendation",
    "neighbours",
    "recommend",
]

DEFAULT_GRID = Path(__file__).parent / "grids" / "recommend.json"
"""The coarse grid: clearing at 20k, 40k and 80k tokens, at least 0 or 10k freed, tool
output truncated at 2k, 8k and 50k characters, cache-aware and superseded clearing off
and on (72 combinations), with the retention suffix and truncating only when shorter
left to the finer rounds."""
BUDGET_CONFIG: tuple[str, dict[str, Any]] = ("Eino: clear at 40k", {"max_tokens_for_clear": 40_000})
"""The config whose misses and re-fetches are the default budget."""
SEEDS = 3
"""How many of the best configs each finer round looks around."""
HEADROOM = 0.9
"""The share of the time left a finer round may be expected to take."""

Progress = Callable[[int, int], None]
Say = Callable[[str], None]


@dataclass(frozen=True)
class Budget:
    """The most misses and re-fetches, over the corpus, a recommended config may have."""

    misses: int
    refetches: int


@dataclass(frozen=True)
class Recommendation:
    """A search's answer, and every config it replayed."""

    pricing: str
    runs: tuple[str, ...]
    baseline: ConfigTotals
    """No reduction on the same runs."""
    budget: Budget
    configs: tuple[ConfigTotals, ...]
    """Every config replayed, in the order replayed (the coarse round first)."""
    rounds: tuple[int, ...]
    """How many configs each round replayed."""
    best: int | None
    """Index into :attr:`configs` of the recommended config; ``None`` when no admissible
    config meets the budget."""
    front: tuple[int, ...]
    """Indexes into :attr:`configs`: the Pareto front of cost with recovery against
    misses among the admissible configs, one per point, cheapest first."""
    seconds: float
    timed_out: bool = False
    """Whether ``max_seconds`` ended the search (a round not started, or cut short) with
    neighbours left untried; ``False`` when none was left."""

    def runs_worse(self, index: int) -> int:
        """On how many runs config ``index`` costs more, with recovery, than no reduction."""
        return len(self.configs[index].worse_than(self.baseline, recovery=True))

    def entry(self, index: int) -> dict[str, Any]:
        """Config ``index`` as the JSON's ``front`` lists it."""
        totals = self.configs[index]
        return {
            "config": totals.config,
            "saved_with_recovery": round(totals.saving(self.baseline, recovery=True), 6),
            "misses": totals.misses,
            "refetches": totals.refetches,
            "runs_worse": self.runs_worse(index),
        }

    def to_dict(self) -> dict[str, Any]:
        """What ``--json`` prints."""
        best = None if self.best is None else self.configs[self.best]
        return {
            "config": None if best is None else best.config,
            "pricing": self.pricing,
            "saved": None if best is None else round(best.saving(self.baseline), 6),
            "saved_with_recovery": (
                None if best is None else round(best.saving(self.baseline, recovery=True), 6)
            ),
            "misses": None if best is None else best.misses,
            "refetches": None if best is None else best.refetches,
            "runs_worse": None if self.best is None else self.runs_worse(self.best),
            "budget": {"misses": self.budget.misses, "refetches": self.budget.refetches},
            "front": [self.entry(i) for i in self.front],
            "seconds": round(self.seconds, 1),
        }


def _key(config: Mapping[str, Any]) -> str:
    return json.dumps(config, sort_keys=True)


def _search_space(grid: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """The grid's numeric knobs and switches, in the order labels show them."""
    order = list(SHORT_KNOBS)
    named = sorted(
        (k for k in grid if k in GRID_KNOBS),
        key=lambda k: order.index(k) if k in order else len(order),
    )
    switches = {spec.name for spec in config_switches()}
    return [k for k in named if k not in switches], [k for k in named if k in switches]


def neighbours(
    config: Mapping[str, Any],
    lines: Mapping[str, Sequence[tuple[int, Hashable]]],
    switches: Sequence[str],
) -> list[dict[str, Any]]:
    """The configs next to ``config`` (see the module docstring), knob by knob, lower
    first, then each of ``switches`` flipped; none equal to ``config``.

    ``lines[knob]`` is what was found along that knob: ``(value, point)`` for each config
    tried that differs from ``config`` in that knob alone, ``config`` itself included,
    ``point`` being what it measured. Values on either side of ``config``'s that measured
    the same are one stretch; the neighbours are halfway from each end of that stretch
    to the nearest value that measured otherwise, or 1.5× past a stretch of ``config``'s
    value alone where nothing was tried beyond it. Each is rounded to the knob's step
    and kept within its range."""
    specs = {spec.name: spec for spec in config_knobs()}
    out: list[dict[str, Any]] = []
    for knob, found in lines.items():
        spec = specs[knob]
        assert spec.knob is not None
        value = config[knob]
        points = dict(found)
        values = sorted(points)
        at = values.index(value)
        low = high = at
        while low > 0 and points[values[low - 1]] == points[value]:
            low -= 1
        while high < len(values) - 1 and points[values[high + 1]] == points[value]:
            high += 1
        moves = []
        if low > 0:
            moves.append((values[low - 1] + values[low]) / 2)
        elif low == at:
            moves.append(value / 1.5)
        if high < len(values) - 1:
            moves.append((values[high] + values[high + 1]) / 2)
        elif high == at:
            moves.append(value * 1.5)
        for moved in moves:
            step = spec.knob.step
            new = max(spec.knob.low, round(moved / step) * step)
            if spec.knob.high is not None:
                new = min(spec.knob.high, new)
            if new not in points:
                out.append({**config, knob: new})
    out += [{**config, switch: not config[switch]} for switch in switches]
    return out


def recommend(
    conversations: Sequence[RecordedConversation],
    *,
    pricing: Pricing,
    grid: Mapping[str, Any] | None = None,
    budget_misses: int | None = None,
    budget_refetches: int | None = None,
    max_seconds: float = 300.0,
    min_cacheable_prefix: int | None = None,
    workers: int = 1,
    share: bool = True,
    progress: Progress | None = None,
    say: Say | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Recommendation:
    """Search for the config to recommend (see the module docstring). ``progress(done,
    total)`` counts each round's replays; ``say`` gets a line per round. ``grid``
    defaults to :data:`DEFAULT_GRID`; its fields that are no knob or switch are in every
    config."""
    started = clock()
    if grid is None:
        grid = json.loads(DEFAULT_GRID.read_text(encoding="utf-8"))
    combos = grid_configs(grid)
    knobs, switches = _search_space(grid)
    labelled = [*knobs, *switches]

    def replay(named: list[tuple[str, dict[str, Any]]], baseline: bool) -> CorpusReplay:
        return replay_corpus(
            conversations,
            named,
            pricing=pricing,
            min_cacheable_prefix=min_cacheable_prefix,
            workers=workers,
            share=share,
            progress=progress,
            baseline=baseline,
        )

    seen: dict[str, int] = {}
    plain: list[dict[str, Any]] = []
    """Each config replayed, before cache prices are filled in."""
    named = [(config_label(c, labelled), c) for c in combos]
    if _key(BUDGET_CONFIG[1]) not in {_key(c) for c in combos}:
        named.append(BUDGET_CONFIG)
    for _, config in named:
        seen[_key(config)] = len(plain)
        plain.append(config)
    first = replay(named, baseline=True)
    baseline = first.baseline
    assert baseline is not None
    configs: list[ConfigTotals] = list(first.configs)
    rounds = [len(named)]
    per_config = (clock() - started) / (len(named) + 1)
    budget_totals = configs[seen[_key(BUDGET_CONFIG[1])]]
    budget = Budget(
        misses=budget_totals.misses if budget_misses is None else budget_misses,
        refetches=budget_totals.refetches if budget_refetches is None else budget_refetches,
    )

    def rank(index: int) -> tuple[int, int, int, int]:
        totals = configs[index]
        worse = len(totals.worse_than(baseline, recovery=True))
        excess = max(0, totals.misses - budget.misses)
        excess += max(0, totals.refetches - budget.refetches)
        return worse, excess, round(totals.cost_with_recovery_usd * 1_000_000), index

    def point(index: int) -> tuple[int, ...]:
        totals = configs[index]
        cost = round(totals.cost_with_recovery_usd * 1_000_000)
        return cost, totals.misses, totals.refetches, rank(index)[0]

    def note(kind: str) -> None:
        if say is None:
            return
        best = min(range(len(configs)), key=rank)
        totals = configs[best]
        say(
            f"round {len(rounds)} ({kind}): {rounds[-1]} configs, {clock() - started:.1f} s; "
            f"best so far: {totals.name}, saves "
            f"{totals.saving(baseline, recovery=True):.1%} with recovery, "
            f"{totals.misses} misses, {totals.refetches} re-fetches"
        )

    note("coarse")
    timed_out = False
    while True:
        order = sorted(range(len(configs)), key=rank)
        seeds: list[int] = []
        points: set[tuple[int, ...]] = set()
        for i in order:
            if point(i) in points or not all(k in plain[i] for k in labelled):
                continue
            points.add(point(i))
            seeds.append(i)
            if len(seeds) == SEEDS:
                break
        todo: list[dict[str, Any]] = []
        for seed in seeds:
            lines = _lines(plain, [point(i) for i in range(len(plain))], plain[seed], knobs)
            for config in neighbours(plain[seed], lines, switches):
                key = _key(config)
                if key not in seen:
                    seen[key] = -1
                    todo.append(config)
        if not todo:
            break
        left = max_seconds - (clock() - started)
        fits = int(HEADROOM * left / per_config) if per_config > 0 else len(todo)
        if fits < 1:
            timed_out = True
            break
        timed_out = timed_out or fits < len(todo)
        todo = todo[:fits]
        round_started = clock()
        named = [(config_label(c, labelled), c) for c in todo]
        result = replay(named, baseline=False)
        for config, totals in zip(todo, result.configs, strict=True):
            seen[_key(config)] = len(plain)
            plain.append(config)
            configs.append(totals)
        rounds.append(len(todo))
        per_config = (clock() - round_started) / len(todo)
        note("finer")
    return _answer(
        conversations, pricing, baseline, budget, configs, rounds, clock() - started, timed_out
    )


def _lines(
    plain: Sequence[Mapping[str, Any]],
    points: Sequence[Hashable],
    config: Mapping[str, Any],
    knobs: Sequence[str],
) -> dict[str, list[tuple[int, Hashable]]]:
    """Per knob, ``(value, point)`` of each config of ``plain`` that differs from
    ``config`` in that knob alone (``config`` included)."""
    lines: dict[str, list[tuple[int, Hashable]]] = {k: [] for k in knobs}
    for other, measured in zip(plain, points, strict=True):
        if other.keys() != config.keys():
            continue
        differ = [k for k in other if other[k] != config[k]]
        if not differ:
            for knob in knobs:
                lines[knob].append((config[knob], measured))
        elif len(differ) == 1 and differ[0] in lines:
            lines[differ[0]].append((other[differ[0]], measured))
    return lines


def _answer(
    conversations: Sequence[RecordedConversation],
    pricing: Pricing,
    baseline: ConfigTotals,
    budget: Budget,
    configs: list[ConfigTotals],
    rounds: list[int],
    seconds: float,
    timed_out: bool,
) -> Recommendation:
    admissible = [i for i, t in enumerate(configs) if not t.worse_than(baseline, recovery=True)]

    def cost(i: int) -> int:
        return round(configs[i].cost_with_recovery_usd * 1_000_000)

    within = [
        i
        for i in admissible
        if configs[i].misses <= budget.misses and configs[i].refetches <= budget.refetches
    ]
    best = min(
        within, key=lambda i: (cost(i), configs[i].misses, configs[i].refetches, i), default=None
    )
    points = [(cost(i), configs[i].misses) for i in admissible]
    front: dict[tuple[int, int], int] = {}
    for j in pareto_front(points):
        front.setdefault(points[j], admissible[j])
    return Recommendation(
        pricing=pricing.name,
        runs=tuple(conv.name for conv in conversations),
        baseline=baseline,
        budget=budget,
        configs=tuple(configs),
        rounds=tuple(rounds),
        best=best,
        front=tuple(front[p] for p in sorted(front)),
        seconds=seconds,
        timed_out=timed_out,
    )
