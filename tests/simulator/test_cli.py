"""``python -m simulator``: tables, JSON, sweeps, exit codes and one-line errors."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reduction_app.engine.formats import messages_to_openai, tools_to_openai
from simulator.cli import main, short_names
from tests.conftest import CONVERSATIONS, REPO, needs_recordings
from tests.simulator.cases import HAND_CONFIG, hand_conversation

TAU = CONVERSATIONS / "tau-bench-airline-gpt-4o.json"
OPENHANDS = CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl"
TOTALS = {
    "model_calls",
    "input_tokens_billed",
    "cached_tokens",
    "uncached_tokens",
    "cost_usd",
    "peak_context_tokens",
    "truncations",
    "clears",
    "chars_offloaded",
    "refetches",
    "repeated_calls",
    "cache_write_tokens",
    "misses",
    "cost_with_recovery_usd",
}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    conv = hand_conversation()
    data = {"messages": messages_to_openai(conv.messages), "tools": tools_to_openai(conv.tools)}
    paths = {
        "hand.json": json.dumps(data),
        "hand.jsonl": json.dumps(data) + "\n" + json.dumps({**data, "name": "second"}) + "\n",
        "a.json": json.dumps(HAND_CONFIG),
        "b.json": json.dumps({"max_tokens_for_clear": 5000}),
        "grid.json": json.dumps(
            {"max_tokens_for_clear": [300, 5000], "max_length_for_trunc": [800]}
        ),
    }
    for name, text in paths.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return {name: tmp_path / name for name in paths}


def run(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main([str(a) for a in argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_main_replay_prints_a_table(files: dict[str, Path]) -> None:
    code, out, err = run(
        "replay",
        files["hand.json"],
        "--config",
        files["a.json"],
        "--config",
        files["b.json"],
        "--min-cacheable-prefix",
        "10",
        "--measure",
        "engine",
    )
    assert (code, err) == (0, "")
    header, *rows, note = out.splitlines()
    assert header.split() == [
        "conversation", "config", "calls", "billed", "tok", "Δ", "billed", "cached", "cost",
        "$", "w/recovery", "$", "peak", "tok", "trunc", "clears", "offloaded", "ch", "refetch",
        "misses", "repeat", "visible",
    ]  # fmt: skip
    assert note == "tokens: each config's own counter, no provider framing (--measure engine)"
    # Without reduction the hand case bills 30 + 139 + 348 + 1,357 = 1,874 tokens and
    # caches 0 + 30 + 139 + 348 = 517 of them: 27.6%; 1,357 uncached. Nothing is missed
    # (the results are runs of one letter), so the cost with recovery is the cost.
    assert [row.split() for row in rows] == [
        ["hand.json", "a", "4", "792", "+0", "17.7%", "0.0018", "0.0018", "350", "1", "2",
         "5,200", "0", "0", "0", "55.5%"],
        ["hand.json", "b", "4", "1,874", "+1,082", "27.6%", "0.0040", "0.0040", "1,357", "0",
         "0", "0", "0", "0", "0", "100.0%"],
    ]  # fmt: skip


def test_main_replay_json_shape(files: dict[str, Path]) -> None:
    code, out, err = run(
        "replay", files["hand.json"], "--config", files["a.json"], "--config", files["b.json"],
        "--json", "--min-cacheable-prefix", "10", "--measure", "engine",
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert out.endswith("}\n") and out.count("\n") == 1
    data = json.loads(out)
    assert list(data) == ["results"]
    assert [(r["name"], r["conversation"]) for r in data["results"]] == [
        ("a", "hand.json"),
        ("b", "hand.json"),
    ]
    first = data["results"][0]
    assert {"name", "config", "totals", "calls", "baseline", "deltas", "measure"} <= set(first)
    assert (first["baseline"], first["deltas"]["input_tokens_billed"]) == ("a", 0)
    assert data["results"][1]["deltas"]["input_tokens_billed"] == 1_082
    assert set(first["totals"]) >= TOTALS
    assert first["totals"]["input_tokens_billed"] == 792
    assert first["config"]["max_tokens_for_clear"] == 300
    assert {"index", "context_tokens", "cached_tokens", "new_tokens", "events"} <= set(
        first["calls"][0]
    )
    assert [c["context_tokens"] for c in first["calls"]] == [30, 139, 273, 350]


def test_main_replay_jsonl_gives_one_result_per_conversation_and_config(
    files: dict[str, Path],
) -> None:
    code, out, _ = run(
        "replay", files["hand.jsonl"], "--config", files["a.json"], "--config", files["b.json"],
        "--json",
    )  # fmt: skip
    assert code == 0
    results = json.loads(out)["results"]
    assert [(r["conversation"], r["name"]) for r in results] == [
        ("hand.jsonl:1", "a"),
        ("hand.jsonl:1", "b"),
        ("second", "a"),
        ("second", "b"),
    ]


def test_main_replay_without_configs_compares_off_and_defaults(files: dict[str, Path]) -> None:
    code, out, _ = run("replay", files["hand.json"], "--json")
    assert code == 0
    assert [r["name"] for r in json.loads(out)["results"]] == ["no reduction", "defaults"]


def test_main_replay_baseline_none(files: dict[str, Path]) -> None:
    """The baseline gets a row of its own (no delta), then each config against it."""
    code, out, _ = run(
        "replay", files["hand.json"], "--config", files["a.json"], "--baseline", "none",
        "--measure", "engine", "--min-cacheable-prefix", "10",
    )  # fmt: skip
    assert code == 0
    baseline, config = (line.split() for line in out.splitlines()[1:3])
    assert baseline[:5] == ["hand.json", "no", "reduction", "4", "1,874"]
    assert baseline[5] == "27.6%"  # no delta column value: the next column follows
    assert config[:5] == ["hand.json", "a", "4", "792", "-1,082"]  # 792 - 1,874


def test_main_replay_baseline_none_json_has_the_baseline_and_deltas(
    files: dict[str, Path],
) -> None:
    code, out, _ = run(
        "replay", files["hand.json"], "--config", files["a.json"], "--baseline", "none",
        "--json", "--measure", "engine",
    )  # fmt: skip
    assert code == 0
    base, a = json.loads(out)["results"]
    assert (base["name"], base["deltas"], base["totals"]["input_tokens_billed"]) == (
        "no reduction",
        None,
        1_874,
    )
    assert (a["baseline"], a["deltas"]["input_tokens_billed"]) == ("no reduction", -1_082)


@pytest.mark.parametrize("measure", ["provider", "engine"])
def test_main_replay_baseline_none_counts_like_the_configs(
    files: dict[str, Path], tmp_path: Path, measure: str
) -> None:
    """A config that reduces nothing, counting with cl100k: +0 against no reduction, with
    either measure (the baseline used to be counted with the approximate counter)."""
    idle = tmp_path / "idle.json"
    idle.write_text(json.dumps({"token_counter": "cl100k_base"}), encoding="utf-8")
    code, out, _ = run(
        "replay", files["hand.json"], "--config", idle, "--baseline", "none", "--json",
        "--measure", measure,
    )  # fmt: skip
    assert code == 0
    base, result = json.loads(out)["results"]
    assert result["totals"]["input_tokens_billed"] == base["totals"]["input_tokens_billed"]
    assert set(result["deltas"].values()) == {0}


def test_main_sweep_table_front_and_progress(files: dict[str, Path]) -> None:
    code, out, err = run(
        "sweep", files["hand.json"], "--grid", files["grid.json"], "--measure", "engine"
    )
    assert code == 0
    progress = f"\r[{'#' * 15}{'.' * 15}] 1/2 replays\r[{'#' * 30}] 2/2 replays\n"
    assert err.startswith(progress)
    assert re.fullmatch(r"swept 2 combinations over 1 run in \d+\.\d s\n", err[len(progress) :])
    lines = out.splitlines()
    assert len(lines) == 8
    assert lines[0].split() == [
        "combination", "cache-aware", "$", "cost", "saved", "w/recovery", "$", "saved",
        "w/recovery", "no-cache", "$", "input", "tokens", "tokens", "saved", "re-fetches",
        "misses", "billed", "more", "w/recovery",
    ]  # fmt: skip
    # Only max_tokens_for_clear varies: the combinations are named by it alone.
    assert [line.split()[0] for line in lines[1:4]] == ["no", "clear@300", "clear@5k"]
    assert lines[4:] == [
        "tokens: each config's own counter, no provider framing (--measure engine)",
        "billed more: of the 1 run, how many cost more (cache-aware) than with no reduction; "
        "w/recovery: the same by cost with recovery",
        "Pareto front over the 1 run (cache-aware cost vs re-fetches):",
        "  clear@300: $0.0020 (saves 57.7%), 792 tokens, 0 re-fetches, billed more on 0",
    ]


def test_main_sweep_json_and_quiet(files: dict[str, Path]) -> None:
    code, out, err = run(
        "sweep", files["hand.json"], "--grid", files["grid.json"], "--json", "--quiet",
        "--measure", "engine",
    )  # fmt: skip
    assert code == 0
    assert re.fullmatch(r"swept 2 combinations over 1 run in \d+\.\d s\n", err)
    data = json.loads(out)
    [one] = data["sweeps"]
    assert one["conversation"] == "hand.json"
    assert one["pareto_front"] == [0]
    # max_tokens_for_clear=5000 never clears; result 3 is still truncated to 244 tokens:
    # 30 + 139 + 348 + (348 + 8 + 244) = 1,117.
    assert [r["totals"]["input_tokens_billed"] for r in one["results"]] == [792, 1117]
    corpus = data["corpus"]
    assert corpus["runs"] == ["hand.json"]
    assert [c["name"] for c in corpus["combinations"]] == ["clear@300", "clear@5k"]
    assert [c["combination"] for c in corpus["combinations"]] == [
        "max_length_for_trunc=800,max_tokens_for_clear=300",
        "max_length_for_trunc=800,max_tokens_for_clear=5000",
    ]
    assert corpus["combinations"][1]["config"] == {
        "max_length_for_trunc": 800,
        "max_tokens_for_clear": 5000,
    }
    assert [c["totals"]["input_tokens_billed"] for c in corpus["combinations"]] == [792, 1117]
    assert corpus["pareto_front"] == [0]


def test_main_sweep_workers_and_no_share_give_the_same_json(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--workers 2 (a pool even for this small sweep) and --no-share (one replay per
    combination) print the same sweep."""
    from simulator import parallel

    monkeypatch.setattr(parallel, "POOL_MIN_STEPS", 0)
    outs = []
    for flags in (["--workers", "2"], ["--workers", "1", "--no-share"]):
        code, out, err = run(
            "sweep", files["hand.json"], "--grid", files["grid.json"], "--json", "--quiet", *flags
        )
        assert (code, err.startswith("swept 2 combinations over 1 run in ")) == (0, True)
        outs.append(json.loads(out))
    assert outs[0] == outs[1]
    assert run("sweep", files["hand.json"], "--grid", files["grid.json"], "--workers", "0") == (
        2,
        "",
        "error: python -m simulator sweep: argument --workers: expected a whole number of at "
        "least 1, got '0' (see --help)\n",
    )


