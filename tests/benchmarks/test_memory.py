"""The memory benchmark runs end to end on a small conversation and prints its tables
(figures are not checked beyond being there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import memory
from tests.benchmarks.support import readme_copy, written_block


def test_build_reaches_the_token_count() -> None:
    messages, tokens = memory.build(3000, 5)
    assert tokens >= 3000
    assert len(messages) >= 5


@pytest.mark.slow
def test_main_measures_in_fresh_processes_and_writes_its_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, readme = tmp_path / "memory.json", readme_copy(tmp_path)
    argv = ["--tokens", "3000", "--min-messages", "5", "--threshold", "500"]
    argv += ["--counters", "approx"]
    assert memory.main([*argv, "--out", str(out), "--readme-path", str(readme)]) == 0
    printed = capsys.readouterr().out
    assert "cl100k_base tokens" in printed
    assert "load average" in printed
    assert "tracemalloc, MB" in printed
    assert "peak counting the bytes" in printed
    assert "peak counting the text" in printed
    report = json.loads(out.read_text(encoding="utf-8"))
    traced = [r for r in report["runs"] if r["how"] == "tracemalloc"]
    assert [(r["json"], r["input"]) for r in traced] == [
        ("utf-8", "bytes"),
        ("utf-8", "str"),
        ("ascii", "bytes"),
        ("ascii", "str"),
    ]
    for run in traced:
        assert run["results_cleared"] > 0
        assert run["peak_with_document"] >= run["peak_above_document"] > 0
    if memory.rss_measurable():
        assert "Resident set size (VmRSS, VmHWM)" in printed
    block = written_block(readme, "memory")
    assert block[1] == f"`python -m benchmarks.memory {' '.join(argv)}`"
    assert sum(line.startswith("| utf-8 | approx | ") for line in block) == (
        4 if memory.rss_measurable() else 2
    )
    assert block[-2].startswith("- Held as bytes, the peak of parsing and clearing")
    assert block[-1].startswith("- Held as str, the peak of parsing and clearing")
