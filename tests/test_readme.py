"""The README stays a front door: the two commands first, short examples that run, and
no more than a page."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
MAX_LINES = 300


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _text(), re.S)


def test_readme_starts_with_the_two_commands() -> None:
    text = _text()
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.strip().splitlines()] == [
        ["make", "run"],
        ["make", "test"],
    ]
    assert text.index("```sh") < text.index("\n## ")


def test_readme_fits_on_a_page() -> None:
    assert len(_text().splitlines()) <= MAX_LINES


def test_readme_examples_are_short() -> None:
    """One engine example of at most 20 lines, one REST example of at most 10."""
    [python] = _blocks("python")
    assert len(python.splitlines()) <= 20
    rest = [block for block in _blocks("sh") if "curl" in block]
    assert len(rest) == 1
    assert len(rest[0].splitlines()) <= 10


def test_readme_links_every_page_of_the_manual() -> None:
    docs = README.parent / "docs"
    pages = sorted(f"docs/{page.name}" for page in docs.glob("*.md"))
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)[)#]", _text()))
    assert [page for page in pages if page not in linked] == []
    assert "](benchmarks/README.md)" in _text()
