"""Stored simulation results: every kind written and read back, rows stored before
results carried a kind and version, and what is refused."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from simulator.compare import compare, sweep
from simulator.corpus_sweep import corpus_sweep
from simulator.recommend import Budget, recommend
from simulator.stored import (
    KINDS,
    RESULTS_VERSION,
    ComparisonResults,
    CorpusSweepResults,
    RecommendationResults,
    ResultsError,
    SimulationResults,
    SweepResults,
    dump,
    fields,
    load,
)
from tests.simulator.cases import ENGINE, HAND_CONFIG, hand_conversation

GRID = {"max_tokens_for_clear": [200, 300]}


@functools.cache
def _every_kind() -> list[SimulationResults]:
    conv = hand_conversation()
    return [
        compare(conv, [("hand", HAND_CONFIG)], baseline="none", pricing=ENGINE).stored(),
        sweep(conv, GRID, pricing=ENGINE, workers=1).stored(),
        corpus_sweep([conv, conv], GRID, pricing=ENGINE).stored(),
        recommend(
            [conv, conv],
            pricing=ENGINE,
            grid=GRID,
            max_seconds=30,
            budget=Budget(misses_per_100_calls=50, refetches_per_100_calls=50, max_run_loss=1),
            workers=1,
        ).stored(),
    ]


def test_every_kind_is_known_by_its_name() -> None:
    assert {
        "replay": ComparisonResults,
        "sweep": SweepResults,
        "corpus_sweep": CorpusSweepResults,
        "recommend": RecommendationResults,
    } == KINDS


@pytest.mark.parametrize("index", range(4), ids=list(KINDS))
def test_dump_then_load_gives_the_same_value_for_every_kind(index: int) -> None:
    value = _every_kind()[index]
    data = dump(value)
    assert list(data)[:2] == ["kind", "version"]
    assert (data["kind"], data["version"]) == (value.KIND, RESULTS_VERSION)
    assert load(data) == value
    # The stored JSON is what the simulator's to_dict() gives, and plain JSON values.
    assert dump(load(data)) == data
    assert {k: v for k, v in data.items() if k not in ("kind", "version")} == fields(value)


def test_a_row_stored_before_results_carried_a_kind_reads_as_its_simulations_kind() -> None:
    for value in _every_kind():
        old = fields(value)
        assert "kind" not in old and "version" not in old
        assert load(old, legacy_kind=value.KIND) == value


def test_a_row_stored_before_misses_reads_them_as_unknown() -> None:
    comparison = compare(hand_conversation(), [("hand", HAND_CONFIG)], pricing=ENGINE)
    old: dict[str, Any] = fields(comparison.stored())
    (run,) = old["results"]
    del run["totals"]["misses"], run["totals"]["cost_with_recovery_usd"], run["miss_examples"]
    read = load(old, legacy_kind="replay")
    assert isinstance(read, ComparisonResults)
    (got,) = read.results
    assert (got.totals.misses, got.totals.cost_with_recovery_usd, got.miss_examples) == (
        None,
        None,
        None,
    )
    assert "misses" not in got.totals.figures()
    assert got.totals.input_tokens_billed == comparison.results[0].totals.input_tokens_billed


def test_a_call_stored_without_its_clear_pass_takes_it_from_its_summary_event() -> None:
    comparison = compare(hand_conversation(), [("hand", HAND_CONFIG)], pricing=ENGINE)
    old: dict[str, Any] = fields(comparison.stored())
    for call in old["results"][0]["calls"]:
        del call["clear"]
    read = load(old, legacy_kind="replay")
    assert read == comparison.stored()


def test_an_old_recommendation_with_a_budget_of_old_names_reads() -> None:
    old = {
        "config": None,
        "budget": {"misses": 0, "refetches": 0},
        "front": [{"config": {"max_length_for_trunc": 200}, "misses": 2, "runs_worse": 2}],
    }
    read = load(old, legacy_kind="recommend")
    assert isinstance(read, RecommendationResults)
    assert (read.config, read.budget, read.seconds) == (None, {"misses": 0, "refetches": 0}, 0.0)
    (entry,) = read.front
    assert (entry.config, entry.misses, entry.refetches, entry.runs_worse) == (
        {"max_length_for_trunc": 200},
        2,
        None,
        2,
    )


def test_an_unknown_version_fails_loudly() -> None:
    data = dump(_every_kind()[1])
    with pytest.raises(ResultsError) as caught:
        load({**data, "version": RESULTS_VERSION + 1})
    assert str(caught.value) == (
        f"results version {RESULTS_VERSION + 1} is not one this version of Reduction Lab "
        f"reads (it reads 0 to {RESULTS_VERSION})"
    )
    with pytest.raises(ResultsError, match="results version True"):
        load({**data, "version": True})


def test_an_unknown_kind_or_a_missing_one_or_a_wrong_field_is_refused() -> None:
    data = dump(_every_kind()[1])
    with pytest.raises(ResultsError) as caught:
        load({**data, "kind": "histogram"})
    assert str(caught.value) == (
        "results of kind 'histogram': expected one of "
        "['corpus_sweep', 'recommend', 'replay', 'sweep']"
    )
    with pytest.raises(ResultsError) as caught:
        load(fields(load(data)))
    assert str(caught.value) == "results stored without a kind: say which kind they are"
    with pytest.raises(ResultsError) as caught:
        load({**data, "pareto_front": "all"})
    assert str(caught.value) == (
        "results of kind 'sweep': Expected `array`, got `str` - at `$.pareto_front`"
    )
    with pytest.raises(ResultsError, match="expected a JSON object, got list"):
        load([])  # type: ignore[arg-type]
