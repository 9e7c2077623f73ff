"""What the tests of a benchmark run check of the block it wrote into a copy of
benchmarks/README.md."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from benchmarks.report import README, markers

STAMP_LINE = re.compile(
    r"_Measured \d{4}-\d\d-\d\d \d\d:\d\d UTC at commit `[0-9a-f]{7,}`"
    r"( with uncommitted changes)?, on \d+ × .+ \(.+; Python \d+\.\d+\.\d+.*\); "
    r"load average \(1 / 5 / 15 min\) .+ at the start, .+ at the end\._"
)
"""The first line of every block."""


def readme_copy(folder: Path) -> Path:
    """A copy of benchmarks/README.md for a benchmark run to write into."""
    path = folder / "README.md"
    shutil.copyfile(README, path)
    return path


def block_of(text: str, name: str) -> str:
    """The content of block ``name`` (between its markers, without the line ends there)."""
    opening, closing = markers(name)
    return text[text.index(opening) + len(opening) : text.index(closing)].strip("\n")


def written_block(copy: Path, name: str) -> list[str]:
    """The lines of block ``name`` in ``copy``, after checking that the rest of the file is
    the README's, byte for byte, and that the block opens with its stamp line."""
    original, new = README.read_bytes().decode("utf-8"), copy.read_bytes().decode("utf-8")
    opening, closing = markers(name)
    for text in (original, new):
        assert text.count(opening) == text.count(closing) == 1
    assert new[: new.index(opening)] == original[: original.index(opening)]
    assert new[new.index(closing) :] == original[original.index(closing) :]
    lines = block_of(new, name).split("\n")
    assert STAMP_LINE.fullmatch(lines[0]), lines[0]
    return lines
