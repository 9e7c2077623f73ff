"""The truncation benchmark runs end to end on a small output and prints its tables
(figures are not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import truncation
from tests.benchmarks.support import readme_copy, written_block


def test_output_text_fits_the_size_in_utf8_bytes() -> None:
    ascii_text = truncation.output_text(5000, "ascii")
    assert len(ascii_text) == 5000
    assert ascii_text.isascii()
    assert ascii_text.startswith("==> django/")
    other = truncation.output_text(5000, "non-ascii")
    assert 4990 < len(other.encode("utf-8")) <= 5000
    assert not other.isascii()
    assert max(map(ord, other)) <= 0xFFFF


def test_consumers_read_strings_and_results_alike() -> None:
    chunks = ["ab", "cde"]
    assert truncation.consume_join(iter(chunks), False) == "abcde"
    assert truncation.consume_count(iter(chunks), False) == 5
    results = truncation.enhanced_source("abcde", 2)
    assert truncation.consume_join(results, True) == "abcde"


@pytest.mark.slow
def test_main_prints_both_tables_and_writes_its_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, readme = tmp_path / "truncation.json", readme_copy(tmp_path)
    argv = ["--size", "6000", "--max-length", "1000", "--chunks", "256", "--runs", "1"]
    assert truncation.main([*argv, "--out", str(out), "--readme-path", str(readme)]) == 0
    printed = capsys.readouterr().out
    assert "max_length_for_trunc=1,000" in printed
    assert "load average" in printed
    assert "Buffered: ms from the tool's return" in printed
    assert "Streamed: ms to read the whole stream" in printed
    for kind in ("ascii", "non-ascii"):
        assert any(line.startswith(kind) for line in printed.splitlines())
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["outputs"]) == {"ascii", "non-ascii"}
    streams = report["outputs"]["ascii"]["streams"]
    assert set(streams) == {"str/256", "enhanced/256", "enhanced-raw/256"}
    assert streams["str/256"]["chunks"] == 24
    block = written_block(readme, "truncation")
    assert block[1] == f"`python -m benchmarks.truncation {' '.join(argv)}`"
    assert any(line.startswith("| output | chars | UTF-8 bytes | one copy ms |") for line in block)
    assert sum(line.startswith("| ascii | ") for line in block) == 4
    assert sum(line.startswith("- `enhanced_streamable`, read by") for line in block) == 2
    assert block[-1].startswith("- `enhanced_streamable (trunc_stream_text_raw)`, read by")
