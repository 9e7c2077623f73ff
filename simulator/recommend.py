"""Recommending a config for a corpus of runs: ``python -m simulator recommend``.

:func:`recommend` searches the spec's knobs and switches, coarse grid first and finer
rounds around the best configs within ``max_seconds``, for the config that saves most
with recovery within a :class:`Budget`; :func:`held_out` estimates what the same method
does on runs it has not seen. This module searches; :mod:`simulator.cli` prints (the
rules: docs/simulator.md, "Recommending a config").
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import msgspec

from reduction_app.engine import config_knobs, config_switches
from simulator.ceiling import ceiling as clairvoyant
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
from simulator.stored import RecommendationResults, dump
from simulator.tool_limits import FIELDS, LADDER, dimensions, with_limit

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_FOLDS",
    "DEFAULT_GRID",
    "LIMITS",
    "LIMIT_LABELS",
    "SEEDS",
    "Budget",
    "Expected",
    "Measure",
    "Recommendation",
    "fold_of",
    "held_out",
    "is_limit",
    "measure",
    "neighbours",
    "pick",
    "recommend",
]

DEFAULT_GRID = Path(__file__).parent / "grids" / "recommend.json"
"""The coarse grid: clearing at 20k, 40k and 80k tokens, at least 0 or 10k freed, tool
output truncated at 2k, 8k and 50k characters, cache-aware and superseded clearing off
and on (72 combinations), with the retention suffix and truncating only when shorter
left to the finer rounds."""
SEEDS = 3
"""How many of the best configs each finer round looks around."""
HEADROOM = 0.9
"""The share of the time left a finer round may be expected to take."""
ROUNDS_SHARE = 0.6
"""The share of ``max_seconds`` the finer rounds may take when limits per tool or command
kind are searched after them."""
DEFAULT_FOLDS = 5
"""Folds of the held-out estimate (fewer when the corpus has fewer runs)."""

Progress = Callable[[int, int], None]
Say = Callable[[str], None]


@dataclass(frozen=True)
class Budget:
    """What a recommended config may cost the agent, over the corpus."""

    misses_per_100_calls: float
    """The most misses per 100 model calls."""
    refetches_per_100_calls: float
    """The most re-fetches per 100 model calls."""
    max_run_loss: float
    """The most any one run may cost above no reduction, with recovery, as a share of its
    cost with no reduction (0.1: 10% more)."""

    def __post_init__(self) -> None:
        for limit, value in self.to_dict().items():
            if not is_limit(value):
                raise ValueError(f"{limit}: must be a number of at least 0, got {value!r}")

    def to_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)


def is_limit(value: float) -> bool:
    """Whether ``value`` can be a limit of a :class:`Budget`: a finite number, at least 0."""
    return 0 <= value < math.inf


DEFAULT_BUDGET = Budget(misses_per_100_calls=5.0, refetches_per_100_calls=2.0, max_run_loss=0.10)
"""The budget when none is given; docs/simulator.md says how each was chosen."""

LIMITS = tuple(f.name for f in dataclasses.fields(Budget))
"""The budget's limits, in the order answers name them."""
LIMIT_LABELS = {
    "misses_per_100_calls": "misses per 100 calls",
    "refetches_per_100_calls": "re-fetches per 100 calls",
    "max_run_loss": "the most one run may cost above no reduction",
}
"""How answers name each limit."""


@dataclass(frozen=True)
class Measure:
    """A config over some runs of the corpus, against no reduction on the same runs."""

    cost: float
    """Cost with recovery."""
    base: float
    """No reduction's cost (with recovery, the same: it hides nothing)."""
    misses: int
    refetches: int
    calls: int
    run_loss: float
    """The most one run costs above no reduction, with recovery, as a share of its cost
    (negative when every run costs less)."""
    runs_worse: int
    """Runs billed more than no reduction, with recovery."""

    @property
    def saved(self) -> float:
        """Share of no reduction's cost saved, with recovery."""
        return 1 - self.cost / self.base if self.base else 0.0

    @property
    def misses_per_100_calls(self) -> float:
        return 100 * self.misses / self.calls if self.calls else 0.0

    @property
    def refetches_per_100_calls(self) -> float:
        return 100 * self.refetches / self.calls if self.calls else 0.0

    def value(self, limit: str) -> float:
        """This measure's value of one of :data:`LIMITS`."""
        return self.run_loss if limit == "max_run_loss" else float(getattr(self, limit))

    def within(self, budget: Budget) -> bool:
        return not self.over(budget)

    def over(self, budget: Budget) -> list[str]:
        """The limits of ``budget`` this measure exceeds."""
        return [
            limit for limit in LIMITS if _round(self.value(limit)) > _round(getattr(budget, limit))
        ]

    def excess(self, budget: Budget) -> float:
        """How far outside ``budget``: the excess of each limit, relative to the limit."""
        total = 0.0
        for limit in LIMITS:
            allowed = getattr(budget, limit)
            scale = max(abs(allowed), 0.01 if limit == "max_run_loss" else 1.0)
            total += max(0.0, self.value(limit) - allowed) / scale
        return total

    def saves(self) -> bool:
        """Whether it costs less than no reduction, to the micro-dollar."""
        return round(self.cost * 1_000_000) < round(self.base * 1_000_000)


