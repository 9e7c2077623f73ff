"""The front chart of a sweep or a recommendation, drawn on the server as SVG: the
page's saving (``points.Measure``, with or without recovery) up, re-fetches and misses
across, one circle per distinct point (the same figures share one, with their count),
each a link to the point's page with the knobs in its title, the front of that measure
marked. Geometry only: the template draws what :func:`front_chart` returns; nothing here
touches the database.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from typing import Any

from reduction_app.simulations.points import Measure, PointGroup

__all__ = ["HEIGHT", "WIDTH", "front_chart"]

WIDTH, HEIGHT = 640, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 44
TICKS = 5


def _nice_step(span: float, *, whole: bool = False) -> float:
    raw = span / TICKS if span > 0 else 1.0
    if whole:
        raw = max(raw, 1.0)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10) if whole else (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def _ticks(low: float, high: float, *, whole: bool = False) -> list[float]:
    """Evenly spaced round values from at or below ``low`` to at or above ``high``
    (whole numbers only with ``whole``: counts)."""
    step = _nice_step(high - low, whole=whole)
    first, last = math.floor(low / step), math.ceil(high / step)
    return [round(i * step, 10) for i in range(first, last + 1)]


def _title(group: PointGroup, measure: Measure) -> str:
    point = group.first
    lines = [f"point {point.number}: {point.label}" if point.label else f"point {point.number}"]
    lines += [f"{name} = {value}" for name, value in point.knobs] or ["no knob set"]
    saving = measure.of(point)
    lines.append(f"{measure.label}: {'—' if saving is None else f'{100 * saving:.1f}%'}")
    misses = "—" if point.misses is None else str(point.misses)
    lines.append(f"re-fetches: {point.refetches}, misses: {misses}")
    if group.count > 1:
        lines.append(f"×{group.count}: {group.count - 1} more with the same figures")
    return "\n".join(lines)


def front_chart(
    groups: Sequence[PointGroup],
    *,
    href: Callable[[int], str],
    measure: Measure,
    front: Collection[int],
) -> dict[str, Any] | None:
    """The chart's axes and circles, ``front`` (point numbers) marked; ``None`` when no
    point has a saving to draw."""
    drawn = [g for g in groups if measure.of(g.first) is not None]
    if not drawn:
        return None
    xs = [g.first.lost for g in drawn]
    ys = [100 * (measure.of(g.first) or 0.0) for g in drawn]
    # Headroom past the highest point, so that its circle and count stay inside.
    x_ticks = _ticks(0, max(xs) * 1.05 + 0.5, whole=True)
    y_ticks = _ticks(min(min(ys), 0.0) - 0.5, max(max(ys), 0.0) + 1.0)
    x_low, x_high = x_ticks[0], x_ticks[-1]
    y_low, y_high = y_ticks[0], y_ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x_at(value: float) -> float:
        return round(LEFT + (value - x_low) / ((x_high - x_low) or 1) * plot_w, 1)

    def y_at(value: float) -> float:
        return round(TOP + (y_high - value) / ((y_high - y_low) or 1) * plot_h, 1)

    circles = []
    for group, x, y in zip(drawn, xs, ys, strict=True):
        circles.append(
            {
                "x": x_at(x),
                "y": y_at(y),
                "r": 5 + min(group.count - 1, 5),
                "count": group.count,
                "number": group.first.number,
                "pareto": group.first.number in front,
                "recommended": group.first.recommended,
                "href": href(group.first.number),
                "title": _title(group, measure),
            }
        )
    return {
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "right": WIDTH - RIGHT,
        "top": TOP,
        "bottom": HEIGHT - BOTTOM,
        "zero_y": y_at(0.0) if y_low <= 0 <= y_high else None,
        "x_ticks": [{"at": x_at(v), "label": f"{v:g}"} for v in x_ticks],
        "y_ticks": [{"at": y_at(v), "label": f"{v:g}%"} for v in y_ticks],
        "x_label": "re-fetches + misses",
        "y_label": measure.label,
        "circles": circles,
    }
