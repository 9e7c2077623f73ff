"""Recommending a config for a corpus: budgets, runs billed more, the coarse-then-finer
search, the time limit, and the command line's JSON."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from reduction_app.engine import InMemoryBackend, Message, ReductionConfig, validate
from reduction_app.engine.formats import messages_to_openai, tools_to_openai
from simulator.cli import main
from simulator.importers import RecordedConversation, load_files
from simulator.pricing import with_cache_prices
from simulator.recommend import BUDGET_CONFIG, DEFAULT_GRID, neighbours, recommend
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


def test_recommend_budget_excludes_a_config_that_hides_what_the_agent_uses() -> None:
    """Truncating at 1,000 cuts both outputs: cheaper, but the needle is hidden (a miss).
    Within the default budget (none) the search keeps the needle whole: the best it can
    do is to cut the bulk only, at a limit from 4,000 (the needle's length: kept whole) to
    under 8,000 characters. Allowed a miss, it cuts both."""
    corpus = [conversation("run", [NEEDLE, BULK])]
    strict = search(corpus, TRUNC_GRID)
    assert strict.budget.misses == strict.budget.refetches == 0
    best = strict.configs[strict.best]
    assert best.misses == 0
    assert 4000 <= best.config["max_length_for_trunc"] < 8000
    cut = next(
        t for t in strict.configs if t.config == {**TRUNC_GRID, "max_length_for_trunc": 1000}
    )
    assert cut.misses == 1
    loose = search(corpus, TRUNC_GRID, budget_misses=1)
    assert loose.configs[loose.best].misses == 1
    assert loose.configs[loose.best].config["max_length_for_trunc"] < 4000
    assert loose.configs[loose.best].cost_with_recovery_usd < best.cost_with_recovery_usd


def test_recommend_finds_a_better_point_between_grid_values() -> None:
    """The coarse grid has 1,000 (a miss) and 50,000 (no saving); the finer rounds move
    halfway from the end of 50,000's stretch of equal results towards 1,000 (25,500,
    13,200 rounded to the knob's step, then 7,100) and find the bulk cut, then keep
    halving towards the needle's 4,000."""
    result = search([conversation("run", [NEEDLE, BULK])], TRUNC_GRID)
    assert result.rounds[0] == 3  # two combinations and the budget config
    assert len(result.rounds) > 3
    limits = [t.config.get("max_length_for_trunc") for t in result.configs if t.config]
    assert limits[3:6] == [25500, 75000, 700]
    assert limits[6] == 13200  # 13,250 rounds to even hundreds
    assert 7100 in limits
    assert not result.timed_out  # it ran out of neighbours within the default 300 s
    best = result.configs[result.best]
    assert best.saving(result.baseline, recovery=True) > 0


def test_recommend_excludes_a_config_billing_a_run_more() -> None:
    """At 1,000 characters the second run's 1,050-character output becomes a longer
    notice (previews of 500 and 500 plus its lines): that run is billed more, though the
    first run's bulk makes the corpus cheaper. Only when shorter, the same limit bills
    no run more."""
    corpus = [conversation("big", [BULK]), conversation("small", ["= " * 525])]
    grid = {**TRUNC_GRID, "trunc_only_when_shorter": [False, True]}
    result = search(corpus, grid, max_seconds=0)
    assert result.rounds == (5,)
    by_config = {json.dumps(t.config, sort_keys=True): i for i, t in enumerate(result.configs)}
    plain = by_config[json.dumps({**TRUNC_GRID, "max_length_for_trunc": 1000,
                                  "trunc_only_when_shorter": False}, sort_keys=True)]  # fmt: skip
    assert result.configs[plain].worse_than(result.baseline, recovery=True) == [1]
    assert result.configs[plain].saving(result.baseline, recovery=True) > 0
    assert result.runs_worse(plain) == 1
    assert plain not in result.front
    assert config_of(result) == {
        **TRUNC_GRID,
        "max_length_for_trunc": 1000,
        "trunc_only_when_shorter": True,
    }


def test_recommend_with_no_time_answers_from_the_coarse_round() -> None:
    result = search([conversation("run", [NEEDLE, BULK])], TRUNC_GRID, max_seconds=0)
    assert result.rounds == (3,)
    assert result.timed_out
    # 50,000 and the budget config reduce nothing: the first of them is recommended.
    assert config_of(result) == {**TRUNC_GRID, "max_length_for_trunc": 50000}
    assert result.to_dict()["saved"] == 0.0


LONG = [NEEDLE, *[BULK] * 25]
"""The needle, then 200,000 characters of bulk: about 50,000 tokens, so that clearing
at 40k clears the needle before the answer names it (a miss)."""


def test_recommend_none_within_the_budget() -> None:
    """Truncation at 1,000 hides the needle, and so does clearing at 40k (the budget
    config): with a budget of no misses, no config is recommended. The front still shows
    the configs that bill no run more."""
    grid = {"max_length_for_trunc": [1000], "skip_clear": True}
    corpus = [conversation("run", LONG)]
    result = search(corpus, grid, max_seconds=0)
    assert result.budget.misses == 1
    assert result.best is not None
    result = search(corpus, grid, budget_misses=0, max_seconds=0)
    assert result.best is None
    assert result.front
    data = result.to_dict()
    assert (data["config"], data["saved"], data["misses"]) == (None, None, None)
    assert data["budget"] == {"misses": 0, "refetches": 0}


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
        "saved",
        "saved_with_recovery",
        "misses",
        "refetches",
        "runs_worse",
        "budget",
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
    assert data["budget"] == {"misses": 0, "refetches": 0}
    assert list(data["front"][0]) == [
        "config",
        "saved_with_recovery",
        "misses",
        "refetches",
        "runs_worse",
    ]
    assert err.startswith("searched 2 configs in ")


def test_cli_recommend_table_and_exit_code_without_an_answer(tmp_path: Path) -> None:
    """No config within a budget of no misses: exit code 1, the table says so, and the
    JSON's config is null."""
    runs = _write(tmp_path, "long.json", conversation("long", LONG))
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"max_length_for_trunc": [1000], "skip_clear": True}), "utf-8")
    args = ("recommend", runs, "--grid", grid, "--quiet", "--max-seconds", "0", *ENGINE_ARGS)
    code, out, _ = run(*args)
    assert code == 0
    assert "\nbudget: at most 1 misses and 0 re-fetches\n" in out
    code, out, _ = run(*args, "--budget-misses", "0")
    assert code == 1
    assert "\nrecommended: none: no config searched bills no run more than no reduction " in out
    assert "\nPareto front (cost with recovery vs misses" in out
    code, out, _ = run(*args, "--budget-misses", "0", "--json")
    assert code == 1
    assert json.loads(out)["config"] is None


