"""benchmarks.report writes one block of a markdown file and nothing else, and
benchmarks/README.md holds a generated block for every block a benchmark can write."""

from __future__ import annotations

import importlib
import pkgutil
import re
import stat
from pathlib import Path

import pytest

import benchmarks
from benchmarks import report
from benchmarks.report import (
    BlockError,
    Stamp,
    markers,
    md_table,
    replace_block,
    unmeasured,
    verdict,
    write_block,
)
from tests.benchmarks.support import STAMP_LINE, block_of

BEFORE = "# Title\r\nCRLF line, é and ✓ kept\r\n\r\n"
AFTER = "\ntail\twith a tab  \n\n<!-- figures: other -->\nother's\n<!-- /figures: other -->\n"


def _file(name: str = "replay", content: str = "\nold figures\n") -> str:
    opening, closing = markers(name)
    return f"{BEFORE}{opening}{content}{closing}{AFTER}"


def test_replace_block_replaces_its_content_and_nothing_else() -> None:
    opening, closing = markers("replay")
    new = replace_block(_file(), "replay", "| a |\n|---|\n| 1 |\n")
    assert new == f"{BEFORE}{opening}\n| a |\n|---|\n| 1 |\n{closing}{AFTER}"


def test_replace_block_of_an_empty_block() -> None:
    opening, closing = markers("flat")
    text = f"x\n{opening}\n{closing}\ny\n"
    assert replace_block(text, "flat", "figures") == f"x\n{opening}\nfigures\n{closing}\ny\n"


def test_write_block_keeps_every_byte_outside_the_block(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(_file().encode("utf-8"))
    path.chmod(0o640)
    write_block(path, "replay", "new figures")
    opening, closing = markers("replay")
    written = path.read_bytes()
    assert written == f"{BEFORE}{opening}\nnew figures\n{closing}{AFTER}".encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]


def test_write_block_again_gives_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(_file().encode("utf-8"))
    write_block(path, "replay", "new figures\n")
    once = path.read_bytes()
    write_block(path, "replay", "new figures\n")
    assert path.read_bytes() == once


def test_write_block_without_the_markers_names_the_block(tmp_path: Path) -> None:
    path = tmp_path / "README.md"
    path.write_bytes(_file("other").encode("utf-8"))
    with pytest.raises(BlockError) as raised:
        write_block(path, "api_load-postgres", "figures")
    assert str(raised.value) == (
        f"{path} has no block 'api_load-postgres': add <!-- figures: api_load-postgres --> "
        "and <!-- /figures: api_load-postgres -->"
    )
    assert path.read_bytes() == _file("other").encode("utf-8")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "<!-- figures: flat -->\n",
            "the text: block 'flat' needs one <!-- figures: flat --> and one "
            "<!-- /figures: flat -->; found 1 and 0",
        ),
        (
            "<!-- figures: flat -->\n<!-- /figures: flat -->\n<!-- figures: flat -->\n",
            "the text: block 'flat' needs one <!-- figures: flat --> and one "
            "<!-- /figures: flat -->; found 2 and 1",
        ),
        (
            "<!-- /figures: flat -->\n<!-- figures: flat -->\n",
            "the text: block 'flat' closes before it opens",
        ),
    ],
)
def test_replace_block_refuses_markers_out_of_place(text: str, message: str) -> None:
    with pytest.raises(BlockError) as raised:
        replace_block(text, "flat", "figures")
    assert str(raised.value) == message


def test_a_benchmark_refuses_a_file_without_its_block_before_measuring(tmp_path: Path) -> None:
    """flat's 2,000 calls would take a while: the missing block stops it first."""
    from benchmarks import flat

    path = tmp_path / "README.md"
    path.write_text("no blocks here\n", encoding="utf-8")
    with pytest.raises(SystemExit) as raised:
        flat.main(["--readme-path", str(path)])
    assert str(raised.value) == (
        f"--readme: {path} has no block 'flat': add <!-- figures: flat --> and "
        "<!-- /figures: flat -->"
    )


def test_md_table_aligns_names_left_and_figures_right() -> None:
    table = md_table(["run", "kind", "ms"], [["a", "x|y", 1.5]], left=2)
    assert table == "| run | kind | ms |\n|---|---|---:|\n| a | x\\|y | 1.5 |"


