"""The points of a sweep or a recommendation: each combination replayed, as the pages
show it and act on it (open in Compare or Tune, save as a config).

Input is what a ``Simulation`` stores: ``simulator.corpus_sweep.CorpusSweep.to_dict()``
(a sweep from the Sweep page, under ``combinations``), ``simulator.compare.SweepResult``
(a sweep of one conversation from the REST API, under ``results``) or
``simulator.recommend.Recommendation.to_dict()``. Knobs are shown as ``name = value``
pairs, in the engine spec's order. Nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reduction_app import engine
from simulator.compare import GRID_KNOBS

__all__ = ["Point", "PointGroup", "grid_items", "group_points", "knob_items", "points_of"]


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


_DEFAULTS = engine.config_to_dict(engine.config_from_dict({}, backend=engine.InMemoryBackend()))


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
    """On how many conversations it costs more than no reduction."""

    @property
    def lost(self) -> int:
        """Re-fetches and misses: what the reduction cost the agent."""
        return self.refetches + (self.misses or 0)

    @property
    def shown_saving(self) -> float | None:
        """Cost saved counting recovery where it was measured, else plain cost saved."""
        return self.saved_with_recovery if self.saved_with_recovery is not None else self.saved

    @property
    def key(self) -> tuple[Any, ...]:
        """Equal for points no figure tells apart."""
        return (self.cost_usd, self.recovery_usd, self.refetches, self.misses, self.billed)


def _recovery_saving(totals: Mapping[str, Any], base: Mapping[str, Any] | None) -> float | None:
    mine = totals.get("cost_with_recovery_usd")
    theirs = (base or {}).get("cost_with_recovery_usd")
    if mine is None or not theirs:
        return None
    return 1 - float(mine) / float(theirs)


def _sweep_points(
    results: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], grid: Collection[str]
) -> list[Point]:
    base = results.get("baseline")
    base_totals = base.get("totals") if isinstance(base, Mapping) else None
    out = []
    for number, row in enumerate(rows, start=1):
        totals = row.get("totals", {})
        config = dict(row.get("config") or {})
        recovery = row.get("cost_saved_with_recovery")
        if recovery is None and "cost_saved_with_recovery" not in row:
            recovery = _recovery_saving(totals, base_totals)
        out.append(
            Point(
                number=number,
                label=str(row.get("name", "")),
                config=config,
                knobs=knob_items(config, grid),
                cost_usd=totals.get("cost_usd"),
                recovery_usd=totals.get("cost_with_recovery_usd"),
                saved=row.get("cost_saved"),
                saved_with_recovery=recovery,
                refetches=int(totals.get("refetches", 0)),
                misses=totals.get("misses"),
                billed=totals.get("input_tokens_billed"),
                pareto=bool(row.get("pareto")),
                runs_worse=row.get("billed_more_with_recovery"),
            )
        )
    return out


def _recommend_points(results: Mapping[str, Any]) -> list[Point]:
    """The recommended config first (when there is one), then the rest of the front."""
    entries: list[tuple[Mapping[str, Any], bool]] = []
    best = results.get("config")
    if best is not None:
        entries.append(
            (
                {
                    "config": best,
                    "saved_with_recovery": results.get("saved_with_recovery"),
                    "saved": results.get("saved"),
                    "misses": results.get("misses"),
                    "refetches": results.get("refetches"),
                    "runs_worse": results.get("runs_worse"),
                },
                True,
            )
        )
    entries += [(e, False) for e in results.get("front", []) if e.get("config") != best]
    out = []
    for number, (entry, recommended) in enumerate(entries, start=1):
        config = dict(entry.get("config") or {})
        out.append(
            Point(
                number=number,
                label="recommended" if recommended else f"front point {number}",
                config=config,
                # A config recommended holds only the knobs searched: every one is shown.
                knobs=knob_items(config, config),
                cost_usd=None,
                recovery_usd=None,
                saved=entry.get("saved"),
                saved_with_recovery=entry.get("saved_with_recovery"),
                refetches=int(entry.get("refetches") or 0),
                misses=entry.get("misses"),
                billed=None,
                pareto=True,
                recommended=recommended,
                runs_worse=entry.get("runs_worse"),
            )
        )
    return out


def points_of(
    kind: str, results: Mapping[str, Any] | None, grid: Mapping[str, Any] | None = None
) -> list[Point]:
    """Every point of a finished sweep or recommendation; ``[]`` for a replay. Each shows
    the knobs ``grid`` sweeps and those off their defaults."""
    if not results:
        return []
    swept = tuple(grid or ())
    if kind == "recommend":
        return _recommend_points(results)
    if kind == "sweep" and "combinations" in results:
        return _sweep_points(results, results["combinations"], swept)
    if kind == "sweep":
        return _sweep_points(results, results.get("results", []), swept)
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