# On real runs ---------------------------------------------------------------------------


@needs_recordings
def test_recommend_on_three_mini_swe_agent_runs_agrees_with_replay() -> None:
    """The answer's figures are the sums of one replay per run; the budget is what clear
    at 40k misses and re-fetches there."""
    files = sorted((CONVERSATIONS / "mini-swe-agent").glob("*.traj.json"))[:3]
    corpus = load_files(files)
    grid = {"max_tokens_for_clear": [20000, 80000], "max_length_for_trunc": [2000, 50000],
            "trunc_only_when_shorter": [False]}  # fmt: skip
    result = recommend(corpus, pricing=ENGINE, grid=grid, max_seconds=15)
    answer = result.to_dict()
    budget = [replay(conv, BUDGET_CONFIG[1], pricing=ENGINE).totals for conv in corpus]
    assert answer["budget"] == {
        "misses": sum(t.misses for t in budget),
        "refetches": sum(t.refetches for t in budget),
    }
    assert answer["config"] is not None
    totals = [replay(conv, answer["config"], pricing=ENGINE).totals for conv in corpus]
    base = [replay(conv, None, pricing=ENGINE).totals for conv in corpus]
    assert answer["misses"] == sum(t.misses for t in totals) <= answer["budget"]["misses"]
    assert answer["refetches"] == sum(t.refetches for t in totals)
    assert answer["runs_worse"] == 0
    assert all(t.cost_with_recovery_usd <= b.cost_usd for t, b in zip(totals, base, strict=True))
    cost = sum(t.cost_with_recovery_usd or 0.0 for t in totals)
    assert answer["saved_with_recovery"] == round(1 - cost / sum(b.cost_usd for b in base), 6)


@pytest.mark.parametrize("option", ["--budget-misses", "--budget-refetches"])
def test_cli_recommend_refuses_a_negative_budget(option: str) -> None:
    code, out, err = run("recommend", "x.json", option, "-1")
    assert (code, out) == (2, "")
    assert "expected a whole number of at least 0, got '-1'" in err


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
