"""Citations in the code point at documentation that ships with the repository.

Docstrings and comments cite ``docs/<page>.md §x.y``; a bare ``§x.y``, ``§x.y step n``,
``decision n``, ``case n`` or ``conversation Cn`` refers to ``docs/behaviour.md``, the
engine's contract. Each must name a heading, step or case that exists there.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BEHAVIOUR = "behaviour"
_SKIPPED_DIRS = {"node_modules", "__pycache__", "screenshots"}
_HEADING = re.compile(r"^#{2,4} (?:(§\d+(?:\.\d+)*)|Decision (\d+)\.) ", re.MULTILINE)
_PAGE_CITATION = re.compile(r"docs/([\w-]+)\.md((?:(?:,? | and |–)§\d+(?:\.\d+)*)+)")
_SECTION = re.compile(r"§\d+(?:\.\d+)*")
_STEP = re.compile(r"(§\d+(?:\.\d+)*) step (\d+)")
_NUMBERS = r"(\d+)[a-e]?((?:(?:, | and |–|/)\d+[a-e]?)*)"
_DECISION = re.compile(r"\b[Dd]ecisions? " + _NUMBERS)
_CASE = re.compile(r"\b[Cc]ases? " + _NUMBERS)
_CONVERSATION = re.compile(r"\bconversations? (C\d+)")


def _python_files() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if any(p in _SKIPPED_DIRS or p.startswith(".") for p in parts[:-1]):
            continue
        yield path


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every string and comment in a Python file."""
    source = path.read_text(encoding="utf-8")
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.STRING, tokenize.COMMENT):
            yield token.start[0], token.string


@cache
def _sections(page: str) -> dict[str, str]:
    """Heading id (``§3.2``, ``decision 5``) → the text up to the next heading."""
    text = (DOCS / f"{page}.md").read_text(encoding="utf-8")
    matches = list(_HEADING.finditer(text))
    out = {}
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        key = match[1] or f"decision {match[2]}"
        out[key] = text[match.end() : following.start() if following else len(text)]
    return out


def _cases() -> set[str]:
    body = "".join(v for k, v in _sections(BEHAVIOUR).items() if k.startswith("§8"))
    return set(re.findall(r"^(\d+)\. ", body, re.MULTILINE))


def _numbers(match: re.Match[str]) -> list[str]:
    """The numbers a citation names: a list's items and a range's two ends."""
    return [match[1], *re.findall(r"\d+", match[2])]


def _dangling(path: Path, shown: str) -> Iterator[str]:
    """Every citation in ``path`` (shown as ``shown``) of a heading, step, decision, case
    or conversation that the documentation does not have."""
    behaviour = _sections(BEHAVIOUR)
    cases = _cases()
    for line, text in _prose(path):
        where = f"{shown}:{line}"
        for match in _PAGE_CITATION.finditer(text):
            page = match[1]
            if not (DOCS / f"{page}.md").exists():
                yield f"{where}: docs/{page}.md does not exist"
                continue
            for section in _SECTION.findall(match[2]):
                if section not in _sections(page):
                    yield f"{where}: docs/{page}.md has no heading {section}"
        bare = _PAGE_CITATION.sub("", text)
        for section in _SECTION.findall(bare):
            if section not in behaviour:
                yield f"{where}: docs/{BEHAVIOUR}.md has no heading {section}"
        for section, step in _STEP.findall(text):
            body = behaviour.get(section, "")
            if not re.search(rf"^{step}\. ", body, re.MULTILINE):
                yield f"{where}: docs/{BEHAVIOUR}.md {section} has no step {step}"
        for match in _DECISION.finditer(text):
            for number in _numbers(match):
                if f"decision {number}" not in behaviour:
                    yield f"{where}: docs/{BEHAVIOUR}.md has no decision {number}"
        for match in _CASE.finditer(text):
            for number in _numbers(match):
                if number not in cases:
                    yield f"{where}: docs/{BEHAVIOUR}.md §8 has no case {number}"
        for name in _CONVERSATION.findall(text):
            if f"Conversation {name}:" not in behaviour["§8.2"]:
                yield f"{where}: docs/{BEHAVIOUR}.md §8.2 does not define {name}"


def test_no_python_file_cites_the_unshipped_reference() -> None:
    """The old specification is not in the repository; citations point at docs/."""
    needle = "REFERENCE" + " §"
    found = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _python_files()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if needle in line
    ]
    assert found == []


def test_doc_citations_name_existing_headings() -> None:
    found = [
        problem
        for path in _python_files()
        if path != Path(__file__).resolve()  # its own probe cites missing headings on purpose
        for problem in _dangling(path, str(path.relative_to(ROOT)))
    ]
    assert found == [], "citations of missing documentation:\n" + "\n".join(found)


def test_citation_check_finds_what_is_missing(tmp_path: Path) -> None:
    """The check itself: a citation of a missing heading, step, decision or case is named."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""docs/behaviour.md §4.6, §99.1; docs/nowhere.md §1."""\n'
        "# §3.2 step 99, decision 13, cases 1–200, case 23, conversation C9\n",
        encoding="utf-8",
    )
    problems = list(_dangling(probe, "probe.py"))
    assert problems == [
        "probe.py:1: docs/behaviour.md has no heading §99.1",
        "probe.py:1: docs/nowhere.md does not exist",
        "probe.py:2: docs/behaviour.md §3.2 has no step 99",
        "probe.py:2: docs/behaviour.md has no decision 13",
        "probe.py:2: docs/behaviour.md §8 has no case 200",
        "probe.py:2: docs/behaviour.md §8.2 does not define C9",
    ]


def test_behaviour_page_headings_are_unique_and_linked_from_the_readme() -> None:
    text = (DOCS / f"{BEHAVIOUR}.md").read_text(encoding="utf-8")
    ids = [m[1] or m[2] for m in _HEADING.finditer(text)]
    assert len(ids) == len(set(ids))
    assert [f"decision {n}" in _sections(BEHAVIOUR) for n in range(1, 13)] == [True] * 12
    assert f"](docs/{BEHAVIOUR}.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


_NAMED_CITATION = re.compile(r'docs/([\w-]+)\.md, "([^"]+)"')


def _named_dangling(path: Path, shown: str) -> Iterator[str]:
    """Every ``docs/<page>.md, "<heading>"`` citation in ``path`` of a heading the page
    does not have (a citation may run over a line break of its docstring)."""
    for line, text in _prose(path):
        for page, heading in _NAMED_CITATION.findall(" ".join(text.split())):
            target = DOCS / f"{page}.md"
            if not target.exists():
                yield f"{shown}:{line}: docs/{page}.md does not exist"
                continue
            headings = re.findall(r"^#{1,4} (.+)$", target.read_text(encoding="utf-8"), re.M)
            if heading not in headings:
                yield f'{shown}:{line}: docs/{page}.md has no heading "{heading}"'


def test_doc_citations_by_name_name_existing_headings() -> None:
    found = [
        problem
        for path in _python_files()
        if path != Path(__file__).resolve()
        for problem in _named_dangling(path, str(path.relative_to(ROOT)))
    ]
    assert found == [], "citations of missing documentation:\n" + "\n".join(found)


def test_named_citation_check_finds_what_is_missing(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        '"""See docs/engine.md, "Wire formats", and docs/engine.md, "No such\n'
        'heading"."""\n# docs/nowhere.md, "Anything"\n',
        encoding="utf-8",
    )
    assert list(_named_dangling(probe, "probe.py")) == [
        'probe.py:1: docs/engine.md has no heading "No such heading"',
        "probe.py:3: docs/nowhere.md does not exist",
    ]
