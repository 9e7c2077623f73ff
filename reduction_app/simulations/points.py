"""The points of a sweep or a recommendation: each combination replayed, as the pages
show it and act on it (open in Compare or Tune, save as a config).

Input is a simulation's results as :mod:`simulator.stored` reads them: a corpus sweep (from
the Sweep page), a sweep of one conversation (from the REST API) or a recommendation.
Knobs are shown as ``name = value`` pairs, in the engine spec's order. Nothing here
touches the database.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reduction_app import engine
from simulator.compare import GRID_KNOBS
from simulator.stored import (
    CorpusCombination,
    CorpusSweepResults,
    CorpusTotals,
    FrontEntry,
    RecommendationResults,
    ReplayTotals,
    SimulationResults,
    SweepResults,
    SweepRow,
)

if TYPE_CHECKING:
    from reduction_app.models import Simulation

__all__ = [
    "Measure",
    "Point",
    "PointGroup",
    "front_numbers",
    "grid_items",
    "group_points",
    "knob_items",
    "page_measure",
    "points_of",
]


def _value_text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "none"
    return str(value)


_ORDER = {name: i for i, name in enumerate(GRID_KNOBS)}


def _ordered(names: Iterable[str]) -> list[str]:
    """The spec's knobs and switches in its order, then the other fields by name."""
    return sorted(names, key=lambda k: (_ORDER.get(k, len(_ORDER)), k))


_DEFAULTS = engine.config_to_dict(engine.check_config({}))


def knob_items(
    config: Mapping[str, Any] | None, grid: Collection[str] = ()
) -> list[tuple[str, str]]:
    """``(name, value)`` per field of ``config`` that the grid sweeps or that differs from
    the engine's default (a replay keeps every field); ``[]`` for no reduction."""
    if not config:
        return []
    shown = [k for k in config if k in grid or config[k] != _DEFAULTS.get(k, object())]
    return [(name, _value_text(config[name])) for name in _ordered(shown)]


def grid_items(grid: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """``(name, values)`` per field of a grid, the values joined by commas."""
    if not grid:
        return []
    out = []
    for name in _ordered(grid):
        values = grid[name]
        items = values if isinstance(values, list) else [values]
        out.append((name, ", ".join(_value_text(v) for v in items)))
    return out


@dataclass(frozen=True)
class Point:
    """One config replayed: where it sits and what it is."""

    number: int
    """1-based, the point's address on its simulation's pages."""
    label: str
    config: dict[str, Any]
    knobs: list[tuple[str, str]]
    cost_usd: float | None
    recovery_usd: float | None
    """Cost with recovery; ``None`` where it was not measured."""
    saved: float | None
    """The share of no reduction's cost saved."""
    saved_with_recovery: float | None
    refetches: int
    misses: int | None
    billed: int | None
    pareto: bool = False
    recommended: bool = False
    runs_worse: int | None = None
    """On how many conversations it costs more than no reduction, with recovery."""
    worse_runs: tuple[str, ...] = ()
    """Those conversations by name (their client ids), where the results name them."""

    @property
    def lost(self) -> int:
        """Re-fetches and misses: what the reduction cost the agent."""
        return self.refetches + (self.misses or 0)

    @property
    def key(self) -> tuple[Any, ...]:
        """Equal for points no figure tells apart."""
        return (self.cost_usd, self.recovery_usd, self.refetches, self.misses, self.billed)


def _recovery_saving(
    totals: ReplayTotals | CorpusTotals, base: ReplayTotals | CorpusTotals | None
) -> float | None:
    mine = totals.cost_with_recovery_usd
    theirs = None if base is None else base.cost_with_recovery_usd
    if mine is None or not theirs:
        return None
    return 1 - mine / theirs


def _sweep_points(results: SweepResults | CorpusSweepResults, grid: Collection[str]) -> list[Point]:
    base = None if results.baseline is None else results.baseline.totals
    rows: Sequence[SweepRow | CorpusCombination] = (
        results.combinations if isinstance(results, CorpusSweepResults) else results.results
    )
    out = []
    for number, row in enumerate(rows, start=1):
        totals = row.totals
        config = dict(row.config or {})
        # A sweep of one conversation, and a corpus sweep stored before misses were
        # measured, leave the saving with recovery to be worked out from the totals.
        recovery = row.cost_saved_with_recovery if isinstance(row, CorpusCombination) else None
        if recovery is None:
            recovery = _recovery_saving(totals, base)
        out.append(
            Point(
                number=number,
                label=row.name,
                config=config,
                knobs=knob_items(config, grid),
                cost_usd=totals.cost_usd,
                recovery_usd=totals.cost_with_recovery_usd,
                saved=row.cost_saved,
                saved_with_recovery=recovery,
                refetches=int(totals.refetches or 0),
                misses=totals.misses,
                billed=totals.input_tokens_billed,
                pareto=row.pareto,
                runs_worse=(
                    row.billed_more_with_recovery if isinstance(row, CorpusCombination) else None
                ),
                worse_runs=(
                    row.billed_more_with_recovery_runs if isinstance(row, CorpusCombination) else ()
                ),
            )
        )
    return out


def _recommend_points(results: RecommendationResults) -> list[Point]:
    entries: list[tuple[FrontEntry, bool]] = []
    best = results.config
    if best is not None:
        entries.append(
            (
                FrontEntry(
                    config=best,
                    saved_with_recovery=results.saved_with_recovery,
                    misses=results.misses,
                    refetches=results.refetches,
                    runs_worse=results.runs_worse,
                ),
                True,
            )
        )
    entries += [(e, False) for e in results.front if e.config != best]
    out = []
    for number, (entry, recommended) in enumerate(entries, start=1):
        config = dict(entry.config or {})
        out.append(
            Point(
                number=number,
                label="recommended" if recommended else f"front point {number}",
                config=config,
                # A config recommended holds only the knobs searched: every one is shown.
                knobs=knob_items(config, config),
                cost_usd=None,
                recovery_usd=None,
                saved=results.saved if recommended else None,
                saved_with_recovery=entry.saved_with_recovery,
                refetches=int(entry.refetches or 0),
                misses=entry.misses,
                billed=None,
                pareto=True,
                recommended=recommended,
                runs_worse=entry.runs_worse,
            )
        )
    return out


def points_of(
    results: SimulationResults | None, grid: Mapping[str, Any] | None = None
) -> list[Point]:
    """Every point of a finished sweep or recommendation; ``[]`` for a replay or results
    not there yet. Each shows the knobs ``grid`` sweeps and those off their defaults."""
    if isinstance(results, RecommendationResults):
        return _recommend_points(results)
    if isinstance(results, SweepResults | CorpusSweepResults):
        return _sweep_points(results, tuple(grid or ()))
    return []


@dataclass
class PointGroup:
    """Points with the same figures, shown once with how many they are."""

    first: Point
    members: list[Point] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.members)