def _round(value: float) -> float:
    # Rates are compared as printed to 6 places, so a limit given as a printed figure holds.
    return round(value, 6)


def measure(totals: ConfigTotals, baseline: ConfigTotals, runs: Sequence[int]) -> Measure:
    """``totals`` on the runs ``runs`` (indexes in corpus order)."""
    losses = [
        totals.recovery_costs[i] / baseline.recovery_costs[i] - 1
        for i in runs
        if baseline.recovery_costs[i] > 0
    ]
    return Measure(
        cost=math.fsum(totals.recovery_costs[i] for i in runs),
        base=math.fsum(baseline.recovery_costs[i] for i in runs),
        misses=sum(totals.run_misses[i] for i in runs),
        refetches=sum(totals.run_refetches[i] for i in runs),
        calls=sum(baseline.run_calls[i] for i in runs),
        run_loss=max(losses, default=0.0),
        runs_worse=sum(
            1
            for i in runs
            if round(totals.recovery_costs[i] * 1_000_000)
            > round(baseline.recovery_costs[i] * 1_000_000)
        ),
    )


def pick(
    configs: Sequence[ConfigTotals],
    baseline: ConfigTotals,
    budget: Budget,
    runs: Sequence[int],
) -> int | None:
    """The config (index into ``configs``) that saves most with recovery on ``runs``
    within ``budget``, fewer misses then fewer re-fetches breaking ties; ``None`` when
    none within it saves anything."""
    best: tuple[int, int, int, int] | None = None
    for i, totals in enumerate(configs):
        m = measure(totals, baseline, runs)
        if not m.within(budget) or not m.saves():
            continue
        key = (round(m.cost * 1_000_000), m.misses, m.refetches, i)
        if best is None or key < best:
            best = key
    return None if best is None else best[3]


