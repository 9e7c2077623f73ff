"""The dashboard's charts as Chart.js configs: the context-window chart behind the
Compare, Tune and conversation pages (the context sent at each model call and the clear
threshold in force, one series per config; from clear-phase summary events, recorded or
replayed, so both share one unit), and the Overview's bars over time
(:func:`over_time_chart`). Nothing here reads the database or runs a replay.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from simulator.stored import ComparisonResults, ReplayRun

__all__ = [
    "BARS",
    "BILLED_AXIS",
    "CONTEXT_LABEL",
    "ENGINE_AXIS",
    "MAX_FILLED_BUCKETS",
    "THRESHOLD_HEADROOM",
    "CallPoint",
    "ContextSeries",
    "comparison_series",
    "context_chart",
    "over_time_chart",
    "series_from_events",
    "series_from_run",
    "thresholds_off_chart",
]

PALETTE = ("#2f5bd3", "#d0672a", "#17813f", "#9a3bb8", "#6b7280")
THRESHOLD_HEADROOM = 1.5
"""A threshold line is drawn when at most this many times the highest point, so a far
default (160,000 tokens) does not flatten the series."""
CONTEXT_LABEL = "context sent (tokens)"
"""The label of a lone series, which stands for no config in particular."""
ENGINE_AXIS = "tokens (the config's counter)"
BILLED_AXIS = "tokens, as {pricing} bills them"
"""The y axis of a chart in the price preset's measure, formatted with its name."""
DUPLICATE_DASH = [12, 6]
"""The dash of a context line equal to an earlier one, which would hide it otherwise."""
_WARN, _RED, _GREY = "#a2520a", "#a1121a", "#9aa7bd"


@dataclass(frozen=True)
class CallPoint:
    """One model call: the context before and after the clear pass, in tokens of the
    config's counter."""

    call: int
    """1-based."""
    before: int
    after: int
    threshold: int | None
    """The ``max_tokens_for_clear`` in force; ``None`` when no pass ran (``skip_clear``)."""
    truncations: int = 0
    """Tool results truncated since the previous call."""
    cleared: bool = False
    calls_cleared: int = 0
    limit: int | None = None
    """The ``max_tokens_for_clear`` as the config counts it, when ``threshold`` is that
    value converted to another measure (``None``: ``threshold`` is the config's value)."""

    @property
    def setting(self) -> int | None:
        """The ``max_tokens_for_clear`` in the config's own counter."""
        return self.threshold if self.limit is None else self.limit


@dataclass(frozen=True)
class ContextSeries:
    source: str
    """``recorded`` (the conversation's clear events) or ``replay``."""
    points: list[CallPoint]
    trailing_truncations: int = 0
    """Truncations recorded after the last model call."""
    label: str = CONTEXT_LABEL
    """The config's name when a chart has several series."""

    @property
    def peak(self) -> int:
        return max((p.after for p in self.points), default=0)

    @property
    def clears(self) -> int:
        return sum(1 for p in self.points if p.cleared)

    @property
    def truncations(self) -> int:
        return sum(p.truncations for p in self.points) + self.trailing_truncations

    @property
    def threshold(self) -> int | None:
        """The lowest threshold in force at any call (a replay has one)."""
        return min((p.threshold for p in self.points if p.threshold is not None), default=None)

    @property
    def setting(self) -> int | None:
        """The lowest ``max_tokens_for_clear`` in force, in the config's own counter."""
        return min((p.setting for p in self.points if p.setting is not None), default=None)


# The series ------------------------------------------------------------------------------


def series_from_events(rows: Iterable[Mapping[str, Any]]) -> ContextSeries:
    """The series from recorded events in id order (truncations and clear summaries):
    truncations between two summaries arrived before the second one's model call."""
    points: list[CallPoint] = []
    pending = 0
    for row in rows:
        if row["kind"] == "summary":
            points.append(
                CallPoint(
                    call=len(points) + 1,
                    before=row["tokens_before"],
                    after=row["tokens_after"],
                    threshold=row["threshold"] or None,
                    truncations=pending,
                    cleared=row["reason"] == "applied",
                    calls_cleared=row["calls_cleared"],
                )
            )
            pending = 0
        elif row["phase"] == "truncation":
            pending += 1
    return ContextSeries("recorded", points, trailing_truncations=pending)


