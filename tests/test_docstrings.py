"""Module docstrings stay short: what the module owns and why, in a few lines.

How a module works belongs to its functions' docstrings and comments, and what a user
needs to the manual (``docs/``, ``benchmarks/README.md``); a module docstring that
grows into a manual is cut back, not allowed a longer limit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reduction_app", "simulator", "benchmarks", "scripts", "config")
MAX_LINES = 8
"""The most lines a module docstring may take, its quotes included, in every package."""

LONGER = {
    "reduction_app/engine/errors.py": "draws the error tree, as httpx's _exceptions.py does",
}
"""Modules allowed a longer docstring, each with the reason."""


def _modules() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "__pycache__" not in path.parts and "migrations" not in path.parts:
                yield path


def docstring_lines(source: str) -> int:
    """How many lines the module docstring of ``source`` takes (0 without one)."""
    body = ast.parse(source).body
    if not body or not isinstance(body[0], ast.Expr):
        return 0
    value = body[0].value
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return 0
    end = body[0].end_lineno or body[0].lineno
    return end - body[0].lineno + 1


def test_module_docstrings_are_short() -> None:
    found = []
    for path in _modules():
        shown = str(path.relative_to(ROOT))
        lines = docstring_lines(path.read_text(encoding="utf-8"))
        if lines > MAX_LINES and shown not in LONGER:
            found.append(f"{shown}: {lines} lines, over {MAX_LINES}")
    assert found == [], "module docstrings too long:\n" + "\n".join(found)


def test_every_module_allowed_longer_still_is() -> None:
    """A module cut back leaves the list, so the list only shrinks."""
    for shown in sorted(LONGER):
        assert docstring_lines((ROOT / shown).read_text(encoding="utf-8")) > MAX_LINES, shown


def test_limit_is_the_engines_everywhere() -> None:
    """One limit for the project, no looser than the engine and the integrations had."""
    assert MAX_LINES == 8
    assert set(LONGER) == {"reduction_app/engine/errors.py"}


def test_docstring_lines_counts_the_quotes() -> None:
    assert docstring_lines('"""One line."""\n') == 1
    assert docstring_lines('"""Two\n\nlines and a close.\n"""\nx = 1\n') == 4
    assert docstring_lines("x = 1\n") == 0
