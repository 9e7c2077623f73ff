"""Recommending a config for a corpus: budgets, runs billed more, the coarse-then-finer
search, the time limit, and the command line's JSON."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reduction_app.engine import InMemoryBackend, Message, ReductionConfig, validate
from reduction_app.engine.formats import messages_to_openai, tools_to_openai
from simulator.ceiling import ceiling as ceiling_of
from simulator.cli import main
from simulator.importers import RecordedConversation, load_files
from simulator.pricing import with_cache_prices
from simulator.recommend import (
    DEFAULT_BUDGET,
    DEFAULT_GRID,
    Budget,
    fold_of,
    measure,
    neighbours,
    pick,
    recommend,
)
from simulator.replay import replay
from tests.conftest import CONVERSATIONS, REPO, needs_recordings
from tests.simulator.cases import ENGINE, TOOLS, call, result

NEEDLE = "=" * 1990 + " needle_identifier " + "=" * 1991
"""4,000 characters: ``needle_identifier`` in the middle, the rest no string at all (``=``
is no string character). Truncated below 4,000 characters, its middle is hidden."""
BULK = "= " * 4000
"""8,000 characters holding no string: hiding it hides nothing the agent uses."""
TRUNC_GRID = {"max_length_for_trunc": [1000, 50000], "skip_clear": True}
"""Truncation at 1,000 characters or at 50,000 (nothing here is that long); no clearing.
The budget config (clear at 40k, truncate at Eino's 50,000) reduces nothing here either:
the budget is 0 misses and 0 re-fetches."""


def conversation(name: str, outputs: list[str], *, later: int = 10) -> RecordedConversation:
    """A read per output, ``later`` reads of ``ok``, then an answer naming
    ``needle_identifier``: used from the first output that holds it."""
    messages = [Message.system("You are a test agent."), Message.user("Find the answer.")]
    for n, text in enumerate([*outputs, *["ok"] * later]):
        messages += [call(f"call_{n}", json.dumps({"path": f"f{n}"})), result(f"call_{n}", text)]
    messages.append(Message.assistant("The answer is in needle_identifier"))
    return RecordedConversation(name, messages, TOOLS)


def search(corpus: list[RecordedConversation], grid: dict[str, Any], **options: Any) -> Any:
    return recommend(corpus, pricing=ENGINE, grid=grid, **options)


def config_of(result: Any) -> dict[str, Any] | None:
    return None if result.best is None else result.configs[result.best].config


STRICT = Budget(misses_per_100_calls=0, refetches_per_100_calls=0, max_run_loss=0)
"""No miss, no re-fetch, no run billed more."""


def test_recommend_budget_excludes_a_config_that_hides_what_the_agent_uses() -> None:
    """Truncating at 1,000 cuts both outputs: cheaper, but the needle is hidden (one miss
    in 13 calls: 7.7 per 100). Within a budget of no misses the search keeps the needle
    whole: the best it can do is to cut the bulk only, at a limit from 4,000 (the
    needle's length: kept whole) to under 8,000 characters. Allowed 8 misses per 100
    calls, it cuts both."""
    corpus = [conversation("run", [NEEDLE, BULK])]
    strict = search(corpus, TRUNC_GRID, budget=STRICT)
    best = strict.configs[strict.best]
    assert best.misses == 0
    assert 4000 <= best.config["max_length_for_trunc"] < 8000
    cut = next(
        t for t in strict.configs if t.config == {**TRUNC_GRID, "max_length_for_trunc": 1000}
    )
    assert cut.misses == 1
    assert strict.measure(strict.configs.index(cut)).misses_per_100_calls == pytest.approx(100 / 13)
    loose = search(corpus, TRUNC_GRID, budget=Budget(8, 0, 0))
    assert loose.configs[loose.best].misses == 1
    assert loose.configs[loose.best].config["max_length_for_trunc"] < 4000
    assert loose.configs[loose.best].cost_with_recovery_usd < best.cost_with_recovery_usd
    # 7.7 is over a limit of 7.6: the same answer as no misses at all.
    tight = search(corpus, TRUNC_GRID, budget=Budget(7.6, 0, 0))
    assert tight.configs[tight.best].misses == 0


def test_recommend_finds_a_better_point_between_grid_values() -> None:
    """The coarse grid has 1,000 (a miss) and 50,000 (no saving); the finer rounds move
    halfway from the end of 50,000's stretch of equal results towards 1,000 (25,500,
    13,200 rounded to the knob's step, then 7,100) and find the bulk cut, then keep
    halving towards the needle's 4,000."""
    result = search([conversation("run", [NEEDLE, BULK])], TRUNC_GRID, budget=STRICT)
    assert result.rounds[0] == 2  # the two combinations
    assert len(result.rounds) > 3
    limits = [t.config.get("max_length_for_trunc") for t in result.configs if t.config]
    assert limits[2:5] == [25500, 75000, 700]
    assert limits[5] == 13200  # 13,250 rounds to even hundreds
    assert 7100 in limits
    assert not result.timed_out  # it ran out of neighbours within the default 300 s
    best = result.configs[result.best]
    assert best.saving(result.baseline, recovery=True) > 0


def test_recommend_progress_goes_on_over_every_round() -> None:
    """Progress counts the replays of every round (the baseline's too), never starting
    again at a later round: it ends at the replays of the whole search."""
    seen: list[tuple[int, int]] = []
    corpus = [conversation("run", [NEEDLE, BULK])]
    result = search(corpus, TRUNC_GRID, budget=STRICT, progress=lambda d, t: seen.append((d, t)))
    assert len(result.rounds) > 3
    done = [d for d, _ in seen]
    assert done == sorted(done) and all(d <= t for d, t in seen)
    # One replay per config tried on the one conversation.
    assert seen[-1] == (sum(result.rounds), sum(result.rounds))


def test_recommend_caps_what_one_run_may_cost_more() -> None:
    """At 1,000 characters the second run's 1,050-character output becomes a longer
    notice (previews of 500 and 500 plus its lines): that run is billed more, though the
    first run's bulk, cut 100 characters shorter than at 1,100, makes the corpus
    cheaper. With no loss allowed on any run, 1,100 is recommended; allowed the loss
    1,000 has on that run, 1,000 is (it saves more), and the front shows both."""
    corpus = [conversation("big", [BULK]), conversation("small", ["= " * 525], later=1)]
    grid = {**TRUNC_GRID, "max_length_for_trunc": [1000, 1100]}
    result = search(corpus, grid, max_seconds=0, budget=STRICT)
    assert result.rounds == (2,)
    plain, longer = 0, 1
    assert result.configs[plain].config == {**grid, "max_length_for_trunc": 1000}
    assert result.configs[plain].worse_than(result.baseline, recovery=True) == [1]
    assert result.runs_worse(plain) == 1
    loss = result.measure(plain).run_loss
    assert 0 < loss < 0.25
    assert result.measure(plain).saved > result.measure(longer).saved > 0
    assert plain not in result.front
    assert result.best == longer
    allowed = search(corpus, grid, max_seconds=0, budget=Budget(0, 0, loss))
    assert allowed.best == plain
    assert allowed.to_dict()["runs_worse"] == 1
    assert allowed.to_dict()["run_loss"] == round(loss, 6)
    assert allowed.front == (plain,)  # fewer misses would not buy anything here
    below = search(corpus, grid, max_seconds=0, budget=Budget(0, 0, loss * 0.99))
    assert below.best == longer


def test_recommend_with_no_time_answers_from_the_coarse_round() -> None:
    result = search(
        [conversation("run", [NEEDLE, BULK])], TRUNC_GRID, max_seconds=0, budget=Budget(8, 0, 0)
    )
    assert result.rounds == (2,)
    assert result.timed_out
    assert config_of(result) == {**TRUNC_GRID, "max_length_for_trunc": 1000}


LONG = [NEEDLE, *[BULK] * 25]
"""The needle, then 200,000 characters of bulk: about 50,000 tokens."""


def test_recommend_names_the_limit_that_binds_and_the_nearest_configs() -> None:
    """Truncation at 1,000 hides the needle (one miss in 37 calls, 2.7 per 100) and
    50,000 saves nothing: within a budget of no misses nothing is recommended, and the
    answer says that the misses limit binds and shows the config that would save. A
    config that saves nothing is never the answer, whatever the budget."""
    grid = {"max_length_for_trunc": [1000, 50000], "skip_clear": True}
    corpus = [conversation("run", LONG)]
    result = search(corpus, grid, max_seconds=0, budget=Budget(3, 0, 0))
    assert result.best is not None
    assert result.configs[result.best].config == {**grid, "max_length_for_trunc": 1000}
    result = search(corpus, grid, max_seconds=0, budget=STRICT)
    assert result.best is None
    assert result.binding == "misses_per_100_calls"
    assert [result.configs[i].config for i in result.nearest] == [
        {**grid, "max_length_for_trunc": 1000}
    ]
    assert result.front == result.nearest
    data = result.to_dict()
    assert (data["config"], data["saved"], data["misses"]) == (None, None, None)
    assert data["budget"] == {
        "misses_per_100_calls": 0,
        "refetches_per_100_calls": 0,
        "max_run_loss": 0,
    }
    assert data["binding"] == "misses_per_100_calls"
    assert data["nearest"][0]["misses_per_100_calls"] == round(100 / 37, 4)
    only_nothing = search(corpus, {**grid, "max_length_for_trunc": [50000]}, max_seconds=0)
    assert (only_nothing.best, only_nothing.binding, only_nothing.nearest) == (None, None, ())


def test_held_out_picks_on_the_other_folds_and_measures_on_the_one_left_out() -> None:
    """Four runs, two folds. On runs where the needle sits in a short output, cutting at
    1,000 misses it; on the others there is no needle to miss. Each fold's pick is made
    on the other fold alone, and the estimate pools the folds' costs."""
    corpus = [conversation(f"run-{n}", [NEEDLE if n % 2 else BULK, BULK]) for n in range(4)]
    grid = {"max_length_for_trunc": [1000, 6000], "skip_clear": True}
    result = search(corpus, grid, max_seconds=0, budget=Budget(2, 0, 1), folds=2)
    expected = result.expected
    assert expected is not None and expected.folds == 2
    fold = fold_of([c.name for c in corpus], 2)
    assert sorted(fold) == [0, 0, 1, 1]
    cost = base = 0.0
    misses = calls = 0
    savings = []
    for f in range(2):
        train = [i for i in range(4) if fold[i] != f]
        test = [i for i in range(4) if fold[i] == f]
        chosen = pick(result.configs, result.baseline, result.budget, train)
        assert expected.picks[f] == chosen
        m = measure(
            result.baseline if chosen is None else result.configs[chosen], result.baseline, test
        )
        cost, base, misses, calls = cost + m.cost, base + m.base, misses + m.misses, calls + m.calls
        savings.append(m.saved)
    assert expected.saved_with_recovery == pytest.approx(1 - cost / base)
    assert (expected.low, expected.high) == (min(savings), max(savings))
    assert expected.misses_per_100_calls == pytest.approx(100 * misses / calls)
    assert result.to_dict()["expected"] == expected.to_dict()
    assert list(expected.to_dict()) == [
        "saved_with_recovery", "low", "high", "misses_per_100_calls", "run_loss", "folds"
    ]  # fmt: skip
    # More folds than runs: one run per fold; one run: no estimate.
    assert search(corpus, grid, max_seconds=0, folds=9).expected.folds == 4
    assert search(corpus[:1], grid, max_seconds=0).expected is None


def test_fold_of_is_stable_and_balanced() -> None:
    names = [f"run-{n}" for n in range(10)]
    fold = fold_of(names, 3)
    assert sorted(fold.count(f) for f in range(3)) == [3, 3, 4]
    assert fold_of(list(reversed(names)), 3) == list(reversed(fold))


def test_neighbours_halve_towards_where_results_change() -> None:
    config = {
        "max_tokens_for_clear": 20000,
        "max_length_for_trunc": 8000,
        "clear_superseded": False,
    }
    lines = {
        # 10k and 20k measured alike and nothing was tried below: no move down (the
        # stretch reaches past 20k, so the results do not change there); up, halfway
        # from 20k to 40k, which measured otherwise.
        "max_tokens_for_clear": [(10000, "a"), (20000, "a"), (40000, "b")],
        # 8,000 alone: 1.5× either way, rounded to the step of 100.
        "max_length_for_trunc": [(8000, "a")],
    }
    assert neighbours(config, lines, ["clear_superseded"]) == [
        {**config, "max_tokens_for_clear": 30000},
        {**config, "max_length_for_trunc": 5300},
        {**config, "max_length_for_trunc": 12000},
        {**config, "clear_superseded": True},
    ]


def test_default_grid_is_a_grid_of_knobs_and_switches() -> None:
    grid = json.loads(DEFAULT_GRID.read_text(encoding="utf-8"))
    assert set(grid) == {
        "max_tokens_for_clear",
        "clear_at_least_tokens",
        "max_length_for_trunc",
        "clear_retention_suffix_limit",
        "clear_cache_aware",
        "trunc_only_when_shorter",
        "clear_superseded",
    }


# The command line -----------------------------------------------------------------------


def _write(folder: Path, name: str, conv: RecordedConversation) -> Path:
    """``conv`` as an OpenAI chat file in ``folder/runs``; returns that folder."""
    data = {"messages": messages_to_openai(conv.messages), "tools": tools_to_openai(conv.tools)}
    (folder / "runs").mkdir(exist_ok=True)
    path = folder / "runs" / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path.parent


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


ENGINE_ARGS = ("--pricing", "gpt-4o", "--measure", "engine", "--workers", "1")


def test_cli_recommend_json_keys_and_a_config_the_api_takes(tmp_path: Path) -> None:
    """The JSON has exactly its keys; the config, cache-aware here, carries the preset's
    cache prices, and both ``ReductionConfig`` and the REST API's validation take it."""
    from reduction_app.configs.schemas import ReductionConfigIn
    from reduction_app.configs.services import _validated

    runs = _write(tmp_path, "run.json", conversation("run", [NEEDLE, BULK]))
    grid = tmp_path / "grid.json"
    grid.write_text(
        json.dumps({"max_length_for_trunc": [5000], "clear_cache_aware": [True]}), "utf-8"
    )
    code, out, err = run("recommend", runs, "--grid", grid, "--json", "--quiet",
                         "--max-seconds", "0", *ENGINE_ARGS)  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert list(data) == [
        "config",
        "pricing",
        "runs",
        "calls",
        "saved",
        "saved_with_recovery",
        "misses",
        "misses_per_100_calls",
        "refetches",
        "refetches_per_100_calls",
        "run_loss",
        "runs_worse",
        "baseline_cost_usd",
        "cost_with_recovery_usd",
        "configs_tried",
        "budget",
        "expected",
        "ceiling",
        "ceiling_share",
        "binding",
        "nearest",
        "front",
        "seconds",
    ]
    config = data["config"]
    assert config == with_cache_prices(
        {"max_length_for_trunc": 5000, "clear_cache_aware": True}, ENGINE
    )
    assert config["clear_cache_read_percent"] == 50
    validate(ReductionConfig(**config, backend=InMemoryBackend()))
    ReductionConfigIn.model_validate(config)
    assert _validated(config)["max_length_for_trunc"] == 5000
    assert (data["pricing"], data["misses"], data["refetches"], data["runs_worse"]) == (
        "gpt-4o",
        0,
        0,
        0,
    )
    assert data["budget"] == DEFAULT_BUDGET.to_dict()
    assert data["expected"] is None  # one run
    ceiling = data["ceiling"]
    again = json.loads(json.dumps(ceiling_of(load_files([runs]), pricing=ENGINE).to_dict()))
    assert {**ceiling, "seconds": 0} == {**again, "seconds": 0}
    room = ceiling["baseline_cost_usd"] - ceiling["cost_usd"]
    cost = ceiling["baseline_cost_usd"] * (1 - data["saved_with_recovery"])
    assert data["ceiling_share"] == pytest.approx(
        (ceiling["baseline_cost_usd"] - cost) / room, abs=1e-5
    )
    assert list(data["front"][0]) == [
        "config",
        "saved_with_recovery",
        "misses",
        "misses_per_100_calls",
        "refetches",
        "refetches_per_100_calls",
        "run_loss",
        "runs_worse",
    ]
    assert err.startswith("searched 1 config in ")


def test_cli_recommend_table_and_exit_code_without_an_answer(tmp_path: Path) -> None:
    """No config within a budget of no misses: exit code 1, the table says which limit
    binds and what comes nearest, and the JSON's config is null."""
    runs = _write(tmp_path, "long.json", conversation("long", LONG))
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"max_length_for_trunc": [1000], "skip_clear": True}), "utf-8")
    args = ("recommend", runs, "--grid", grid, "--quiet", "--max-seconds", "0", *ENGINE_ARGS)
    code, out, _ = run(*args)
    assert code == 0
    assert (
        "\nbudget: at most 5 misses and 2 re-fetches per 100 calls, no run costing more than "
        "10% above no reduction (with recovery)\n" in out
    )
    assert "\n  2.7 misses and 0.0 re-fetches per 100 calls, worst run -" in out
    code, out, _ = run(*args, "--max-misses-per-100-calls", "2.5", "--max-run-loss", "10")
    assert code == 1
    assert (
        "\nrecommended: none: no config searched within the budget saves anything with "
        "recovery; the limit that binds: misses per 100 calls (--max-misses-per-100-calls)\n" in out
    )
    assert "\nnearest configs that save:\n  trunc=1k: saves " in out
    assert "(over: misses_per_100_calls)" in out
    assert "\nfront (saved with recovery against misses per 100 calls" in out
    code, out, _ = run(*args, "--max-misses-per-100-calls", "0", "--json")
    assert code == 1
    assert json.loads(out)["config"] is None