def group_points(points: Sequence[Point]) -> list[PointGroup]:
    """Points grouped by their figures, in order of first appearance."""
    groups: dict[tuple[Any, ...], PointGroup] = {}
    for point in points:
        group = groups.setdefault(point.key, PointGroup(point))
        group.members.append(point)
    return list(groups.values())


@dataclass(frozen=True)
class Measure:
    """The saving a simulation's page plots, tabulates and draws its front by: with
    recovery counted where every point measured it, else without."""

    recovery: bool

    @property
    def label(self) -> str:
        return "cost saved with recovery" if self.recovery else "cost saved, without recovery"

    def of(self, point: Point) -> float | None:
        return point.saved_with_recovery if self.recovery else point.saved


def page_measure(points: Sequence[Point]) -> Measure:
    """With recovery when every point has it (results stored before misses were measured
    have none: a page mixing the two would compare unlike figures)."""
    return Measure(recovery=bool(points) and all(p.saved_with_recovery is not None for p in points))


def front_numbers(points: Sequence[Point], measure: Measure) -> frozenset[int]:
    """The numbers of the points on the Pareto front of ``measure`` (higher is better)
    against re-fetches + misses (fewer is better): those no other point matches on both
    and beats on one. A recommendation's points are its own front, as it measured it."""
    if any(p.recommended for p in points):
        return frozenset(p.number for p in points if p.pareto)
    figures = [
        (p.number, round(saving, 9), p.lost)
        for p in points
        if (saving := measure.of(p)) is not None
    ]
    return frozenset(
        number
        for number, saving, lost in figures
        if not any(s >= saving and n <= lost and (s > saving or n < lost) for _, s, n in figures)
    )


def point_name(simulation: Simulation, point: Point) -> str:
    """How a point is named where it stands for a config: the name a config saved from it
    gets unless one is given, and its label on Compare."""
    if point.recommended:
        return f"Recommended by #{simulation.pk}"
    return f"{simulation.get_kind_display()} #{simulation.pk} point {point.number}"


def point_value(simulation: Simulation, point: Point) -> str:
    """How Compare's ``config`` parameter names a point of a simulation, replayed as it
    is, without saving it as a config."""
    return f"point-{simulation.pk}-{point.number}"
