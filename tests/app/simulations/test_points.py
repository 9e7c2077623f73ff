"""A sweep's points as the pages show them, and the front chart's geometry."""

from __future__ import annotations

from typing import Any

from reduction_app.simulations.front_chart import HEIGHT, WIDTH, front_chart
from reduction_app.simulations.points import (
    Measure,
    front_numbers,
    grid_items,
    group_points,
    knob_items,
    page_measure,
    points_of,
)
from simulator.stored import load


def _combination(name: str, config: dict[str, Any], cost: float, misses: int) -> dict[str, Any]:
    totals = {
        "cost_usd": cost,
        "cost_with_recovery_usd": cost + 0.1 * misses,
        "input_tokens_billed": int(cost * 1000),
        "refetches": 1,
        "misses": misses,
    }
    return {
        "name": name,
        "config": config,
        "totals": totals,
        "cost_saved": 1 - cost,
        "cost_saved_with_recovery": 1 - totals["cost_with_recovery_usd"],
        "pareto": misses == 0,
    }


RESULTS = {
    "baseline": {"name": "no reduction", "totals": {"cost_usd": 1.0}},
    "combinations": [
        _combination(
            "clear@20k", {"max_tokens_for_clear": 20000, "clear_superseded": True}, 0.5, 2
        ),
        _combination(
            "clear@40k", {"max_tokens_for_clear": 40000, "clear_superseded": True}, 0.75, 0
        ),
        _combination(
            "clear@80k", {"max_tokens_for_clear": 80000, "clear_superseded": True}, 0.75, 0
        ),
    ],
}
GRID = {"max_tokens_for_clear": [20000, 40000, 80000], "clear_superseded": [True]}


def test_knob_items_are_names_and_values_in_the_specs_order() -> None:
    config = {
        "clear_superseded": True,
        "max_length_for_trunc": 50000,
        "max_tokens_for_clear": 20000,
    }
    # max_length_for_trunc is at its default (50,000) and not swept: left out.
    assert knob_items(config) == [("max_tokens_for_clear", "20000"), ("clear_superseded", "on")]
    assert knob_items(config, ["max_length_for_trunc"]) == [
        ("max_tokens_for_clear", "20000"),
        ("max_length_for_trunc", "50000"),
        ("clear_superseded", "on"),
    ]
    assert knob_items(None) == []
    assert grid_items(GRID) == [
        ("max_tokens_for_clear", "20000, 40000, 80000"),
        ("clear_superseded", "on"),
    ]


def test_points_with_the_same_figures_group_once() -> None:
    points = points_of(load(RESULTS, legacy_kind="corpus_sweep"), GRID)
    assert [p.number for p in points] == [1, 2, 3]
    assert points[0].knobs == [("max_tokens_for_clear", "20000"), ("clear_superseded", "on")]
    # 0.5 + 0.1 × 2 misses = 0.7 with recovery: 30% saved; 1 re-fetch + 2 misses.
    assert (round(points[0].saved_with_recovery or 0, 6), points[0].lost) == (0.3, 3)
    groups = group_points(points)
    assert [(g.first.number, g.count) for g in groups] == [(1, 1), (2, 2)]


def test_front_chart_draws_one_circle_per_group_linked_to_its_point() -> None:
    groups = group_points(points_of(load(RESULTS, legacy_kind="corpus_sweep"), GRID))
    chart = front_chart(
        groups, href=lambda n: f"/p/{n}/", measure=Measure(recovery=True), front={2, 3}
    )
    assert chart is not None
    assert (chart["width"], chart["height"]) == (WIDTH, HEIGHT)
    assert chart["y_label"] == "cost saved with recovery"
    circles = chart["circles"]
    assert [(c["href"], c["count"], c["pareto"]) for c in circles] == [
        ("/p/1/", 1, False),
        ("/p/2/", 2, True),
    ]
    # Fewer lost (1 against 3) sits left; more saved (25% against 30%) sits higher.
    assert circles[1]["x"] < circles[0]["x"]
    assert circles[0]["y"] < circles[1]["y"]
    assert circles[1]["title"].splitlines() == [
        "point 2: clear@40k",
        "max_tokens_for_clear = 40000",
        "clear_superseded = on",
        "cost saved with recovery: 25.0%",
        "re-fetches: 1, misses: 0",
        "×2: 1 more with the same figures",
    ]
    assert [t["label"] for t in chart["x_ticks"]] == ["0", "1", "2", "3", "4"]


def test_front_chart_is_none_without_savings() -> None:
    assert front_chart([], href=str, measure=Measure(recovery=False), front=()) is None


def test_front_numbers_is_the_front_of_the_measure_the_chart_plots() -> None:
    """The stored flags are the front of cost against re-fetches; the page's front is of
    its own measure against re-fetches + misses."""
    results = {
        **RESULTS,
        "combinations": [
            *RESULTS["combinations"],
            # 0.8 + 0.1 × 1 = 0.9: 10% saved with recovery, 2 lost: below clear@40k's 25%
            # with 1 lost, so off the front.
            _combination("clear@10k", {"max_tokens_for_clear": 10000}, 0.8, 1),
        ],
    }
    points = points_of(load(results, legacy_kind="corpus_sweep"), GRID)
    measure = page_measure(points)
    assert (measure.recovery, measure.label) == (True, "cost saved with recovery")
    # clear@20k: the most saved (30%), with 3 lost; clear@40k and @80k: 25% with 1 lost.
    assert front_numbers(points, measure) == {1, 2, 3}
    assert [p.pareto for p in points] == [False, True, True, False]
    without = Measure(recovery=False)
    assert without.label == "cost saved, without recovery"
    # Without recovery: clear@20k saves 50% with 3 lost, clear@40k 25% with 1 and
    # clear@10k 20% with 2, so clear@40k still beats clear@10k on both.
    assert front_numbers(points, without) == {1, 2, 3}
