"""Tests for simulator.front: its goal over the shipped recordings, and the copy of
its tables in docs/simulator.md."""

from __future__ import annotations

import functools
import io
import json

import pytest

from simulator import cli
from simulator.front import (
    CODING,
    FRONT_CONFIGS,
    SERVICE,
    ConfigTotals,
    FrontResult,
    front,
    render_front,
)
from simulator.pricing import cache_percents, pricing_for, with_cache_prices
from tests.conftest import CONVERSATIONS, REPO, needs_recordings

SONNET = pricing_for("claude-sonnet-4.5")


@pytest.fixture(scope="module")
def shipped() -> FrontResult:
    return front(CONVERSATIONS, SONNET)


@needs_recordings
def test_front_meets_the_goal_on_the_shipped_recordings(shipped: FrontResult) -> None:
    base, budget = shipped.coding[0], shipped.coding[1]
    assert len(shipped.recordings) == 11
    assert (round(base.cost_usd, 4), base.input_tokens_billed) == (1.3418, 2_508_734)
    assert budget.refetches == 0
    strategies = shipped.coding[-2]
    assert f"{strategies.saving(base):.1%}" == "26.6%"
    assert strategies.refetches == 0
    assert strategies.worse_than(base) == []
    assert shipped.service[-2].worse_than(shipped.service[0]) == []
    assert shipped.goal_configs() == [len(FRONT_CONFIGS) - 2]


@needs_recordings
def test_front_eino_configs_miss_the_goal(shipped: FrontResult) -> None:
    """Clear at 10k with truncation at 8k saves 33.4% but re-fetches 3 results; the same
    knobs as the strategies' config, without the strategies, bill two τ-bench runs more
    than no reduction (a 4,057-character output whose notice is 4,195)."""
    base = shipped.coding[0]
    ten_k, same_knobs = shipped.coding[3], shipped.coding[4]
    assert (f"{ten_k.saving(base):.1%}", ten_k.refetches) == ("33.4%", 3)
    assert (f"{same_knobs.saving(base):.1%}", same_knobs.refetches) == ("26.1%", 0)
    assert len(shipped.service[4].worse_than(shipped.service[0])) == 2
    assert not any(shipped.meets_goal(i) for i in range(2, 5))


@needs_recordings
def test_front_manifest_and_digests_cost_what_they_carry(shipped: FrontResult) -> None:
    """The last row adds the manifest and 50-token digests: more tokens, one run billed
    more than no reduction, and a re-fetch from the clears moving."""
    base, last = shipped.coding[0], shipped.coding[-1]
    assert (f"{last.saving(base):.1%}", last.refetches) == ("21.2%", 1)
    assert [shipped.recordings[i] for i in last.worse_than(base)] == ["gpt4-pydicom-1458.traj"]
    assert not shipped.meets_goal(len(FRONT_CONFIGS) - 1)


@needs_recordings
def test_front_simulator_page_shows_the_command_output(shipped: FrontResult) -> None:
    """The tables of docs/simulator.md are what ``python -m simulator front`` prints."""
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    assert render_front(shipped) in page


@needs_recordings
def test_front_sets_are_the_shipped_files() -> None:
    for path in CODING + SERVICE:
        assert (CONVERSATIONS / path).is_file(), path


@pytest.mark.parametrize(
    ("preset", "read", "write"),
    [("claude-sonnet-4.5", 10, 125), ("gpt-4o", 50, 100), ("gpt-5", 10, 100), ("gpt-4", 100, 100)],
)
def test_cache_percents_from_the_preset(preset: str, read: int, write: int) -> None:
    assert cache_percents(pricing_for(preset)) == {
        "clear_cache_read_percent": read,
        "clear_cache_write_percent": write,
    }


def test_with_cache_prices_fills_only_what_a_cache_aware_config_leaves_out() -> None:
    gpt4o = pricing_for("gpt-4o")
    assert with_cache_prices(None, gpt4o) is None
    assert with_cache_prices({"max_tokens_for_clear": 5}, gpt4o) == {"max_tokens_for_clear": 5}
    assert with_cache_prices({"clear_cache_aware": True}, gpt4o) == {
        "clear_cache_read_percent": 50,
        "clear_cache_write_percent": 100,
        "clear_cache_aware": True,
    }
    named = {"clear_cache_aware": True, "clear_cache_read_percent": 20}
    assert with_cache_prices(named, gpt4o) == {**named, "clear_cache_write_percent": 100}


def _totals(name: str, costs: list[float], refetches: int = 0) -> ConfigTotals:
    return ConfigTotals(name, {}, cost_usd=sum(costs), refetches=refetches, costs=costs)


def _result(candidate: ConfigTotals, service: list[float] | None = None) -> FrontResult:
    base_service = [1.0, 1.0]
    return FrontResult(
        pricing="p",
        recordings=("a", "b"),
        coding=(_totals("none", [1.0, 1.0]), _totals("40k", [1.0, 1.0], 2), candidate),
        service=(
            _totals("none", base_service),
            _totals("40k", base_service),
            _totals("c", service or base_service),
        ),
    )


def test_meets_goal_rules() -> None:
    assert _result(_totals("c", [0.7, 0.8], 2)).meets_goal(2)  # saves 25%, 2 re-fetches
    assert not _result(_totals("c", [0.7, 0.81])).meets_goal(2)  # saves 24.5%
    assert not _result(_totals("c", [0.5, 0.5], 3)).meets_goal(2)  # over the budget
    assert not _result(_totals("c", [0.4, 1.01])).meets_goal(2)  # worse on run b
    assert not _result(_totals("c", [0.5, 0.5]), [1.0, 1.000001]).meets_goal(2)


@needs_recordings
def test_cli_front_prints_the_tables_and_checks(shipped: FrontResult) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["front", "--quiet", "--check"], out=out, err=err) == 0
    assert out.getvalue() == render_front(shipped)
    assert out.getvalue().endswith(
        '\nGoal: at least 25% saved, no more re-fetches than "Eino: clear at 40k", and no run '
        "(customer-service runs included) billed more than with no reduction.\n\n"
        'Goal met by: "strategies: the same, only when shorter, cache-aware, superseded".\n'
    )


@needs_recordings
def test_cli_front_json(shipped: FrontResult) -> None:
    out = io.StringIO()
    assert cli.main(["front", "--quiet", "--json"], out=out, err=io.StringIO()) == 0
    data = json.loads(out.getvalue())
    assert data["goal_met_by"] == [len(FRONT_CONFIGS) - 2]
    assert data["pricing"] == "claude-sonnet-4.5"
    assert [c["name"] for c in data["coding"]] == [name for name, _ in FRONT_CONFIGS]
    assert data["coding"][0]["costs"] == [round(c, 6) for c in shipped.coding[0].costs]


@needs_recordings
def test_cli_front_check_fails_when_no_config_meets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the strategies' config, ``--check`` exits with 1."""
    monkeypatch.setattr(cli, "front", functools.partial(front, configs=FRONT_CONFIGS[:-2]))
    out = io.StringIO()
    assert cli.main(["front", "--quiet", "--check"], out=out, err=io.StringIO()) == 1
    assert out.getvalue().endswith("Goal met by: no config.\n")


@needs_recordings
def test_cli_front_progress_goes_to_stderr() -> None:
    err = io.StringIO()
    cli.main(["front"], out=io.StringIO(), err=err)
    assert err.getvalue().rstrip().endswith(f"{(11 + 207) * len(FRONT_CONFIGS)} configs")
