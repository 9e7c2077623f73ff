"""The held-out benchmark runs end to end on a small corpus and writes its block (figures
are not checked: they are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import held_out
from reduction_app.engine.formats import messages_to_openai, tools_to_openai
from tests.benchmarks.support import readme_copy, written_block
from tests.simulator.cases import hand_conversation


@pytest.mark.slow
def test_main_fits_on_one_half_judges_on_the_other_and_writes_its_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conv = hand_conversation()
    data = {"messages": messages_to_openai(conv.messages), "tools": tools_to_openai(conv.tools)}
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for n in range(4):
        (corpus / f"run-{n}.json").write_text(json.dumps(data), encoding="utf-8")
    out, readme = tmp_path / "held_out.json", readme_copy(tmp_path)
    argv = [str(corpus), "--max-seconds", "0"]
    assert held_out.main([*argv, "--out", str(out), "--readme-path", str(readme)]) == 0
    assert "wrote its block held-out of " in capsys.readouterr().out
    report = json.loads(out.read_text(encoding="utf-8"))
    (measured,) = report["corpora"]
    assert (measured["name"], measured["runs"]) == ("corpus", 4)
    ways = measured["ways"]
    assert [(w["fit_runs"], w["judge_runs"]) for w in ways] == [(2, 2), (2, 2)]
    assert all(w["expected"]["folds"] == 2 for w in ways)
    block = written_block(readme, "held-out")
    assert block[1] == f"`python -m benchmarks.held_out {' '.join(argv)}`"
    rows = [line for line in block if line.startswith("| `")]
    assert len(rows) == 2
    assert block[-1].startswith("Goals: `")


def test_halves_are_the_two_folds_of_the_run_names() -> None:
    names = [f"run-{n}" for n in range(7)]
    first, second = held_out.split(names)
    assert sorted(first + second) == list(range(7))
    assert {len(first), len(second)} == {3, 4}
