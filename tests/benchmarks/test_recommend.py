"""The recommend benchmark runs end to end on two small recordings and writes its block
(figures are not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import recommend
from reduction_app.engine.formats import messages_to_openai, tools_to_openai
from tests.benchmarks.support import readme_copy, written_block
from tests.simulator.cases import hand_conversation


@pytest.mark.slow
def test_main_times_one_search_and_writes_its_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conv = hand_conversation()
    data = {"messages": messages_to_openai(conv.messages), "tools": tools_to_openai(conv.tools)}
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("a.json", "b.json"):
        (runs / name).write_text(json.dumps(data), encoding="utf-8")
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"max_tokens_for_clear": [300, 5000]}), encoding="utf-8")
    out, readme = tmp_path / "recommend.json", readme_copy(tmp_path)
    argv = [str(runs), "--grid", str(grid), "--max-seconds", "0"]
    assert recommend.main([*argv, "--out", str(out), "--readme-path", str(readme)]) == 0
    assert "wrote its block recommend of " in capsys.readouterr().out
    row = json.loads(out.read_text(encoding="utf-8"))["row"]
    # No time for a finer round: the coarse round alone, the grid's two combinations,
    # ended by the time limit.
    assert (row["workers"], row["runs"], row["configs"], row["rounds"]) == (2, 2, 2, [2])
    assert row["timed_out"] is True
    block = written_block(readme, "recommend")
    assert block[1] == f"`python -m benchmarks.recommend {' '.join(argv)}`"
    assert block[3] == (
        f"The corpus: `{runs.name}`, 2 runs, {2 * len(conv.messages)} messages; the coarse "
        f"grid `{grid.name}`; priced as claude-sonnet-4.5; `--max-seconds 0` on 2 "
        "processes; in a fresh process."
    )
    assert block[5] == (
        "| processes | read s | search s | total s | CPU s | configs | rounds | ended by "
        "| load | others |"
    )
    cells = block[7].split(" | ")
    assert (cells[0], cells[5], cells[6], cells[7]) == ("| 2", "2", "1 (2)", "the time limit")
    assert block[9] == (
        "| recommended | saved | saved with recovery | misses / 100 calls "
        "| re-fetches / 100 calls | worst run | runs worse | budget |"
    )
    within = (
        "5 misses and 2 re-fetches per 100 calls, runs at most "
        f"{100 * row['answer']['budget']['max_run_loss']:g}% above"
    )
    assert block[11].split(" | ")[-1] == f"{within} |"
    answer = row["answer"]
    assert block[13] == f"The config: `{json.dumps(answer['config'], sort_keys=True)}`."
    assert block[15].startswith("Expected on runs not seen (2-fold): saves ")
    assert block[-1].startswith(
        "Goal: the search within its `--max-seconds` (0 s) on 2 processes, files read to answer: **"
    )
    assert block[-1].endswith(" s** (not met).")