# On real runs ---------------------------------------------------------------------------


@needs_recordings
def test_recommend_on_three_mini_swe_agent_runs_agrees_with_replay() -> None:
    """The answer's figures are the sums of one replay per run, within the budget."""
    files = sorted((CONVERSATIONS / "mini-swe-agent").glob("*.traj.json"))[:3]
    corpus = load_files(files)
    grid = {"max_tokens_for_clear": [20000, 80000], "max_length_for_trunc": [2000, 50000],
            "trunc_only_when_shorter": [False]}  # fmt: skip
    budget = Budget(misses_per_100_calls=10, refetches_per_100_calls=2, max_run_loss=0.05)
    result = recommend(corpus, pricing=ENGINE, grid=grid, max_seconds=15, budget=budget)
    answer = result.to_dict()
    assert answer["config"] is not None
    totals = [replay(conv, answer["config"], pricing=ENGINE).totals for conv in corpus]
    base = [replay(conv, None, pricing=ENGINE).totals for conv in corpus]
    calls = sum(b.model_calls for b in base)
    assert answer["calls"] == calls
    assert answer["misses"] == sum(t.misses for t in totals)
    assert answer["misses_per_100_calls"] == round(100 * answer["misses"] / calls, 4) <= 10
    assert answer["refetches"] == sum(t.refetches for t in totals)
    losses = [
        (t.cost_with_recovery_usd or 0.0) / b.cost_usd - 1
        for t, b in zip(totals, base, strict=True)
    ]
    assert answer["run_loss"] == round(max(losses), 6) <= 0.05
    cost = sum(t.cost_with_recovery_usd or 0.0 for t in totals)
    assert answer["saved_with_recovery"] == round(1 - cost / sum(b.cost_usd for b in base), 6)
    assert answer["saved_with_recovery"] > 0
    assert answer["expected"]["folds"] == 3


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-misses-per-100-calls", "-1", "expected a number of at least 0, got '-1'"),
        ("--max-refetches-per-100-calls", "nan", "expected a number of at least 0, got 'nan'"),
        ("--max-run-loss", "inf", "expected a number of at least 0, got 'inf'"),
        ("--folds", "1", "expected a whole number of at least 2, got '1'"),
    ],
)
def test_cli_recommend_refuses_a_bad_budget(option: str, value: str, message: str) -> None:
    code, out, err = run("recommend", "x.json", option, value)
    assert (code, out) == (2, "")
    assert message in err


