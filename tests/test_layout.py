"""The project layout of ``docs/development.md`` is the tree.

The layout is a block of entries: a line that starts before the description column
opens one, headed by a folder (``simulator/``, or ``  sources/`` within the entry above
it, by indentation). Its text names modules and folders as they are spelled in the tree
(``misses.py``, ``views/``), relative to the entry's folder or to the repository root.

- Every module and folder the layout names exists.
- Every module and folder of ``reduction_app/``, ``simulator/`` and ``benchmarks/``
  (at any depth; not ``__init__.py``, ``__main__.py``, private ``_name.py`` modules,
  migrations or static files), every file of ``scripts/`` and every folder of ``tests/``
  is named, the engine's included.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "development.md"
DESCRIPTION_COLUMN = 24
_NOT_LISTED = {ROOT / "reduction_app" / "migrations", ROOT / "reduction_app" / "static"}
_NAME = re.compile(r"(?<![\w./-])(?:(?:[\w-]+/)*[\w-]+\.(?:py|sh|md|json)|(?:[\w-]+/)+)(?![\w/-])")
"""A module or file as the tree spells it (``misses.py``, ``docs/deploying.md``), or a
folder with its slash (``views/``, ``tests/app/``)."""


def layout(text: str) -> str:
    """The first code block after the ``## Project layout`` heading."""
    section = text.split("\n## Project layout\n", 1)[1]
    return section.split("```\n", 1)[1].split("```", 1)[0]


def named(block: str, root: Path = ROOT) -> list[tuple[Path, str]]:
    """``(folder, name)`` for every name of the layout, with the folder of its entry."""
    out: list[tuple[Path, str]] = []
    entries: list[tuple[int, Path]] = []  # the open entries: (indentation, folder)
    for line in block.splitlines():
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent < DESCRIPTION_COLUMN:
            while entries and entries[-1][0] >= indent:
                entries.pop()
            head = _NAME.search(re.split(r"\s{2,}", line.strip())[0])
            assert head, f"a layout entry with no folder: {line!r}"
            parent = entries[-1][1] if entries else root
            path = parent / head[0]
            entries.append((indent, path if head[0].endswith("/") else path.parent))
            out.append((parent, head[0]))
            line = line.replace(head[0], " " * len(head[0]), 1)
        folder = entries[-1][1] if entries else root
        out += [(folder, match[0]) for match in _NAME.finditer(line)]
    return out


def resolve(folder: Path, name: str, root: Path = ROOT) -> Path | None:
    """The path a name stands for: in its entry's folder, else from the root."""
    for base in (folder, root):
        if (base / name).exists():
            return (base / name).resolve()
    return None


def listed_in_tree(root: Path = ROOT) -> Iterator[Path]:
    """What the layout must name."""
    skipped = {root / path.relative_to(ROOT) for path in _NOT_LISTED}
    for top in ("reduction_app", "simulator", "benchmarks"):
        for path in sorted((root / top).rglob("*")):
            if "__pycache__" in path.parts or skipped & {path, *path.parents}:
                continue
            if path.is_dir() or (path.suffix == ".py" and not path.name.startswith("_")):
                yield path
    yield from sorted(p for p in (root / "scripts").iterdir() if p.is_file())
    yield from sorted(p for p in (root / "tests").iterdir() if p.is_dir() and _kept(p))


def _kept(path: Path) -> bool:
    return path.name != "__pycache__" and not path.name.startswith(".")


def problems(text: str, root: Path = ROOT) -> list[str]:
    names = named(layout(text), root)
    found = {resolve(folder, name, root) for folder, name in names}
    missing = [
        f"named but not in the tree: {name} (in {folder.relative_to(root)}/)"
        for folder, name in names
        if resolve(folder, name, root) is None
    ]
    unnamed = [
        f"in the tree but not named: {path.relative_to(root)}"
        for path in listed_in_tree(root)
        if path.resolve() not in found
    ]
    return missing + unnamed


def test_development_layout_is_the_tree() -> None:
    found = problems(PAGE.read_text(encoding="utf-8"))
    assert found == [], "docs/development.md's layout:\n" + "\n".join(found)


def test_layout_check_finds_what_is_missing(tmp_path: Path) -> None:
    """The check itself: a stale name and an unnamed module are both reported; a nested
    entry resolves in its folder."""
    for path in (
        "reduction_app/records/views/files.py",
        "reduction_app/records/reclaim.py",
        "reduction_app/records/integrity.py",
        "simulator/misses.py",
        "benchmarks/sweep.py",
        "scripts/run_together.py",
        "tests/integrations/test_x.py",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("", encoding="utf-8")
    text = (
        "# Development\n\n## Project layout\n\n```\n"
        "reduction_app/          the app\n"
        "  records/              reclaim.py, gone.py\n"
        "    views/              files.py\n"
        "simulator/              misses.py\n"
        "benchmarks/             sweep.py\n"
        "scripts/                run_together.py\n"
        "tests/                  tests/simulator/\n"
        "```\n"
    )
    assert problems(text, tmp_path) == [
        "named but not in the tree: gone.py (in reduction_app/records/)",
        "named but not in the tree: tests/simulator/ (in tests/)",
        "in the tree but not named: reduction_app/records/integrity.py",
        "in the tree but not named: tests/integrations",
    ]
