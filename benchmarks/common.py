"""What every benchmark prints and records beside its figures: the machine, its load,
the engine's revision and package versions, and plain-text tables.

Timing and measuring stay in each benchmark; this module only describes and formats.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "engine_revision", "load_average", "machine", "table", "versions"]

ROOT = Path(__file__).resolve().parent.parent
"""The repository (or worktree) the benchmarks run from."""


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where the system has none): timings on
    a busy machine are slower, so every report carries the load it was measured under."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_at_start": load_average(),
    }


def engine_revision() -> dict[str, Any]:
    """The commit and the engine files changed since it, so a figure can be traced."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
            )
        except (OSError, subprocess.CalledProcessError):
            return ""
        return done.stdout.strip()

    changed = git("status", "--porcelain", "--", "reduction_app/engine").splitlines()
    return {"commit": git("rev-parse", "HEAD"), "engine_changes": changed}


def versions(names: Sequence[str]) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(
            c.rjust(w) if i else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def recording_files(folder: Path) -> list[Path]:
    """Every file below ``folder``, subfolders too, with a name the simulator reads
    (``simulator.importers.RECORDING_SUFFIXES``), sorted."""
    from simulator.importers import RECORDING_SUFFIXES

    found = folder.rglob("*")
    return sorted(p for p in found if p.is_file() and p.name.endswith(RECORDING_SUFFIXES))