def test_main_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    assert run("replay", missing) == (
        2,
        "",
        f"error: {missing}: cannot read: No such file or directory\n",
    )


def test_main_bad_config_names_file_and_field(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"max_tokens_for_clear": "lots"}', encoding="utf-8")
    assert run("replay", files["hand.json"], "--config", bad) == (
        2,
        "",
        f"error: {bad}: max_tokens_for_clear must be an integer, got 'lots'\n",
    )


def test_main_config_not_json(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{max: 1}", encoding="utf-8")
    assert run("replay", files["hand.json"], "--config", bad)[2] == (
        f"error: {bad}: config is not JSON: Expecting property name enclosed in double quotes "
        "at line 1, column 2\n"
    )


def test_main_bad_grid(files: dict[str, Path], tmp_path: Path) -> None:
    bad = tmp_path / "grid.json"
    bad.write_text('{"max_tokens_for_clear": []}', encoding="utf-8")
    assert run("sweep", files["hand.json"], "--grid", bad) == (
        2,
        "",
        f"error: {bad}: grid.max_tokens_for_clear: expected a non-empty list of values, got []\n",
    )


def test_main_bad_conversation_names_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text('[{"role": "wizard", "content": "x"}]', encoding="utf-8")
    assert run("replay", path) == (2, "", "error: c.json: [0].role: unknown role 'wizard'\n")


def test_main_usage_errors_are_one_line(files: dict[str, Path]) -> None:
    code, out, err = run("replay", files["hand.json"], "--format", "gemini")
    assert (code, out) == (2, "")
    assert err == (
        "error: python -m simulator replay: argument --format: invalid choice: 'gemini' "
        "(choose from 'openai_chat', 'anthropic', 'openai_responses', 'tau_bench', 'tau2', "
        "'openhands', 'swe_agent', 'mini_swe_agent', 'claude_code', 'inspect', 'otel') "
        "(see --help)\n"
    )
    assert run("sweep", files["hand.json"]) == (
        2,
        "",
        "error: python -m simulator sweep: one of the arguments --grid --configs is required "
        "(see --help)\n",
    )


def test_main_help_goes_to_out() -> None:
    code, out, err = run("--help")
    assert (code, err) == (0, "")
    assert out.startswith("usage: python -m simulator")


def _paragraphs(help_text: str) -> list[str]:
    return [" ".join(p.split()) for p in help_text.strip().split("\n\n")]


def test_main_help_says_what_it_does_and_its_exit_codes_in_sentences() -> None:
    """The description after the usage and the exit codes at the end, each whole."""
    _, out, _ = run("--help")
    paragraphs = _paragraphs(out)
    assert paragraphs[1] == (
        "Replay recorded conversations under configs, sweep a grid over a corpus of them, "
        "recommend a config for a corpus, calibrate the token counts against providers' "
        "bills, or measure how agents recovered from outputs their own tools cut."
    )
    assert paragraphs[-1] == (
        "Exit codes: 0 on success, 1 when recommend finds no config within its budget, 2 for "
        "bad input (an unreadable file, an unknown format, a bad config or grid, no "
        "recordings folder for calibrate), with a one-line error naming the file, line, "
        "field or folder at fault. Each command's --help says more about it."
    )
    assert paragraphs[1].endswith(".") and paragraphs[-1].endswith(".")


@pytest.mark.parametrize(
    ("command", "description"),
    [
        ("replay", "Replay under one or more configs."),
        ("sweep", "Replay every combination of a grid on every run, and sum them over the runs."),
        ("calibrate", "Compare the simulator's counts with the provider's on the shipped "
         "recordings."),
        ("recommend", "Search the knobs and strategies for the config that saves most with "
         "recovery on a corpus within a budget of misses and re-fetches per 100 calls and of "
         "loss on any one run, with its expected result on runs it has not seen."),
    ],
)  # fmt: skip
def test_main_each_command_help_opens_with_a_sentence(command: str, description: str) -> None:
    code, out, err = run(command, "--help")
    assert (code, err) == (0, "")
    assert _paragraphs(out)[1] == description


def test_python_m_simulator_help_without_docstrings() -> None:
    """``python -OO`` drops docstrings; the help does not come from one."""
    proc = subprocess.run(
        [sys.executable, "-OO", "-m", "simulator", "--help"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    assert _paragraphs(proc.stdout)[1].startswith("Replay recorded conversations under configs")


def _long_runs(tmp_path: Path, names: list[str]) -> list[Path]:
    conv = hand_conversation()
    data = {"messages": messages_to_openai(conv.messages), "tools": tools_to_openai(conv.tools)}
    paths = [tmp_path / name for name in names]
    for path in paths:
        path.write_text(json.dumps(data), encoding="utf-8")
    return paths


def _first_column(out: str, rows: int) -> list[str]:
    return [line.split("  ")[0].rstrip() for line in out.splitlines()[1 : 1 + rows]]


def test_main_replay_keeps_long_names_apart(tmp_path: Path, files: dict[str, Path]) -> None:
    """Two names that differ only at the start and one that differs from the first only
    at the end: each is cut in the middle to 40 characters (19, an ellipsis, 20), which
    keeps what tells them apart. Keeping only the end, as the table once did, showed
    the first two alike."""
    shared = "claude-sonnet-4-5-django__django-11087-shared-middle-part"
    names = [f"alpha-{shared}-trial0.json", f"omega-{shared}-trial0.json"]
    names.append(f"alpha-{shared}-trial1.json")
    paths = _long_runs(tmp_path, names)
    code, out, err = run("replay", *paths, "--config", files["a.json"], "--measure", "engine")
    assert (code, err) == (0, "")
    assert _first_column(out, 3) == [
        "alpha-claude-sonnet…dle-part-trial0.json",
        "omega-claude-sonnet…dle-part-trial0.json",
        "alpha-claude-sonnet…dle-part-trial1.json",
    ]


def test_short_names_widen_until_names_differ() -> None:
    """Names of 60 characters that differ only at their 25th: the column widens to 51,
    the first width whose start (25 characters, then the ellipsis, then 25 of the end)
    takes it in; a short name stays whole."""
    first, second = "a" * 24 + "X" + "b" * 35, "a" * 24 + "Y" + "b" * 35
    assert short_names([first, second, "short", first]) == {
        first: "a" * 24 + "X…" + "b" * 25,
        second: "a" * 24 + "Y…" + "b" * 25,
        "short": "short",
    }


def test_short_names_drop_the_file_only_when_the_rest_differs() -> None:
    """``file#name`` shows as ``name`` unless two files hold runs of the same name; names
    that no cut tells apart show whole."""
    assert short_names(["a.json#task1", "a.json#task2"]) == {
        "a.json#task1": "task1",
        "a.json#task2": "task2",
    }
    assert short_names(["a.json#task1", "b.json#task1"]) == {
        "a.json#task1": "a.json#task1",
        "b.json#task1": "b.json#task1",
    }
    # 41 characters differing only at the 21st: no cut to 40 keeps it, so none.
    first, second = "a" * 20 + "m" + "z" * 20, "a" * 20 + "n" + "z" * 20
    assert short_names([first, second]) == {first: first, second: second}


def test_main_format_option(files: dict[str, Path]) -> None:
    code, _, err = run("replay", files["hand.json"], "--format", "anthropic")
    assert code == 2
    assert err.startswith("error: hand.json: messages[0].role: ")


@needs_recordings
def test_python_m_simulator_subprocess() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "simulator", "replay", str(OPENHANDS), "--json"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert (proc.returncode, proc.stderr) == (0, "")
    results = json.loads(proc.stdout)["results"]
    assert [r["totals"]["model_calls"] for r in results] == [23, 23, 33, 33, 49, 49]
    missing = subprocess.run(
        [sys.executable, "-m", "simulator", "replay", "nope.json"],
        capture_output=True, text=True, cwd=REPO, check=False,
    )  # fmt: skip
    assert (missing.returncode, missing.stdout) == (2, "")
    assert missing.stderr == "error: nope.json: cannot read: No such file or directory\n"


@needs_recordings
def test_python_m_simulator_closed_pipe_is_quiet() -> None:
    """``python -m simulator ... | head -c 100``: no BrokenPipeError traceback, and the exit
    code of a process killed by SIGPIPE. The JSON of 400 replays (megabytes) cannot fit in
    the pipe's buffer, so the write does fail."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "simulator", "replay", str(TAU), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(100).startswith(b'{"results": [{"name": "no reduction"')
    proc.stdout.close()
    stderr = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait() == 141
    assert stderr == b""


@needs_recordings
def test_cli_readme_example_runs_on_the_shipped_files() -> None:
    """The README's example: three shipped configs on the shipped OpenHands runs, and the
    shipped grid."""
    from io import StringIO

    from simulator.cli import main
    from tests.conftest import CONVERSATIONS, REPO

    configs = [
        f"--config={REPO / 'examples' / 'configs' / n}.json"
        for n in ("defaults", "tight", "cache-friendly")
    ]
    out, err = StringIO(), StringIO()
    runs = str(CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl")
    assert main(["replay", runs, *configs, "--baseline", "none"], out=out, err=err) == 0, (
        err.getvalue()
    )
    rows = out.getvalue().splitlines()
    assert len(rows) == 1 + 3 * 4 + 1  # header, a baseline and three configs each, a note
    assert rows[-2].split()[:4] == ["ponylang__ponyc-4588", "cache-friendly", "49", "447,865"]
    grid = str(REPO / "examples" / "grid.json")
    assert main(["sweep", runs, "--grid", grid, "--quiet"], out=StringIO(), err=err) == 0, (
        err.getvalue()
    )


@needs_recordings
def test_main_replay_says_which_strategy_cleared_what(tmp_path: Path) -> None:
    """A replay using a strategy beyond the reference's gets a line saying what each did."""
    plain = tmp_path / "c20.json"
    plain.write_text(json.dumps({"max_tokens_for_clear": 20000}), encoding="utf-8")
    superseded = tmp_path / "sup20.json"
    superseded.write_text(
        json.dumps({"max_tokens_for_clear": 20000, "clear_superseded": True}), encoding="utf-8"
    )
    # At 10,000 tokens the superseded results alone are not enough: the reference's
    # clearing runs too, and the line names both in order of first use.
    lower = tmp_path / "sup10.json"
    lower.write_text(
        json.dumps({"max_tokens_for_clear": 10000, "clear_superseded": True}), encoding="utf-8"
    )
    code, out, err = run(
        "replay", OPENHANDS, "--config", plain, "--config", superseded, "--config", lower
    )
    assert (code, err) == (0, "")
    lines = [line for line in out.splitlines() if line.startswith("strategies")]
    assert lines == [
        "strategies (openhands-multi-swe-bench-llama4.jsonl:1#ponylang__ponyc-4595, sup20): "
        "superseded 2 results, 10,320 tok saved",
        "strategies (openhands-multi-swe-bench-llama4.jsonl:2#ponylang__ponyc-4593, sup10): "
        "superseded 2 results, 1,206 tok saved; reference 18 results, 5,893 tok saved",
        "strategies (openhands-multi-swe-bench-llama4.jsonl:3#ponylang__ponyc-4588, sup20): "
        "superseded 6 results, 6,475 tok saved",
        "strategies (openhands-multi-swe-bench-llama4.jsonl:3#ponylang__ponyc-4588, sup10): "
        "reference 43 results, 9,078 tok saved; superseded 4 results, 1,388 tok saved",
    ]


def test_main_without_recordings_exits_2_naming_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder comes from REDUCTION_RECORDINGS_DIR, or from --recordings (or its former
    name, --data), which wins."""
    monkeypatch.setenv("REDUCTION_RECORDINGS_DIR", str(tmp_path / "unset"))
    how = (
        "pass --recordings DIR or set REDUCTION_RECORDINGS_DIR to the folder of recorded "
        "agent runs (a copy of shared/data/conversations)"
    )
    command = "calibrate"
    assert run(command) == (2, "", f"error: no recordings at {tmp_path / 'unset'}: {how}\n")
    for option in ("--recordings", "--data"):
        missing = tmp_path / option.strip("-")
        error = f"error: no recordings at {missing}: {how}\n"
        assert run(command, option, missing) == (2, "", error)


@needs_recordings
def test_main_calibrate_reads_the_recordings_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDUCTION_RECORDINGS_DIR", str(tmp_path / "unset"))
    code, out, err = run("calibrate", "--recordings", CONVERSATIONS, "--json")
    assert (code, err) == (0, "")
    assert len(json.loads(out)["calibration"]) == 6
