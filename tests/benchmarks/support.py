"""What the tests of a benchmark run check of the block it wrote into a copy of
benchmarks/README.md, and running a benchmark that starts servers."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
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


def run_server_benchmark(module: str, argv: Sequence[str], timeout: float) -> tuple[str, str]:
    """Run ``python -m benchmarks.<module> <argv>`` in the repository, without this
    process's Django settings or database; its standard output and error, after checking
    that it exited with 0. Past ``timeout`` it gets SIGINT, which unwinds its ExitStack and
    stops the gunicorn servers it started (they run in sessions of their own, so killing
    the benchmark would leave them)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", f"benchmarks.{module}", *argv],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        finally:
            process.kill()
        raise
    assert process.returncode == 0, stderr[-3000:]
    return stdout, stderr