def fold_of(names: Sequence[str], folds: int) -> list[int]:
    """Each run's fold: runs ordered by a hash of their name (so that runs recorded
    together spread over the folds, the same way on every machine), then dealt round."""
    order = sorted(range(len(names)), key=lambda i: (_digest(names[i]), i))
    out = [0] * len(names)
    for n, i in enumerate(order):
        out[i] = n % folds
    return out


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class Expected:
    """What the recommendation method does on runs it has not seen (:func:`held_out`)."""

    folds: int
    saved_with_recovery: float
    """Share of no reduction's cost saved with recovery, over every run, each run priced
    under the config picked without it."""
    low: float
    """The lowest saving of one fold."""
    high: float
    """The highest saving of one fold."""
    misses_per_100_calls: float
    """Misses per 100 calls over every run, each under the config picked without it."""
    run_loss: float
    """The most one run cost above no reduction under the config picked without it."""
    picks: tuple[int | None, ...]
    """Per fold, the config picked on the others (index into the configs; ``None``: no
    reduction)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "saved_with_recovery": round(self.saved_with_recovery, 6),
            "low": round(self.low, 6),
            "high": round(self.high, 6),
            "misses_per_100_calls": round(self.misses_per_100_calls, 4),
            "run_loss": round(self.run_loss, 6),
            "folds": self.folds,
        }


def held_out(
    names: Sequence[str],
    configs: Sequence[ConfigTotals],
    baseline: ConfigTotals,
    budget: Budget,
    folds: int,
) -> Expected | None:
    """The K-fold estimate of the method's result on runs it has not seen: for each
    fold, :func:`pick` on the other folds' runs among ``configs``, then that config (or
    no reduction, when nothing was picked) measured on the fold. ``None`` with fewer than
    two runs. ``folds`` is capped at the number of runs."""
    if len(names) < 2:
        return None
    k = max(2, min(folds, len(names)))
    fold = fold_of(names, k)
    cost = base = 0.0
    misses = calls = 0
    savings: list[float] = []
    losses: list[float] = []
    picks: list[int | None] = []
    for f in range(k):
        train = [i for i in range(len(names)) if fold[i] != f]
        test = [i for i in range(len(names)) if fold[i] == f]
        chosen = pick(configs, baseline, budget, train)
        picks.append(chosen)
        m = measure(baseline if chosen is None else configs[chosen], baseline, test)
        cost += m.cost
        base += m.base
        misses += m.misses
        calls += m.calls
        savings.append(m.saved)
        losses.append(m.run_loss)
    return Expected(
        folds=k,
        saved_with_recovery=1 - cost / base if base else 0.0,
        low=min(savings),
        high=max(savings),
        misses_per_100_calls=100 * misses / calls if calls else 0.0,
        run_loss=max(losses),
        picks=tuple(picks),
    )


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
    """Index into :attr:`configs` of the recommended config; ``None`` when no config
    within the budget saves anything."""
    front: tuple[int, ...]
    """Indexes into :attr:`configs`: the Pareto front of cost with recovery against
    misses among the configs within the budget's re-fetch and run-loss limits that save
    anything, one per point, fewest misses first."""
    seconds: float
    timed_out: bool = False
    """Whether ``max_seconds`` ended the search (a round not started, or cut short) with
    neighbours left untried; ``False`` when none was left."""
    expected: Expected | None = None
    """The held-out estimate (:func:`held_out`), ``None`` with fewer than two runs."""
    binding: str | None = None
    """With no answer: the limit (one of :data:`LIMITS`) whose lifting alone would let
    the most saving config searched through; ``None`` when no config searched saves
    anything, or when there is an answer."""
    nearest: tuple[int, ...] = ()
    """With no answer: the configs that save something, nearest the budget first (up to
    three)."""
    ceiling: Mapping[str, Any] | None = None
    """What a clairvoyant reduction saves on the same corpus (:mod:`simulator.ceiling`),
    when measured."""

    def ceiling_share(self, index: int) -> float | None:
        """How much of the ceiling's saving config ``index`` achieves, both with recovery
        (1.0: all of it); ``None`` without a ceiling or when it saves nothing."""
        if self.ceiling is None:
            return None
        base = float(self.ceiling["baseline_cost_usd"])
        room = base - float(self.ceiling["cost_usd"])
        cost = self.configs[index].cost_with_recovery_usd
        return (base - cost) / room if room > 0 else None

    @cached_property
    def _measures(self) -> tuple[Measure, ...]:
        runs = range(len(self.runs))
        return tuple(measure(totals, self.baseline, runs) for totals in self.configs)

    def measure(self, index: int) -> Measure:
        """Config ``index`` over the whole corpus (measured once per recommendation)."""
        return self._measures[index]

    def runs_worse(self, index: int) -> int:
        """On how many runs config ``index`` costs more, with recovery, than no reduction."""
        return self.measure(index).runs_worse

    def entry(self, index: int) -> dict[str, Any]:
        """Config ``index`` as the JSON's ``front`` lists it."""
        totals = self.configs[index]
        m = self.measure(index)
        return {
            "config": totals.config,
            "saved_with_recovery": round(m.saved, 6),
            "misses": totals.misses,
            "misses_per_100_calls": round(m.misses_per_100_calls, 4),
            "refetches": totals.refetches,
            "refetches_per_100_calls": round(m.refetches_per_100_calls, 4),
            "run_loss": round(m.run_loss, 6),
            "runs_worse": m.runs_worse,
        }

    def to_dict(self) -> dict[str, Any]:
        """:meth:`stored` as JSON values: what ``--json`` prints and a simulation stores."""
        return dump(self.stored())

    def stored(self) -> RecommendationResults:
        """As a simulation stores it (:mod:`simulator.stored`)."""
        best = None if self.best is None else self.entry(self.best)
        saved = None if self.best is None else self.configs[self.best].saving(self.baseline)
        out = {
            "config": None if best is None else best["config"],
            "pricing": self.pricing,
            "runs": len(self.runs),
            "calls": sum(self.baseline.run_calls),
            "saved": None if saved is None else round(saved, 6),
            **{
                key: None if best is None else best[key]
                for key in (
                    "saved_with_recovery",
                    "misses",
                    "misses_per_100_calls",
                    "refetches",
                    "refetches_per_100_calls",
                    "run_loss",
                    "runs_worse",
                )
            },
            "baseline_cost_usd": round(self.baseline.cost_usd, 6),
            "cost_with_recovery_usd": (
                None
                if self.best is None
                else round(self.configs[self.best].cost_with_recovery_usd, 6)
            ),
            "configs_tried": len(self.configs),
            "budget": self.budget.to_dict(),
            "expected": None if self.expected is None else self.expected.to_dict(),
            "ceiling": None if self.ceiling is None else dict(self.ceiling),
            "ceiling_share": (
                None
                if self.best is None or (share := self.ceiling_share(self.best)) is None
                else round(share, 6)
            ),
            "binding": self.binding,
            "nearest": [self.entry(i) for i in self.nearest],
            "front": [self.entry(i) for i in self.front],
            "seconds": round(self.seconds, 1),
        }
        return msgspec.convert(out, RecommendationResults)


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
    budget: Budget = DEFAULT_BUDGET,
    folds: int = DEFAULT_FOLDS,
    max_seconds: float = 300.0,
    tool_limits: bool = True,
    with_ceiling: bool = True,
    min_cacheable_prefix: int | None = None,
    workers: int = 1,
    share: bool = True,
    progress: Progress | None = None,
    say: Say | None = None,
    clock: Callable[[], float] = time.perf_counter,
    inferred_prefix: bool = True,
) -> Recommendation:
    """Search for the config to recommend (see the module docstring). ``progress(done,
    total)`` counts replays over every round so far (the total grows as each round
    starts, since how many rounds fit in ``max_seconds`` is found as the search goes);
    ``say`` gets a line per round. ``grid``
    defaults to :data:`DEFAULT_GRID`; its fields that are no knob or switch are in every
    config. ``tool_limits`` searches limits per tool and command kind where the corpus
    calls for them (:func:`~simulator.tool_limits.dimensions`), unless the grid sets
    them. ``with_ceiling`` measures the ceiling beside the answer
    (:func:`~simulator.ceiling.ceiling`). ``inferred_prefix``: as
    :func:`~simulator.replay.replay`."""
    started = clock()
    if grid is None:
        grid = json.loads(DEFAULT_GRID.read_text(encoding="utf-8"))
    combos = grid_configs(grid)
    knobs, switches = _search_space(grid)
    labelled = [*knobs, *switches]
    every = range(len(conversations))
    dims = dimensions(conversations) if tool_limits and not set(FIELDS) & set(grid) else []
    rounds_end = max_seconds * (ROUNDS_SHARE if dims else 1.0)

    # Replays of the rounds before the current one, and the current one's total: the
    # progress goes on from round to round instead of starting again at each.
    earlier = [0, 0]

    def round_progress(done: int, total: int) -> None:
        earlier[1] = total
        if progress is not None:
            progress(earlier[0] + done, earlier[0] + total)

    def replay(named: list[tuple[str, dict[str, Any]]], baseline: bool) -> CorpusReplay:
        try:
            return replay_corpus(
                conversations,
                named,
                pricing=pricing,
                min_cacheable_prefix=min_cacheable_prefix,
                workers=workers,
                share=share,
                progress=round_progress,
                baseline=baseline,
                inferred_prefix=inferred_prefix,
            )
        finally:
            earlier[0] += earlier[1]
            earlier[1] = 0

    seen: dict[str, int] = {}
    plain: list[dict[str, Any]] = []
    """Each config replayed, before cache prices are filled in."""
    named = [(config_label(c, labelled), c) for c in combos]
    for _, config in named:
        seen[_key(config)] = len(plain)
        plain.append(config)
    first = replay(named, baseline=True)
    baseline = first.baseline
    assert baseline is not None
    configs: list[ConfigTotals] = list(first.configs)
    measures: list[Measure] = [measure(t, baseline, every) for t in configs]
    rounds = [len(named)]
    per_config = (clock() - started) / (len(named) + 1)

    def rank(index: int) -> tuple[float, int, int]:
        m = measures[index]
        return round(m.excess(budget), 6), round(m.cost * 1_000_000), index

    def point(index: int) -> tuple[int, ...]:
        m = measures[index]
        return round(m.cost * 1_000_000), m.misses, m.refetches, m.runs_worse

    def note(kind: str) -> None:
        if say is None:
            return
        best = min(range(len(configs)), key=rank)
        m = measures[best]
        say(
            f"round {len(rounds)} ({kind}): {rounds[-1]} configs, {clock() - started:.1f} s; "
            f"best so far: {configs[best].name}, saves {m.saved:.1%} with recovery, "
            f"{m.misses_per_100_calls:.1f} misses and {m.refetches_per_100_calls:.1f} "
            "re-fetches per 100 calls"
        )

    note("coarse")
    timed_out = False
    shown = [*labelled, *FIELDS] if dims else labelled

    def add(todo: list[dict[str, Any]], kind: str) -> list[int]:
        """Replay ``todo`` and add it to what was searched; the indexes it got."""
        nonlocal per_config
        round_started = clock()
        result = replay([(config_label(c, shown), c) for c in todo], baseline=False)
        added = []
        for config, totals in zip(todo, result.configs, strict=True):
            seen[_key(config)] = len(plain)
            added.append(len(plain))
            plain.append(config)
            configs.append(totals)
            measures.append(measure(totals, baseline, every))
        rounds.append(len(todo))
        per_config = (clock() - round_started) / len(todo)
        note(kind)
        return added

    def finer(deadline: float) -> bool:
        """Finer rounds until no neighbour is left or ``deadline`` (seconds from the
        start); whether time ran out with neighbours left."""
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
                return False
            left = deadline - (clock() - started)
            fits = int(HEADROOM * left / per_config) if per_config > 0 else len(todo)
            if fits < 1:
                for config in todo:  # untried: a later round may try them
                    del seen[_key(config)]
                return True
            out_of_time = fits < len(todo)
            for config in todo[fits:]:
                del seen[_key(config)]
            add(todo[:fits], "finer")
            if out_of_time:
                return True

    def limits() -> tuple[bool, bool]:
        """One pass over the limits per tool and command kind, each along the ladder
        around the best config so far: (whether it found a better config, whether time
        ran out)."""
        current = start = min(range(len(configs)), key=rank)
        for dim in dims:
            todo = [with_limit(plain[current], dim, limit) for limit in LADDER]
            todo = [c for c in todo if _key(c) not in seen]
            if not todo:
                continue
            left = max_seconds - (clock() - started)
            if per_config > 0 and HEADROOM * left < per_config * len(todo):
                return current != start, True
            current = min([current, *add(todo, dim.label)], key=rank)
        return current != start, False

    # The finer rounds, then the limits around their best, then finer rounds around
    # that, and so on while the limits find better and time is left.
    timed_out = finer(rounds_end)
    while dims and not timed_out:
        better, timed_out = limits()
        if not better or timed_out:
            break
        timed_out = finer(max_seconds * (1 + ROUNDS_SHARE) / 2)
    expected = held_out([conv.name for conv in conversations], configs, baseline, budget, folds)
    limit = None
    if with_ceiling:
        limit = clairvoyant(
            conversations,
            pricing=pricing,
            min_cacheable_prefix=min_cacheable_prefix,
            workers=workers,
            inferred_prefix=inferred_prefix,
        ).to_dict()
    return _answer(
        conversations,
        pricing,
        baseline,
        budget,
        configs,
        rounds,
        clock() - started,
        timed_out,
        expected,
        limit,
        measures,
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
    expected: Expected | None,
    ceiling: Mapping[str, Any] | None,
    measures: Sequence[Measure],
) -> Recommendation:
    every = range(len(conversations))
    best = pick(configs, baseline, budget, every)
    saving = [i for i, m in enumerate(measures) if m.saves()]
    # The front: what each step of harm buys, among configs that keep to the other limits.
    others = [i for i in saving if not set(measures[i].over(budget)) - {"misses_per_100_calls"}]
    points = [(round(measures[i].cost * 1_000_000), measures[i].misses) for i in others]
    front: dict[tuple[int, int], int] = {}
    for j in pareto_front(points):
        front.setdefault(points[j], others[j])
    binding: str | None = None
    nearest: tuple[int, ...] = ()
    if best is None and saving:
        nearest = tuple(sorted(saving, key=lambda i: (measures[i].excess(budget), i))[:3])
        lifted: dict[str, float] = {}
        for limit in LIMITS:
            rest = [i for i in saving if not set(measures[i].over(budget)) - {limit}]
            if rest:
                lifted[limit] = max(measures[i].saved for i in rest)
        if lifted:
            binding = max(LIMITS, key=lambda limit: lifted.get(limit, -math.inf))
        else:  # each saving config breaks two limits or more: name the one most broken
            binding = max(
                LIMITS, key=lambda limit: sum(limit in measures[i].over(budget) for i in saving)
            )
    return Recommendation(
        pricing=pricing.name,
        runs=tuple(conv.name for conv in conversations),
        baseline=baseline,
        budget=budget,
        configs=tuple(configs),
        rounds=tuple(rounds),
        best=best,
        front=tuple(front[p] for p in sorted(front, key=lambda p: (p[1], p[0]))),
        seconds=seconds,
        timed_out=timed_out,
        expected=expected,
        binding=binding,
        nearest=nearest,
        ceiling=ceiling,
    )