def _billed_point(point: CallPoint, sent: int) -> CallPoint:
    """``point`` in the price preset's measure, where the context sent counts ``sent``.

    The pass's counts and its threshold are scaled by the one ratio of this call (the
    provider's count of the context sent to the config's), so a point sits above the
    threshold line exactly when the clear phase found it above its threshold."""
    if point.after <= 0:
        return dataclasses.replace(point, before=sent, after=sent, limit=point.threshold)
    ratio = sent / point.after
    threshold = None if point.threshold is None else round(point.threshold * ratio)
    return dataclasses.replace(
        point,
        before=round(point.before * ratio),
        after=sent,
        threshold=threshold,
        limit=point.threshold,
    )


def series_from_run(
    run: ReplayRun, *, label: str | None = None, billed: bool = False
) -> ContextSeries:
    """The series of one replayed config (a run of stored results, or
    ``ReplayRun.of(result)``), labelled with its name unless ``label`` is given.

    ``billed``: in the price preset's measure (each call's ``context_tokens``, what the
    billed totals add up) instead of the config's counter."""
    points = []
    for call in run.calls:
        clear = call.clear
        point = CallPoint(
            call=call.index + 1,
            before=clear.tokens_before,
            after=clear.tokens_after,
            threshold=clear.threshold or None,
            truncations=sum(1 for e in call.events if e["phase"] == "truncation"),
            cleared=clear.cleared,
            calls_cleared=clear.calls_cleared,
        )
        points.append(_billed_point(point, call.context_tokens) if billed else point)
    return ContextSeries("replay", points, label=run.name if label is None else label)


def comparison_series(results: ComparisonResults, *, billed: bool = False) -> list[ContextSeries]:
    """One series per config of a comparison; ``billed`` as :func:`series_from_run`."""
    return [series_from_run(run, billed=billed) for run in results.results]


# The chart -------------------------------------------------------------------------------


def _far(series: Sequence[ContextSeries], headroom: float | None) -> set[int]:
    """Indices of the series whose threshold is too far above every series to draw."""
    if headroom is None:
        return set()
    limit = headroom * max(max((s.peak for s in series), default=0), 1)
    return {i for i, s in enumerate(series) if s.threshold is not None and s.threshold > limit}


def thresholds_off_chart(
    series: Sequence[ContextSeries], *, headroom: float | None = THRESHOLD_HEADROOM
) -> list[tuple[str, int]]:
    """``(label, max_tokens_for_clear)`` of the thresholds :func:`context_chart` leaves
    out, each as its config sets it (in the config's own counter)."""
    far = _far(series, headroom)
    return [
        (s.label, s.setting) for i, s in enumerate(series) if i in far and s.setting is not None
    ]


def context_chart(
    series: Sequence[ContextSeries],
    *,
    highlight: int | None = None,
    headroom: float | None = THRESHOLD_HEADROOM,
    markers: bool = False,
    axis: str = ENGINE_AXIS,
) -> dict[str, Any]:
    """The Chart.js config: per series, the context sent at each call and, dashed, the
    threshold in force (left out when more than ``headroom`` times the highest point;
    ``None`` draws every one). ``highlight`` (a 1-based call) gets a bigger point.
    A series equal to an earlier one is drawn dashed (and its threshold dashed out of
    step), so the earlier line shows through the gaps; ``axis`` titles the y axis.

    ``markers``, for a chart of one series (a conversation's page): also the context
    before each pass, and markers where a truncation came before a call and where a
    clear applied; its threshold is labelled by the config field it is.
    """
    if markers and len(series) != 1:
        raise ValueError(f"markers are drawn for one series, got {len(series)}")
    calls = max((len(s.points) for s in series), default=0)
    far = _far(series, headroom)
    lines: list[dict[str, Any]] = []
    thresholds: list[dict[str, Any]] = []
    drawn: list[list[int]] = []
    for i, s in enumerate(series):
        colour = PALETTE[i % len(PALETTE)]
        data = [p.after for p in s.points]
        duplicate = data in drawn
        drawn.append(data)
        line_style: dict[str, Any] = {"borderDash": DUPLICATE_DASH} if duplicate else {}
        lines.append(
            {
                "label": s.label,
                "data": data,
                "borderColor": colour,
                "backgroundColor": colour,
                "pointRadius": [5 if p.call == highlight else 2 for p in s.points],
                "tension": 0,
                "order": 3,
                **line_style,
            }
        )
        # A conversation's chart keeps its threshold line (and legend entry) even when no
        # pass ran; a comparison leaves out what it cannot draw.
        if i in far or (s.threshold is None and not markers):
            continue
        line = _RED if markers else colour
        thresholds.append(
            {
                "label": "max_tokens_for_clear" if markers else f"threshold: {s.label}",
                "data": [p.threshold for p in s.points],
                "borderColor": line,
                "backgroundColor": line,
                "borderDash": [8, 4] if markers else [6, 4],
                "borderWidth": 1,
                "pointRadius": 0,
                "stepped": True,
                "fill": False,
                "order": 5,
                **({"borderDashOffset": 5} if duplicate else {}),
            }
        )
    datasets = lines + (_before(series[0]) if markers else []) + thresholds
    if markers:
        datasets += _markers(series[0])
    return {
        "type": "line",
        "data": {"labels": list(range(1, calls + 1)), "datasets": datasets},
        "options": {
            "interaction": {"mode": "index", "intersect": False},
            "scales": {
                "x": {"title": {"display": True, "text": "model call"}},
                "y": {
                    "beginAtZero": True,
                    "title": {"display": True, "text": axis},
                },
            },
            "plugins": {"legend": {"position": "bottom"}},
        },
    }


