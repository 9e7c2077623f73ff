"""Writing a benchmark's figures into ``benchmarks/README.md``: the one place figures live.

Each benchmark owns blocks between ``<!-- figures: NAME -->`` markers; :func:`write_block`
replaces one atomically with a stamp (when, which commit, what machine and load) and the
benchmark's markdown, leaving every byte outside it as it was. Writers are not locked
against each other: run benchmarks one at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, load_average, versions

__all__ = [
    "README",
    "BlockError",
    "Stamp",
    "add_readme_arguments",
    "check_block",
    "markers",
    "md_table",
    "readme_path",
    "replace_block",
    "unmeasured",
    "verdict",
    "write_block",
]

README = ROOT / "benchmarks" / "README.md"
"""Where the figures live, unless ``--readme-path`` says otherwise."""


class BlockError(ValueError):
    """The file has no block of that name, or its markers are out of order or repeated."""


def markers(name: str) -> tuple[str, str]:
    """The opening and closing marker of block ``name``."""
    return f"<!-- figures: {name} -->", f"<!-- /figures: {name} -->"


def _span(text: str, name: str, where: str) -> tuple[int, int]:
    """Where the block's content lies: just after the opening marker, up to the closing."""
    opening, closing = markers(name)
    counts = (text.count(opening), text.count(closing))
    if counts == (0, 0):
        raise BlockError(f"{where} has no block {name!r}: add {opening} and {closing}")
    if counts != (1, 1):
        raise BlockError(
            f"{where}: block {name!r} needs one {opening} and one {closing}; "
            f"found {counts[0]} and {counts[1]}"
        )
    start = text.index(opening) + len(opening)
    end = text.index(closing)
    if end < start:
        raise BlockError(f"{where}: block {name!r} closes before it opens")
    return start, end


def replace_block(text: str, name: str, content: str, *, where: str = "the text") -> str:
    """``text`` with block ``name`` holding ``content``; nothing outside it changes."""
    start, end = _span(text, name, where)
    return f"{text[:start]}\n{content.strip(chr(10))}\n{text[end:]}"


def unmeasured(module: str) -> str:
    """What a new block holds until ``python -m <module> --readme`` first writes it."""
    return f"_Not measured yet: `python -m {module} --readme` writes this block._"


def check_block(path: Path, name: str) -> None:
    """Raise :class:`BlockError` (or ``OSError``) now if ``path`` cannot take the block."""
    _span(path.read_bytes().decode("utf-8"), name, str(path))


