"""Sweeping a grid over a corpus: totals equal to one replay per run and combination,
runs billed more, combination labels, and the command line over files and folders."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from pathlib import Path

from reduction_app.engine import ReductionConfig
from reduction_app.engine.formats import messages_to_openai, tools_to_openai
from simulator.cli import main
from simulator.compare import grid_configs
from simulator.corpus_sweep import (
    combination_labels,
    config_label,
    corpus_configs,
    corpus_sweep,
    varying_knobs,
)
from simulator.importers import load_files
from simulator.pricing import pricing_for, with_cache_prices
from simulator.replay import replay
from tests.conftest import CONVERSATIONS, REPO, needs_recordings
from tests.simulator.cases import ENGINE
from tests.simulator.test_misses import TRUNCATE_40, cleared_conversation, cut_conversation

GRID = {
    "max_tokens_for_clear": [2000, 20000],
    "max_length_for_trunc": [2000, 50000],
    "clear_cache_aware": [False, True],
}
"""Eight combinations; at 2k tokens the clear phase runs on every shipped recording."""
CODING_GRID = REPO / "simulator" / "grids" / "coding.json"
SONNET = pricing_for("claude-sonnet-4.5")
"""Cache writes are billed apart at these prices, so a clear that breaks the cache can
cost more than it saves: some runs are billed more than with no reduction."""


def _tau_file(folder: Path, runs: int) -> Path:
    """The first ``runs`` runs of the shipped tau-bench file, as a file of their own."""
    data = json.loads((CONVERSATIONS / "tau-bench-airline-gpt-4o.json").read_text("utf-8"))
    path = folder / f"tau-{runs}.json"
    path.write_text(json.dumps(data[:runs]), encoding="utf-8")
    return path


def _corpus_paths(folder: Path) -> list[Path]:
    """A folder of four runs, a JSONL file of three and a file of twelve: 19 runs."""
    return [
        CONVERSATIONS / "swe-agent",
        CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl",
        _tau_file(folder, 12),
    ]


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


# Labels -------------------------------------------------------------------------------


def test_combination_labels_show_only_the_knobs_that_vary() -> None:
    grid = json.loads(CODING_GRID.read_text(encoding="utf-8"))
    labels = combination_labels(grid)
    assert len(labels) == len(set(labels)) == 72
    configs = grid_configs(grid)
    first = labels.index("clear@20k atleast=0 trunc=2k suffix=1")
    assert {k: configs[first][k] for k in grid} == {
        "max_tokens_for_clear": 20000,
        "clear_at_least_tokens": 0,
        "max_length_for_trunc": 2000,
        "clear_retention_suffix_limit": 1,
        "clear_cache_aware": False,
    }
    last = labels.index("clear@80k atleast=10k trunc=50k suffix=3 cache-aware")
    assert configs[last]["clear_cache_aware"] is True
    assert configs[last]["max_tokens_for_clear"] == 80000


def test_combination_labels_leave_out_fixed_knobs_and_fields() -> None:
    grid = {
        "max_tokens_for_clear": [12500, 40000],
        "max_length_for_trunc": [8000],
        "clear_superseded": [False, True],
        "token_counter": "approx",
    }
    assert varying_knobs(grid) == ["max_tokens_for_clear", "clear_superseded"]
    assert combination_labels(grid) == [
        "clear@12.5k",
        "clear@40k",
        "clear@12.5k superseded",
        "clear@40k superseded",
    ]


def test_combination_labels_of_a_switch_alone_and_of_a_grid_that_varies_nothing() -> None:
    assert combination_labels({"clear_cache_aware": [False, True]}) == [
        "no cache-aware",
        "cache-aware",
    ]
    assert combination_labels({"max_tokens_for_clear": [900], "clear_at_least_tokens": [0]}) == [
        "clear@900 atleast=0"
    ]


def test_coding_grid_names_config_fields() -> None:
    """The shipped grid's knobs are ReductionConfig's fields, with 72 combinations."""
    grid = json.loads(CODING_GRID.read_text(encoding="utf-8"))
    fields = {f.name for f in dataclasses.fields(ReductionConfig)}
    assert set(grid) <= fields
    assert len(grid_configs(grid)) == 3 * 2 * 3 * 2 * 2


# The corpus totals ----------------------------------------------------------------------


@needs_recordings
def test_corpus_sweep_totals_equal_one_replay_per_run_and_combination(tmp_path: Path) -> None:
    conversations = load_files(_corpus_paths(tmp_path))
    assert len(conversations) == 19
    result = corpus_sweep(conversations, GRID, pricing=SONNET, workers=1)
    configs = grid_configs(GRID)
    labels = combination_labels(GRID)
    assert [t.name for t in result.combinations] == labels
    for index in (0, 5, 7):  # clear@2k trunc=2k; clear@20k trunc=2k cache-aware; the last
        config = with_cache_prices(configs[index], SONNET)
        totals = [replay(conv, config, pricing=SONNET).totals for conv in conversations]
        got = result.combinations[index]
        assert got.config == config
        assert got.input_tokens_billed == sum(t.input_tokens_billed for t in totals)
        assert got.refetches == sum(t.refetches for t in totals)
        assert got.misses == sum(t.misses for t in totals)
        cost = recovery = 0.0
        for t in totals:  # summed run by run, as the sweep sums them
            cost += t.cost_usd
            recovery += t.cost_with_recovery_usd or 0.0
        assert got.cost_usd == cost
        assert got.cost_with_recovery_usd == recovery
        assert got.costs == [t.cost_usd for t in totals]
        assert got.recovery_costs == [t.cost_with_recovery_usd for t in totals]
        billed = sum(t.input_tokens_billed for t in totals)
        assert result.cost_without_cache(got) == billed * SONNET.input_per_mtok / 1e6
    base = [replay(conv, None, pricing=SONNET).totals for conv in conversations]
    assert result.baseline.input_tokens_billed == sum(t.input_tokens_billed for t in base)
    assert result.baseline.costs == [t.cost_usd for t in base]
    assert result.baseline.misses == 0
    assert result.baseline.cost_with_recovery_usd == result.baseline.cost_usd
    # Clearing at 2k and truncating at 2k hides what the agents use later.
    assert result.combinations[0].misses > 0


@needs_recordings
def test_corpus_sweep_billed_more_counts_runs_costing_more_than_no_reduction(
    tmp_path: Path,
) -> None:
    conversations = load_files(_corpus_paths(tmp_path))
    result = corpus_sweep(conversations, GRID, pricing=SONNET, workers=1)
    base = [replay(conv, None, pricing=SONNET).totals.cost_usd for conv in conversations]
    configs = grid_configs(GRID)
    counted = []
    for index in (0, 3):  # clear@2k trunc=2k, clear@20k trunc=50k
        config = with_cache_prices(configs[index], SONNET)
        costs = [replay(conv, config, pricing=SONNET).totals.cost_usd for conv in conversations]
        more = [n for n, (c, b) in enumerate(zip(costs, base, strict=True)) if c > b]
        assert result.billed_more(index) == more
        counted.append(len(more))
        entry = result.to_dict()["combinations"][index]
        assert entry["billed_more"] == len(more)
        assert entry["billed_more_runs"] == [conversations[n].name for n in more]
        worse = result.billed_more(index, recovery=True)
        assert entry["billed_more_with_recovery"] == len(worse)
        assert entry["billed_more_with_recovery_runs"] == [conversations[n].name for n in worse]
    # Clearing at 2k breaks the prompt cache on many runs; the check is not vacuous.
    assert counted[0] > 0


@needs_recordings
def test_corpus_sweep_front_is_over_the_corpus_totals(tmp_path: Path) -> None:
    conversations = load_files(_corpus_paths(tmp_path))
    result = corpus_sweep(conversations, GRID, pricing=SONNET, workers=1)
    points = [(round(t.cost_usd, 6), t.refetches) for t in result.combinations]
    for i, (cost, refetches) in enumerate(points):
        beaten = any(
            c <= cost and r <= refetches and (c, r) != (cost, refetches) for c, r in points
        )
        assert (i in result.front) == (not beaten)
    assert result.front


@needs_recordings
def test_corpus_sweep_across_runs_in_a_pool_gives_the_same_results(tmp_path: Path) -> None:
    conversations = load_files(_corpus_paths(tmp_path))
    one = corpus_sweep(conversations, GRID, pricing=SONNET, workers=1)
    seen: list[tuple[int, int]] = []
    pooled = corpus_sweep(
        conversations,
        GRID,
        pricing=SONNET,
        workers=2,
        progress=lambda done, total: seen.append((done, total)),
    )
    assert pooled.to_dict() == one.to_dict()
    assert [r.to_dict() for r in pooled.per_run] == [r.to_dict() for r in one.per_run]
    assert seen[-1] == (8 * 19, 8 * 19)
    assert len(seen) == 19


# Files and folders ----------------------------------------------------------------------


def test_recording_files_of_a_folder_without_recordings_names_it(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("x", encoding="utf-8")
    assert run("sweep", tmp_path, "--grid", CODING_GRID) == (
        2,
        "",
        f"error: {tmp_path}: no recording files in this folder (files ending in .json, "
        ".jsonl, .traj, .eval)\n",
    )


@needs_recordings
def test_main_errors_name_the_file_at_fault(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    good = CONVERSATIONS / "swe-agent"
    code, out, err = run("replay", good, bad)
    assert (code, out) == (2, "")
    assert err == (
        f"error: {bad}: not JSON: Expecting property name enclosed in double quotes at "
        "line 1, column 2\n"
    )


@needs_recordings
def test_main_replay_takes_several_files_and_folders(tmp_path: Path) -> None:
    tau = _tau_file(tmp_path, 2)
    code, out, err = run("replay", CONVERSATIONS / "swe-agent", tau, "--json")
    assert (code, err) == (0, "")
    names = [r["conversation"] for r in json.loads(out)["results"]]
    # Two configs (no reduction, defaults) per run: the folder's four, sorted, then two.
    assert names[::2] == [
        "gpt-4o-test-repo-1c2844.traj",
        "gpt4-pydicom-1458.traj",
        "gpt4-test-repo-1c2844-old.traj",
        "gpt4-test-repo-i1.traj",
        "tau-2.json#task0-trial0",
        "tau-2.json#task1-trial0",
    ]


@needs_recordings
def test_main_sweep_of_files_and_folders_prints_the_corpus(tmp_path: Path) -> None:
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps(GRID), encoding="utf-8")
    paths = _corpus_paths(tmp_path)
    code, out, err = run("sweep", *paths, "--grid", grid, "--pricing", "claude-sonnet-4.5")
    assert code == 0
    assert re.search(r"\] 152/152 replays\nswept 8 combinations over 19 runs in \d+\.\d s\n$", err)
    lines = out.splitlines()
    # The header, no reduction, eight combinations, two notes on the tokens (Claude's are
    # estimates), two lines on the front, then one per point of the front.
    assert lines[0].startswith("combination ")
    assert [line.split("  ")[0].strip() for line in lines[1:10]] == [
        "no reduction",
        *combination_labels(GRID),
    ]
    assert lines[12:14] == [
        "billed more: of the 19 runs, how many cost more (cache-aware) than with no reduction; "
        "w/recovery: the same by cost with recovery",
        "Pareto front over the 19 runs (cache-aware cost vs re-fetches):",
    ]
    result = corpus_sweep(load_files(paths), GRID, pricing=SONNET, workers=1)
    for row, (i, totals) in zip(lines[2:10], enumerate(result.combinations), strict=True):
        cells = row.split()
        assert cells[-1] == str(len(result.billed_more(i, recovery=True)))
        assert cells[-2] == str(len(result.billed_more(i)))
        assert cells[-3] == f"{totals.misses:,}"
        assert cells[-4] == f"{totals.refetches:,}"
        assert f"${totals.cost_usd:,.4f}" in cells
        assert f"${totals.cost_with_recovery_usd:,.4f}" in cells
    points = {
        (round(t.cost_usd, 6), t.input_tokens_billed, t.refetches)
        for t in (result.combinations[i] for i in result.front)
    }
    assert len(lines) == 14 + len(points)


@needs_recordings
def test_main_sweep_per_run_prints_each_runs_table(tmp_path: Path) -> None:
    tau = _tau_file(tmp_path, 3)
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"max_tokens_for_clear": [2000, 4000]}), encoding="utf-8")
    code, plain, _ = run("sweep", tau, "--grid", grid, "--quiet")
    assert code == 0
    code, out, _ = run("sweep", tau, "--grid", grid, "--quiet", "--per-run")
    assert code == 0
    runs = ["tau-3.json#task0-trial0", "tau-3.json#task1-trial0", "tau-3.json#task2-trial0"]
    titles = [line for line in out.splitlines() if line.endswith(":") and "#" in line]
    assert titles == [f"{name}:" for name in runs]
    assert sum(line.startswith("conversation ") for line in out.splitlines()) == 3
    assert not any(line.startswith("conversation ") for line in plain.splitlines())
    assert out.endswith(plain)  # the corpus's table and front come last, as without it


@needs_recordings
def test_main_sweep_of_twenty_conversations_prints_one_table(tmp_path: Path) -> None:
    tau = _tau_file(tmp_path, 20)
    grid = tmp_path / "grid.json"
    grid.write_text(
        json.dumps({"max_tokens_for_clear": [2000, 8000], "clear_cache_aware": [False, True]}),
        encoding="utf-8",
    )
    code, out, _ = run("sweep", tau, "--grid", grid, "--quiet")
    assert code == 0
    lines = out.splitlines()
    # The header, no reduction and four combinations, a note, two lines, at most 4 points.
    assert 9 <= len(lines) <= 13
    assert sum(line.startswith("combination ") for line in lines) == 1


def test_docs_show_the_coding_grids_combinations_in_order() -> None:
    """docs/simulator.md shows the sweep of the coding grid: its rows are the grid's
    combinations, named and ordered as the command names and orders them."""
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    section = page[page.index("## Sweeping a corpus") :]
    block = section[
        section.index("```text\n") + 8 : section.index("\n```", section.index("```text"))
    ]
    rows = block.splitlines()
    assert rows[0].split() == [
        "combination", "cache-aware", "$", "cost", "saved", "w/recovery", "$", "saved",
        "w/recovery", "no-cache", "$", "input", "tokens", "tokens", "saved", "re-fetches",
        "misses", "billed", "more", "w/recovery",
    ]  # fmt: skip
    grid = json.loads(CODING_GRID.read_text(encoding="utf-8"))
    names = [row.split("  ")[0].strip() for row in rows[1:74]]
    assert names == ["no reduction", *combination_labels(grid)]
    assert rows[75] == (
        "billed more: of the 43 runs, how many cost more (cache-aware) than with no reduction; "
        "w/recovery: the same by cost with recovery"
    )


def test_corpus_totals_of_misses_and_cost_with_recovery_are_the_replay_sums() -> None:
    """On hand-made runs: per config, the corpus's misses and cost with recovery are the
    sums of one replay per run, and the JSON carries them."""
    conversations = [cut_conversation("alpha_beta_gamma", "Done."), cleared_conversation()]
    named = [
        ("cut", TRUNCATE_40),
        ("clear", {"skip_truncation": True, "max_tokens_for_clear": 300}),
    ]
    result = corpus_configs(conversations, named, pricing=ENGINE)
    payload = result.to_dict()["combinations"]
    for index, (_, config) in enumerate(named):
        totals = [replay(conv, config, pricing=ENGINE).totals for conv in conversations]
        got = result.combinations[index]
        assert got.misses == sum(t.misses for t in totals)
        recovery = 0.0
        for t in totals:
            recovery += t.cost_with_recovery_usd or 0.0
        assert got.cost_with_recovery_usd == recovery
        assert payload[index]["totals"]["misses"] == got.misses
        assert payload[index]["totals"]["cost_with_recovery_usd"] == round(recovery, 6)
    # Truncation at 40 characters hides the name each run uses; clearing at 300 tokens
    # clears it from the second run only (the first is too short to clear).
    assert [t.run_misses for t in result.combinations] == [[1, 1], [0, 1]]


def test_main_sweep_configs_names_each_config(tmp_path: Path) -> None:
    """``--configs`` replays named configs in place of a grid's combinations."""
    conv = cut_conversation("alpha_beta_gamma", "Done.")
    data = {"messages": messages_to_openai(conv.messages), "tools": tools_to_openai(conv.tools)}
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "cut.json").write_text(json.dumps(data), encoding="utf-8")
    configs = tmp_path / "configs.json"
    configs.write_text(json.dumps({"cut at 40": TRUNCATE_40, "defaults": {}}), encoding="utf-8")
    code, out, err = run("sweep", tmp_path / "runs", "--configs", configs, "--quiet", "--json")
    assert (code, err.startswith("swept 2 combinations over 1 run in ")) == (0, True)
    combos = json.loads(out)["corpus"]["combinations"]
    assert [(c["name"], c["combination"], c["totals"]["misses"]) for c in combos] == [
        ("cut at 40", "cut at 40", 1),
        ("defaults", "defaults", 0),
    ]
    code, _, err = run("sweep", tmp_path / "runs", "--grid", configs, "--configs", configs)
    assert (code, err) == (
        2,
        "error: python -m simulator sweep: argument --configs: not allowed with argument "
        "--grid (see --help)\n",
    )


def test_config_label_shows_each_limit_by_name() -> None:
    knobs = ["max_length_for_trunc", "trunc_tool_limits", "trunc_command_limits"]
    config = {
        "max_length_for_trunc": 20000,
        "trunc_tool_limits": {"Read": 4000, "Bash": 2500},
        "trunc_command_limits": {"reading": 2000},
    }
    assert config_label(config, knobs) == (
        "trunc=20k trunc[Bash]=2.5k trunc[Read]=4k trunc[reading]=2k"
    )
    other = {**config, "trunc_command_limits": {"reading": 3000}}
    assert config_label(other, knobs) != config_label(config, knobs)
    assert config_label({"trunc_tool_limits": {}}, ["trunc_tool_limits"]) == (
        "no trunc_tool_limits"
    )
