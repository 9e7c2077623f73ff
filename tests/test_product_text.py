"""Product text speaks to users about the product, not about how it was built.

The text a user reads (the README, ``docs/``, ``benchmarks/README.md``, the pages'
templates, the Makefile, and the strings and comments of every Python file outside
``tests/``) names no issue of the project's tracker and no internal target. The rule:

* **An issue citation** is ``issue 10``, ``issues 10 and 11``, ``issue #10`` (or ``pull
  request``, ``PR``, ``ticket`` for ``issue``), or a bare ``#10``: GitHub links that to an
  issue, whatever was meant. A ``#`` inside a word, an address or an HTML entity
  (``page#12``, ``&#39;``) is no citation, nor is a colour (``#2f5bd3``, ``#000000``).
* **Target wording** is the word ``target`` (``targets``, ``targeted``, ``targeting``),
  also inside a name (``TARGET_SAVING``, ``target_met_by``): in product text it is an
  internal goal, so the text says what is measured and against what instead. The
  technical senses that stay are few: htmx's ``hx-target`` attribute and ``HX-Target``
  header, an attribute named ``target`` of a library's object (``event.target``,
  django-htmx's ``request.htmx.target``), a library's ``target=`` argument
  (``threading.Thread``) and ruff's ``target-version`` setting; and in the Makefile, where
  a target is make's own word for what a rule makes.

Templates are read as a browser shows them: their text, their comments and the attributes
a person reads (``title``, ``alt``, ``placeholder``, ``aria-label``), not the other
attributes of their tags (``hx-target="#event-table"``) nor the arguments of template
tags.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_SKIPPED_DIRS = {"node_modules", "__pycache__", "build", "screenshots"}

_ISSUE = re.compile(
    r"\b(?:issues?|pull\s+requests?|PRs?|tickets?)\s+#?\d+"
    # A bare number sign: not inside a word, an address, an entity or a longer token, and
    # not a colour (six or eight digits; a hex letter is a word character).
    r"|(?<![\w&#/.:%-])#\d{1,5}(?![\w-])",
    re.IGNORECASE,
)
_TARGET = re.compile(r"(?<![a-z])target(?:s|ed|ing)?(?![a-z])", re.IGNORECASE)
_TECHNICAL_TARGET = re.compile(r"\bhx-target\b|\.target\b|\btarget=|\btarget-version\b", re.I)
# Files where "target" is the file's own technical vocabulary.
_TARGET_IS_TECHNICAL = {"Makefile"}
# Citations that are not about this project, by file.
_NOT_OURS = {
    # The demo's scripted conversation is about a fictional guestbook whose bug tracker
    # it quotes (the seeded conversation's title and first message).
    "reduction_app/demo/specs.py": ("bug #4127",),
}


def findings(text: str, *, target_is_technical: bool = False) -> list[str]:
    """What the rule objects to in one piece of text, each as it is written there."""
    found = [match[0] for match in _ISSUE.finditer(text)]
    if not target_is_technical:
        found += [match[0] for match in _TARGET.finditer(_TECHNICAL_TARGET.sub(" ", text))]
    return found


# Each reader yields (line, text) for the parts of a file a user reads.


def python_prose(source: str) -> Iterator[tuple[int, str]]:
    """Every string and comment of a Python source; an f-string without its fields."""
    fstring_middle = getattr(tokenize, "FSTRING_MIDDLE", None)  # Python 3.12 and later
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        text = token.string
        if token.type == tokenize.COMMENT:
            text = text.lstrip("#")
        elif token.type == tokenize.STRING:
            prefix = text[: len(text) - len(text.lstrip("rbfuRBFU"))]
            if "f" in prefix.lower():
                text = _without_fields(text)
        elif token.type != fstring_middle:
            continue
        yield token.start[0], text


def _without_fields(text: str) -> str:
    """An f-string's literal text: each ``{...}`` field (nested ones in its format spec
    too) blanked out, ``{{`` and ``}}`` kept as the braces they stand for."""
    out, depth, i = [], 0, 0
    while i < len(text):
        pair = text[i : i + 2]
        if depth == 0 and pair in ("{{", "}}"):
            out.append(pair[0])
            i += 2
            continue
        char = text[i]
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0:
                out.append(" ")
        elif depth == 0:
            out.append(char)
        i += 1
    return "".join(out)


_DJANGO_COMMENT = re.compile(r"\{#(.*?)#\}|\{%\s*comment\b.*?%\}(.*?)\{%\s*endcomment\s*%\}", re.S)
_DJANGO_TAG = re.compile(r"\{%.*?%\}|\{\{.*?\}\}", re.S)


_READ_ATTRIBUTES = {"title", "alt", "placeholder", "aria-label"}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.parts: list[tuple[int, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        line = self.getpos()[0]
        self.parts += [(line, v) for k, v in attrs if k in _READ_ATTRIBUTES and v]

    def handle_data(self, data: str) -> None:
        self.parts.append((self.getpos()[0], data))

    def handle_comment(self, data: str) -> None:
        self.parts.append((self.getpos()[0], data))


def template_prose(source: str) -> Iterator[tuple[int, str]]:
    """The text and comments of a Django template, without its tags' attributes and
    without template tags and variables (each blanked, its lines kept)."""

    def blank(match: re.Match[str]) -> str:
        return " " + "\n" * match[0].count("\n")

    for match in _DJANGO_COMMENT.finditer(source):
        yield source.count("\n", 0, match.start()) + 1, match[1] or match[2] or ""
    parser = _Text()
    parser.feed(_DJANGO_TAG.sub(blank, _DJANGO_COMMENT.sub(blank, source)))
    parser.close()
    yield from parser.parts


def markdown_prose(source: str) -> Iterator[tuple[int, str]]:
    """Every line."""
    yield from enumerate(source.splitlines(), start=1)


def makefile_prose(source: str) -> Iterator[tuple[int, str]]:
    """Every line, a comment without its own number signs."""
    for number, line in enumerate(source.splitlines(), start=1):
        yield number, re.sub(r"^\s*@?#+", " ", line)


def violations(relative: str, source: str) -> list[str]:
    """``file:line: what`` for each finding in a file of the product."""
    if relative.endswith(".py"):
        prose = python_prose(source)
    elif relative.startswith("templates/"):
        prose = template_prose(source)
    elif relative.endswith(".md"):
        prose = markdown_prose(source)
    else:
        prose = makefile_prose(source)
    not_ours = _NOT_OURS.get(relative, ())
    target_is_technical = relative in _TARGET_IS_TECHNICAL
    out = []
    for line, text in prose:
        for phrase in not_ours:
            text = text.replace(phrase, " ")
        for offset, chunk in enumerate(text.split("\n")):
            for found in findings(chunk, target_is_technical=target_is_technical):
                out.append((line + offset, f"{found!r} in {chunk.strip()[:120]!r}"))
    return [f"{relative}:{line}: {what}" for line, what in sorted(out, key=lambda f: f[0])]


def product_files() -> list[str]:
    """Every file of product text, relative to the repository."""
    files = ["README.md", "Makefile", "benchmarks/README.md"]
    files += [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.md"))]
    files += [str(p.relative_to(ROOT)) for p in sorted((ROOT / "templates").rglob("*.html"))]
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if parts[0] == "tests" or any(
            p in _SKIPPED_DIRS or p.startswith(".") or p.endswith(".egg-info") for p in parts[:-1]
        ):
            continue
        files.append(str(path.relative_to(ROOT)))
    return files


@pytest.mark.parametrize("relative", product_files())
def test_product_text_cites_no_issue_and_no_target(relative: str) -> None:
    assert violations(relative, (ROOT / relative).read_text(encoding="utf-8")) == []


def test_product_text_covers_every_kind_of_file() -> None:
    files = product_files()
    for expected in (
        "README.md",
        "Makefile",
        "benchmarks/README.md",
        "docs/behaviour.md",
        "templates/reduction_app/tune.html",
        "simulator/recommend.py",
        "benchmarks/replay.py",
        "manage.py",
        "scripts/run_together.py",
    ):
        assert expected in files
    assert not [f for f in files if f.startswith(("tests/", ".venv/"))]


# The probes: the scanner finds what is planted, and passes the technical senses.


def test_findings_name_issue_citations() -> None:
    text = (
        "issue 10's goal; issues 10 and 11; Issue #12; see #13, (#14); PR 15; "
        "pull request 16; ticket 17"
    )
    assert findings(text) == [
        "issue 10",
        "issues 10",
        "Issue #12",
        "#13",
        "#14",
        "PR 15",
        "pull request 16",
        "ticket 17",
    ]


def test_findings_pass_what_is_no_citation() -> None:
    text = (
        "colour #2f5bd3 or #000000, &#39; page#12 /x/#3 C#4 §4.12 ## 5. heading, "
        "an issue with 10 files, the issues: 3 of them"
    )
    assert findings(text) == []


def test_findings_name_target_wording() -> None:
    text = "the target; Targets met; TARGET_SAVING; target_met_by; we targeted 2x"
    assert findings(text) == ["target", "Targets", "TARGET", "target", "targeted"]


def test_findings_pass_the_technical_senses_of_target() -> None:
    text = (
        'hx-target="#x"; HX-Target header; request.htmx.target; event.target; '
        "Thread(target=run); target-version = py311"
    )
    assert findings(text) == []
    assert findings("the run target", target_is_technical=True) == []


def test_violations_in_python_read_strings_and_comments_only() -> None:
    source = (
        '"""Meets issue 10."""\n'
        "target = 1  # the target, see #11\n"
        "print(f'{target} reached the target {n:>{width}}')\n"
        "message = 'hx-target stays, #2f5bd3 too'\n"
    )
    assert violations("pkg/mod.py", source) == [
        'pkg/mod.py:1: \'issue 10\' in \'"""Meets issue 10."""\'',
        "pkg/mod.py:2: '#11' in 'the target, see #11'",
        "pkg/mod.py:2: 'target' in 'the target, see #11'",
        "pkg/mod.py:3: 'target' in \"f'  reached the target  '\"",
    ]


def test_violations_in_a_docstring_name_the_line_of_the_finding() -> None:
    source = '"""First line.\n\nThird line cites issue 3.\n"""\n'
    assert violations("m.py", source) == [
        "m.py:3: 'issue 3' in 'Third line cites issue 3.'",
    ]


def test_violations_in_a_template_read_text_and_comments_only() -> None:
    source = (
        '<a href="/x" hx-target="#table" title="issue 4">Next</a>\n'
        '{% include "pager.html" with target="#table" %}\n'
        "<p>Meets the target of {{ target }}</p>\n"
        "{# fixed in issue 5 #}<!-- see #6 -->\n"
        "{% comment %}\nissue 7\n{% endcomment %}\n"
    )
    assert violations("templates/t.html", source) == [
        "templates/t.html:1: 'issue 4' in 'issue 4'",
        "templates/t.html:3: 'target' in 'Meets the target of'",
        "templates/t.html:4: 'issue 5' in 'fixed in issue 5'",
        "templates/t.html:4: '#6' in 'see #6'",
        "templates/t.html:6: 'issue 7' in 'issue 7'",
    ]


def test_violations_in_markdown_and_the_makefile() -> None:
    source = "# Title\n\nThe target was 2x (issue 9).\n"
    assert violations("docs/page.md", source) == [
        "docs/page.md:3: 'issue 9' in 'The target was 2x (issue 9).'",
        "docs/page.md:3: 'target' in 'The target was 2x (issue 9).'",
    ]
    makefile = "# The run target; issue 9.\nrun: setup\n"
    assert violations("Makefile", makefile) == [
        "Makefile:1: 'issue 9' in 'The run target; issue 9.'",
    ]


def test_violations_pass_a_citation_that_is_not_ours() -> None:
    source = 'TITLE = "A guestbook comment that ran JavaScript (bug #4127)"\n'
    assert violations("reduction_app/demo/specs.py", source) == []
    assert violations("reduction_app/other.py", source) != []
