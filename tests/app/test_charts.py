"""The context-window chart: series from replayed calls (old and new result shapes) and
from recorded events, and the one builder's datasets; and the bars over time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reduction_app.charts import (
    CallPoint,
    ContextSeries,
    comparison_series,
    context_chart,
    over_time_chart,
    series_from_events,
    series_from_run,
    thresholds_off_chart,
)
from simulator.compare import compare
from simulator.stored import ComparisonResults, ReplayRun, load
from tests.simulator.cases import ENGINE, HAND_CONFIG, hand_conversation


def _summary(before: int, after: int, threshold: int, reason: str) -> dict[str, Any]:
    return {
        "phase": "clear",
        "kind": "summary",
        "tokens_before": before,
        "tokens_after": after,
        "threshold": threshold,
        "reason": reason,
        "calls_cleared": 1 if reason == "applied" else 0,
    }


def _run(data: dict[str, Any]) -> ReplayRun:
    """A run as stored results read it, each call with the counts every call carries (the
    chart reads none of them but ``context_tokens``)."""
    calls = [
        {"cached_tokens": 0, "new_tokens": 0, "visible_tool_share": 1.0, **c} for c in data["calls"]
    ]
    results = load({"baseline": data["name"], "results": [{**data, "calls": calls, "totals": {}}]},
                   legacy_kind="replay")  # fmt: skip
    assert isinstance(results, ComparisonResults)
    return results.results[0]


def test_series_from_run_reads_each_calls_clear_pass() -> None:
    comparison = compare(hand_conversation(), [("hand", HAND_CONFIG)], pricing=ENGINE)
    (series,) = comparison_series(comparison.stored())
    assert series.label == "hand"
    assert series.points == [
        CallPoint(1, 30, 30, 300),
        CallPoint(2, 139, 139, 300),
        CallPoint(3, 348, 273, 300, cleared=True, calls_cleared=1),
        CallPoint(4, 525, 350, 300, truncations=1, cleared=True, calls_cleared=1),
    ]
    assert series.threshold == 300


def test_series_from_run_without_clear_passes_reads_the_summary_events() -> None:
    """Results stored before calls carried ``clear`` still hold the events."""
    run = {
        "name": "old",
        "calls": [
            {"index": 0, "context_tokens": 41, "events": [_summary(30, 30, 300, "below")]},
            {
                "index": 1,
                "context_tokens": 400,
                "events": [
                    {"phase": "truncation", "kind": "tool"},
                    {"phase": "clear", "kind": "tool"},
                    _summary(348, 273, 300, "applied"),
                ],
            },
        ],
    }
    assert series_from_run(_run(run)).points == [
        CallPoint(1, 30, 30, 300),
        CallPoint(2, 348, 273, 300, truncations=1, cleared=True, calls_cleared=1),
    ]


def test_series_from_run_without_any_pass_falls_back_to_the_context_sent() -> None:
    run = {"name": "off", "calls": [{"index": 0, "context_tokens": 41, "events": []}]}
    assert series_from_run(_run(run), label="x") == ContextSeries(
        "replay", [CallPoint(1, 41, 41, None)], label="x"
    )


def test_series_from_run_billed_draws_the_context_sent_and_converts_the_threshold() -> None:
    """In the price preset's measure each call's counts and threshold are scaled by that
    call's ratio of billed tokens to the config's count of the context sent."""
    run = {
        "name": "tight",
        "calls": [
            {"index": 0, "context_tokens": 33, "clear": _pass(30, 30, 300, False)},
            {"index": 1, "context_tokens": 546, "clear": _pass(700, 420, 300, True)},
        ],
    }
    series = series_from_run(_run(run), billed=True)
    assert series.points == [
        # 33 / 30 = 1.1: 300 tokens of the config's counter are 330 billed.
        CallPoint(1, 33, 33, 330, limit=300),
        # 546 / 420 = 1.3: 700 -> 910 before the pass, 300 -> 390.
        CallPoint(2, 910, 546, 390, cleared=True, limit=300),
    ]
    assert (series.peak, series.threshold, series.setting) == (546, 330, 300)
    # What is left off the chart is named by the value the config sets.
    assert thresholds_off_chart([series], headroom=0.5) == [("tight", 300)]
    assert series_from_run(_run(run)).points[1] == CallPoint(2, 700, 420, 300, cleared=True)


def _pass(before: int, after: int, threshold: int, cleared: bool) -> dict[str, Any]:
    return {
        "tokens_before": before,
        "tokens_after": after,
        "threshold": threshold,
        "cleared": cleared,
    }


def test_series_from_events_counts_truncations_before_each_call() -> None:
    rows = [
        _summary(10, 10, 100, "below_threshold"),
        {"phase": "truncation", "kind": "tool"},
        _summary(150, 90, 100, "applied"),
        {"phase": "truncation", "kind": "tool"},
    ]
    series = series_from_events(rows)
    assert series.points == [
        CallPoint(1, 10, 10, 100),
        CallPoint(2, 150, 90, 100, truncations=1, cleared=True, calls_cleared=1),
    ]
    assert (series.source, series.truncations, series.clears, series.peak) == (
        "recorded",
        2,
        1,
        90,
    )


def _series(label: str, after: list[int], threshold: int | None) -> ContextSeries:
    points = [CallPoint(i + 1, a, a, threshold) for i, a in enumerate(after)]
    return ContextSeries("replay", points, label=label)


def test_context_chart_one_line_per_series_and_the_thresholds_near_them() -> None:
    series = [
        _series("tight", [50, 90], 100),
        _series("defaults", [60, 120], 160_000),
        _series("off", [60, 120], None),
    ]
    chart = context_chart(series, highlight=2)
    datasets = chart["data"]["datasets"]
    assert [d["label"] for d in datasets] == ["tight", "defaults", "off", "threshold: tight"]
    assert [d["data"] for d in datasets] == [[50, 90], [60, 120], [60, 120], [100, 100]]
    assert datasets[0]["pointRadius"] == [2, 5]
    assert chart["data"]["labels"] == [1, 2]
    assert thresholds_off_chart(series) == [("defaults", 160_000)]
    assert thresholds_off_chart(series, headroom=None) == []


def test_context_chart_dashes_a_series_equal_to_an_earlier_one() -> None:
    """The later of two equal lines is dashed, and its threshold dashed out of step, so
    neither hides the other; a different series stays solid."""
    series = [
        _series("off", [60, 120], 150),
        _series("other", [60, 90], 150),
        _series("defaults", [60, 120], 150),
    ]
    datasets = context_chart(series)["data"]["datasets"]
    labels = [d["label"] for d in datasets]
    assert labels[:3] == ["off", "other", "defaults"]
    assert [d.get("borderDash") for d in datasets[:3]] == [None, None, [12, 6]]
    thresholds = {d["label"]: d for d in datasets[3:]}
    assert thresholds["threshold: off"].get("borderDashOffset") is None
    assert thresholds["threshold: defaults"]["borderDashOffset"] == 5


def test_context_chart_markers_for_one_series() -> None:
    points = [
        CallPoint(1, 10, 10, None, truncations=1),
        CallPoint(2, 150, 90, None, cleared=True),
    ]
    chart = context_chart([ContextSeries("replay", points)], headroom=None, markers=True)
    labels = [d["label"] for d in chart["data"]["datasets"]]
    assert labels == [
        "context sent (tokens)",
        "before the clear pass",
        "max_tokens_for_clear",
        "truncation before this call",
        "clear applied",
    ]
    sent, before, threshold, truncations, clears = chart["data"]["datasets"]
    assert (sent["data"], before["data"], threshold["data"]) == ([10, 90], [10, 150], [None] * 2)
    assert (truncations["data"], clears["data"]) == ([10, None], [None, 150])
    with pytest.raises(ValueError, match="markers are drawn for one series, got 2"):
        context_chart([ContextSeries("replay", points)] * 2, markers=True)


def test_over_time_chart_fills_empty_buckets_and_stacks() -> None:
    day = datetime(2026, 12, 1, tzinfo=UTC)
    chart = over_time_chart(
        {day: (1.0, 0.5), day + timedelta(days=3): (2.0, 0.0)},
        bucket="day",
        labels=("cost", "saved"),
        colours=("#111111", "#222222"),
        axis="US dollars",
        stacked=True,
    )
    assert chart["data"]["labels"] == ["2026-12-01", "2026-12-02", "2026-12-03", "2026-12-04"]
    assert [d["data"] for d in chart["data"]["datasets"]] == [[1.0, 0, 0, 2.0], [0.5, 0, 0, 0.0]]
    assert chart["options"]["scales"]["y"]["stacked"] is True
    assert chart["options"]["plugins"]["legend"]["display"] is True


def test_over_time_chart_leaves_a_long_sparse_history_unfilled() -> None:
    hour = datetime(2026, 1, 1, tzinfo=UTC)
    far = hour + timedelta(hours=5_000)
    chart = over_time_chart(
        {hour: (3,), far: (4,)}, bucket="hour", labels=("tokens",), colours=("#000",), axis="t"
    )
    assert chart["data"]["labels"] == ["2026-01-01 00:00", far.strftime("%Y-%m-%d %H:00")]
    assert chart["data"]["datasets"][0]["data"] == [3, 4]
    assert chart["options"]["plugins"]["legend"]["display"] is False