def write_block(path: Path, name: str, content: str) -> None:
    """Replace block ``name`` of ``path`` with ``content``, atomically.

    Bytes, not text mode, so line endings outside the block are kept as they are."""
    text = path.read_bytes().decode("utf-8")
    new = replace_block(text, name, content, where=str(path))
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(new.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# The line that opens every block ----------------------------------------------------------


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return ""
    return done.stdout.strip()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return " ".join(line.partition(":")[2].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _os_name() -> str:
    try:
        distribution = platform.freedesktop_os_release()["PRETTY_NAME"]
    except (OSError, KeyError):
        distribution = ""
    kernel = f"{platform.system()} {platform.release()}"
    return f"{distribution}, {kernel}" if distribution else kernel


def _load(values: Sequence[float]) -> str:
    return " / ".join(f"{v:.2f}" for v in values) if values else "unknown"


@dataclass(frozen=True)
class Stamp:
    """What a block says about its run, taken as the benchmark starts."""

    command: str
    date: str
    commit: str
    dirty: bool
    cpu: str
    cpus: int
    os: str
    python: str
    packages: dict[str, str]
    load_at_start: list[float]

    @classmethod
    def take(
        cls,
        module: str,
        argv: Sequence[str] | None,
        packages: Sequence[str] = (),
        *,
        readme: Path = README,
    ) -> Stamp:
        """The run as it starts. The file the figures go to does not make the tree dirty
        (an earlier benchmark of the same regeneration has just written it)."""
        try:
            exclude = [f":(exclude){readme.resolve().relative_to(ROOT)}"]
        except ValueError:
            exclude = []
        changes = _git("status", "--porcelain", "--untracked-files=no", "--", ".", *exclude)
        return cls(
            command=_command(module, argv),
            date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            commit=_git("rev-parse", "--short", "HEAD") or "unknown",
            dirty=bool(changes),
            cpu=_cpu_model(),
            cpus=os.cpu_count() or 0,
            os=_os_name(),
            python=platform.python_version(),
            packages=versions(packages),
            load_at_start=load_average(),
        )

    def line(self, load_at_end: Sequence[float] | None = None) -> str:
        """The block's first line: date, commit, machine, load at the start and the end."""
        end = load_average() if load_at_end is None else list(load_at_end)
        commit = f"`{self.commit}`" + (" with uncommitted changes" if self.dirty else "")
        software = ", ".join(
            [f"Python {self.python}", *(f"{n} {v}" for n, v in self.packages.items())]
        )
        return (
            f"_Measured {self.date} at commit {commit}, on {self.cpus} × {self.cpu} "
            f"({self.os}; {software}); load average (1 / 5 / 15 min) "
            f"{_load(self.load_at_start)} at the start, {_load(end)} at the end._"
        )

    def block(self, sections: Sequence[str], load_at_end: Sequence[float] | None = None) -> str:
        """The whole block: the stamp line, the command, then ``sections`` (tables and
        sentences), a blank line between each."""
        head = f"{self.line(load_at_end)}\n`{self.command}`"
        return "\n\n".join([head, *(s.strip("\n") for s in sections if s)])


def _command(module: str, argv: Sequence[str] | None) -> str:
    """The command as run, less where its output went (``--out``, ``--readme*``)."""
    args = list(argv) if argv is not None else sys.argv[1:]
    kept: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        name = arg.partition("=")[0]
        if name in ("--readme",):
            continue
        if name in ("--out", "--readme-path"):
            skip = "=" not in arg
            continue
        kept.append(arg)
    return shlex.join(["python", "-m", module, *kept])


# Markdown ---------------------------------------------------------------------------------


def verdict(values: Sequence[float], goal: float, rows: str = "rows") -> str:
    """Whether every value meets ``goal`` (at most), some do, or none: ``met``,
    ``not met in 2 of 4 rows`` or ``not met``."""
    missed = sum(value > goal for value in values)
    if not missed:
        return "met"
    if missed == len(values):
        return "not met"
    return f"not met in {missed} of {len(values)} {rows}"


def md_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1) -> str:
    """A markdown table: the first ``left`` columns left-aligned (names), the others
    right-aligned (figures), as :func:`benchmarks.common.table` prints them. A ``|`` in a
    cell is escaped."""

    def cells(row: Sequence[Any]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |"

    rule = "|" + "|".join("---" if i < left else "---:" for i in range(len(headers))) + "|"
    return "\n".join([cells(headers), rule, *(cells(r) for r in rows)])


# Command line -----------------------------------------------------------------------------


def add_readme_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--readme",
        action="store_true",
        help="write the figures into their block of benchmarks/README.md",
    )
    parser.add_argument(
        "--readme-path",
        type=Path,
        metavar="PATH",
        help="with --readme (implied): the markdown file to write into instead",
    )


def readme_path(args: argparse.Namespace, *names: str) -> Path | None:
    """The file to write blocks ``names`` into, or ``None`` without ``--readme``; checked
    now, so a missing block stops the run before it measures."""
    if not (args.readme or args.readme_path):
        return None
    path: Path = args.readme_path or README
    try:
        for name in names:
            check_block(path, name)
    except (BlockError, OSError) as error:
        raise SystemExit(f"--readme: {error}") from None
    return path


def publish(
    sections: Sequence[str],
    report: dict[str, Any],
    *,
    out: Path,
    readme: Path | None,
    block: str,
    stamp: Stamp,
) -> None:
    """Print a benchmark's sections, write its report to ``out`` and, with ``readme``, its
    block ``block`` of that file (stamped, with the load at the end of the report)."""
    print("\n" + "\n\n".join(sections))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {out}")
    if readme is not None:
        write_block(readme, block, stamp.block(sections, report["load_at_end"]))
        print(f"wrote its block {block} of {readme}")