@needs_recordings
def test_simulator_page_shows_the_strategies_table_as_printed() -> None:
    """docs/simulator.md's table of Eino's settings and the strategies on the 43
    mini-swe-agent runs is what its command prints."""
    code, out, _ = run(
        "sweep", CONVERSATIONS / "mini-swe-agent", "--configs",
        REPO / "simulator" / "grids" / "strategies.json",
        "--pricing", "claude-sonnet-4.5", "--quiet",
    )  # fmt: skip
    assert code == 0
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    assert f"```text\n{out}```\n" in page


@pytest.mark.parametrize("value", [-1.0, float("inf"), float("nan")])
def test_a_budget_refuses_a_limit_that_is_no_number_of_at_least_zero(value: float) -> None:
    with pytest.raises(ValueError, match=r"^max_run_loss: must be a number of at least 0, got "):
        Budget(misses_per_100_calls=5, refetches_per_100_calls=2, max_run_loss=value)
    assert DEFAULT_BUDGET.to_dict() == {
        "misses_per_100_calls": 5.0,
        "refetches_per_100_calls": 2.0,
        "max_run_loss": 0.1,
    }


def test_simulator_page_shows_what_recommend_prints_on_the_shipped_examples() -> None:
    """docs/simulator.md's first ``recommend`` block is what the command prints on
    ``examples/recordings`` (no recordings folder needed), run as the page says; only the
    time on the ``searched`` line is left out of the page."""
    command = [sys.executable, "-m", "simulator", "recommend", "examples/recordings", "--quiet"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    searched = re.compile(r"^(searched \d+ configs? in \d+ rounds? in )\d+\.\d s$", re.M)
    assert len(searched.findall(done.stdout)) == 1
    printed = searched.sub(r"\1… s", done.stdout)
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    assert "`recommend examples/recordings --quiet` prints" in page
    assert f"```text\n{printed}```\n" in page