def _before(series: ContextSeries) -> list[dict[str, Any]]:
    return [
        {
            "label": "before the clear pass",
            "data": [p.before for p in series.points],
            "borderColor": _GREY,
            "backgroundColor": _GREY,
            "borderDash": [4, 3],
            "pointRadius": 0,
            "order": 4,
        }
    ]


def _markers(series: ContextSeries) -> list[dict[str, Any]]:
    marker = {"type": "line", "showLine": False, "pointRadius": 7, "pointHoverRadius": 9}
    return [
        {
            **marker,
            "label": "truncation before this call",
            "data": [p.after if p.truncations else None for p in series.points],
            "pointStyle": "triangle",
            "borderColor": _WARN,
            "backgroundColor": _WARN,
            "order": 1,
        },
        {
            **marker,
            "label": "clear applied",
            "data": [p.before if p.cleared else None for p in series.points],
            "pointStyle": "rectRot",
            "borderColor": PALETTE[0],
            "backgroundColor": "#e8f0ff",
            "order": 2,
        },
    ]


# Over time -------------------------------------------------------------------------------

MAX_FILLED_BUCKETS = 1_000
"""Empty hours or days are drawn as zeros up to this many buckets; beyond, only the
buckets with values are drawn (a long, sparse history)."""
BARS = {"cost": PALETTE[0], "saved": PALETTE[2], "tokens": PALETTE[0]}
"""The colour of each kind of bar: what was spent, what was saved."""


def _bucket_times(times: Iterable[datetime], bucket: str) -> list[datetime]:
    """``times`` in order, with the empty buckets between them filled in."""
    step = timedelta(hours=1) if bucket == "hour" else timedelta(days=1)
    ordered = sorted(set(times))
    if ordered and (ordered[-1] - ordered[0]) / step < MAX_FILLED_BUCKETS:
        filled, at = [], ordered[0]
        while at <= ordered[-1]:
            filled.append(at)
            at += step
        return filled
    return ordered


def over_time_chart(
    values: Mapping[datetime, Sequence[float]],
    *,
    bucket: str,
    labels: Sequence[str],
    colours: Sequence[str],
    axis: str,
    stacked: bool = False,
) -> dict[str, Any]:
    """A bar chart per ``bucket`` (``hour`` or ``day``, UTC) of one series per label:
    ``values`` holds each bucket's figures in the order of ``labels``, and an empty
    bucket between two held ones is drawn as zeros. ``stacked`` stacks the series (a
    cost and its saving make what it would have cost)."""
    times = _bucket_times(values, bucket)
    label = "%Y-%m-%d %H:00" if bucket == "hour" else "%Y-%m-%d"
    zero = [0] * len(labels)
    datasets = [
        {
            "label": name,
            "data": [values.get(t, zero)[i] for t in times],
            "backgroundColor": colours[i],
        }
        for i, name in enumerate(labels)
    ]
    scale: dict[str, Any] = {"stacked": True} if stacked else {}
    return {
        "type": "bar",
        "data": {"labels": [t.strftime(label) for t in times], "datasets": datasets},
        "options": {
            "scales": {
                "x": scale,
                "y": {"beginAtZero": True, "title": {"display": True, "text": axis}, **scale},
            },
            "plugins": {"legend": {"display": len(labels) > 1, "position": "bottom"}},
        },
    }
