"""The corpus sweep benchmark runs end to end on two small recordings and writes its block
(figures are not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import corpus_sweep
from reduction_app.engine.formats import messages_to_openai, tools_to_openai
from tests.benchmarks.support import readme_copy, written_block
from tests.simulator.cases import hand_conversation


@pytest.mark.slow
def test_main_times_each_number_of_processes_and_writes_its_block(
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
    out, readme = tmp_path / "corpus_sweep.json", readme_copy(tmp_path)
    argv = [str(runs), "--grid", str(grid), "--workers", "1,2"]
    assert corpus_sweep.main([*argv, "--out", str(out), "--readme-path", str(readme)]) == 0
    printed = capsys.readouterr().out
    assert "1 process(es): " in printed
    assert "2 process(es): " in printed
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [(r["workers"], r["runs"], r["combinations"]) for r in report["rows"]] == [
        (1, 2, 2),
        (2, 2, 2),
    ]
    block = written_block(readme, "corpus_sweep")
    assert block[1] == f"`python -m benchmarks.corpus_sweep {' '.join(argv)}`"
    assert block[3].startswith(f"The corpus: `{runs.name}`, 2 runs, ")
    assert "2 combinations (4 replays" in block[3]
    assert block[5] == "| processes | read s | sweep s | total s | CPU s | load | others |"
    assert [line.split(" | ")[0] for line in block[7:9]] == ["| 1", "| 2"]
    assert block[-1].startswith("Goal ≤ 180 s for the whole sweep on 2 processes: **")
    assert block[-1].endswith("(met). Same corpus sums in every row: yes.")