def _stamp(**changes: object) -> Stamp:
    fields: dict[str, object] = {
        "command": "python -m benchmarks.flat --runs 1",
        "date": "2025-01-02 03:04 UTC",
        "commit": "abc1234",
        "dirty": False,
        "cpu": "Some CPU",
        "cpus": 2,
        "os": "Debian GNU/Linux 12 (bookworm), Linux 6.1.0",
        "python": "3.11.7",
        "packages": {"tiktoken": "0.14.0"},
        "load_at_start": [0.5, 1.0, 1.5],
    }
    fields.update(changes)
    return Stamp(**fields)  # type: ignore[arg-type]


def test_stamp_line_says_when_where_and_under_what_load() -> None:
    line = _stamp().line([2.0, 1.25, 1.0])
    assert line == (
        "_Measured 2025-01-02 03:04 UTC at commit `abc1234`, on 2 × Some CPU (Debian "
        "GNU/Linux 12 (bookworm), Linux 6.1.0; Python 3.11.7, tiktoken 0.14.0); load average "
        "(1 / 5 / 15 min) 0.50 / 1.00 / 1.50 at the start, 2.00 / 1.25 / 1.00 at the end._"
    )
    assert STAMP_LINE.fullmatch(line)
    dirty = _stamp(dirty=True).line([2.0, 1.25, 1.0])
    assert "at commit `abc1234` with uncommitted changes, on" in dirty
    assert STAMP_LINE.fullmatch(dirty)


def test_stamp_block_starts_with_the_line_and_the_command() -> None:
    block = _stamp().block(["| a |\n|---|", "", "A sentence.\n"], [1.0, 1.0, 1.0])
    first, command, *rest = block.split("\n")
    assert STAMP_LINE.fullmatch(first)
    assert command == "`python -m benchmarks.flat --runs 1`"
    assert rest == ["", "| a |", "|---|", "", "A sentence."]


def test_stamp_take_leaves_out_where_the_output_goes(tmp_path: Path) -> None:
    argv = ["--runs", "1", "--out", "x.json", "--readme", "--readme-path=y.md", "--size", "9"]
    stamp = Stamp.take("benchmarks.truncation", argv, ["msgspec", "no-such-package"])
    assert stamp.command == "python -m benchmarks.truncation --runs 1 --size 9"
    assert stamp.packages["no-such-package"] == "not installed"
    assert re.fullmatch(r"[0-9a-f]{7,}", stamp.commit)
    assert len(stamp.load_at_start) == 3


def _known_blocks() -> dict[str, str]:
    """Every block any benchmark module can write, and the module."""
    known: dict[str, str] = {}
    for module in pkgutil.iter_modules(benchmarks.__path__):
        loaded = importlib.import_module(f"benchmarks.{module.name}")
        for name in getattr(loaded, "README_BLOCKS", ()):
            assert name not in known, f"{name} is claimed twice"
            known[name] = module.name
    return known


def test_every_benchmark_with_figures_names_its_blocks() -> None:
    modules = set(_known_blocks().values())
    assert modules == {
        "api_load",
        "bounds",
        "corpus_sweep",
        "flat",
        "held_out",
        "memory",
        "otlp",
        "purge",
        "quotas",
        "recommend",
        "replay",
        "reused_ids",
        "soak",
        "stateful",
        "sweep",
        "truncation",
    }


def test_the_readme_has_a_generated_block_for_every_known_name() -> None:
    """A block is generated, or says which command will write it."""
    text = report.README.read_text(encoding="utf-8")
    found = re.findall(r"^<!-- figures: (\S+) -->$", text, flags=re.MULTILINE)
    assert sorted(found) == sorted(_known_blocks())
    for name in found:
        module = _known_blocks()[name]
        block = block_of(text, name)
        if block == unmeasured(f"benchmarks.{module}"):
            continue
        lines = block.split("\n")
        assert len(lines) >= 2, f"block {name!r} is empty"
        first, command = lines[:2]
        assert STAMP_LINE.fullmatch(first), f"block {name!r} starts with {first!r}"
        assert command.startswith(f"`python -m benchmarks.{module}"), name


def test_verdict_says_met_some_or_none() -> None:
    assert verdict([1.0, 1.5], 1.5) == "met"
    assert verdict([1.0, 1.6, 2.0], 1.5) == "not met in 2 of 3 rows"
    assert verdict([1.6], 1.5, "payloads") == "not met"
    assert verdict([1.0, 1.6], 1.5, "payloads") == "not met in 1 of 2 payloads"
