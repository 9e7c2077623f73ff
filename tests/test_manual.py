"""The manual stays true to the code: the README, the pages under ``docs/`` and the
benchmarks' figures page.

- the configuration table of ``docs/engine.md`` is the config spec, row for row;
- the environment tables of ``docs/deploying.md`` name every variable the code reads, and
  are the one place each is described;
- every ```python block runs, but a block marked ``<!-- not run: WHY -->`` on the line
  before it (one that needs a model's API key or a server), which must compile and whose
  imports must resolve;
- every relative link names a file that exists, and an anchor that one of its headings
  makes.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest

from reduction_app.engine import config_field_defaults, config_fields

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
ENGINE_PAGE = DOCS / "engine.md"
DEPLOYING_PAGE = DOCS / "deploying.md"
PAGES = sorted([ROOT / "README.md", ROOT / "benchmarks" / "README.md", *DOCS.glob("*.md")])
_ROW = re.compile(r"^\| `(?P<name>\w+)` \| `(?P<default>[^`]*)` \| (?P<help>.*) \|$")


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name


def config_table(text: str) -> list[tuple[str, object, str]]:
    """``(field, default, help)`` per row of the table of config fields; the help as
    plain text (code marks and escaped pipes undone)."""
    lines = text.splitlines()
    start = lines.index("| field | default | what it does |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        match = _ROW.match(line)
        assert match, f"config row does not parse: {line}"
        help_text = match["help"].replace("`", "").replace("\\|", "|")
        rows.append((match["name"], ast.literal_eval(match["default"]), help_text))
    return rows


def config_table_expected() -> list[tuple[str, object, str]]:
    """The rows the spec of the config fields asks for."""
    return [(spec.name, spec.default, spec.help) for spec in config_fields()]


def test_engine_page_config_table_matches_the_spec() -> None:
    """Every config field is in the table, in order, with its default and the spec's
    help word for word."""
    assert config_table(ENGINE_PAGE.read_text(encoding="utf-8")) == config_table_expected()


def test_engine_page_config_table_defaults_are_the_dataclass_defaults() -> None:
    rows = config_table(ENGINE_PAGE.read_text(encoding="utf-8"))
    assert [row[:2] for row in rows] == config_field_defaults()


_ENV_READ = re.compile(
    r"""(?:(?:os\.)?environ(?:\.get)?[\[(]|getenv\(|_env_(?:bool|int)\(|_env_name\(\s*environ,)\s*"([A-Z][A-Z0-9_]*)\""""
    r"""|"([A-Z][A-Z0-9_]*)" in (?:os\.)?environ\b"""
    # A setting's former name, still read (config.settings._env_name):
    r"""|\bformer="([A-Z][A-Z0-9_]*)\""""
)
_AWS_NAME = re.compile(r'"(AWS_[A-Z0-9_]+)"')
_VARIABLE_NAME = re.compile(r'^[A-Z_]*VARIABLE = "([A-Z][A-Z0-9_]*)"', re.M)
_ENV_CODE = ("config", "reduction_app", "simulator")
_ENV_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \|", re.M)
_TABLE_ROW = re.compile(r"^\|.*\|$", re.M)


def environment_variables_read() -> set[str]:
    """Every variable the code of the settings, the app and the simulator takes from the
    environment (gunicorn's config and the engine's tiktoken cache included)."""
    names: set[str] = set()
    for folder in _ENV_CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            names |= {a or b or c for a, b, c in _ENV_READ.findall(text)}
            if path == ROOT / "config" / "settings.py":
                # The S3 options are read in a loop over (option, "AWS_...") pairs.
                names |= set(_AWS_NAME.findall(text))
            # The recordings folder's variable is a named constant.
            names |= set(_VARIABLE_NAME.findall(text))
    return names


def test_deploying_page_lists_every_environment_variable() -> None:
    """The page's tables of environment variables (the server's, and S3's) name each
    variable the code reads, and only those (besides gunicorn's own GUNICORN_CMD_ARGS)."""
    listed = set(_ENV_ROW.findall(DEPLOYING_PAGE.read_text(encoding="utf-8")))
    assert listed == environment_variables_read() | {"GUNICORN_CMD_ARGS"}


def test_deploying_page_lists_each_variable_once() -> None:
    rows = _ENV_ROW.findall(DEPLOYING_PAGE.read_text(encoding="utf-8"))
    assert sorted(rows) == sorted(set(rows))


def _default_given(name: str) -> re.Pattern[str]:
    """A mention of ``name`` that states its value: ``(2 MB by default)``, ``(6 h)``,
    ``(`NAME`, 3)``, ``` `NAME` of 60 ```."""
    return re.compile(
        rf"`{name}`(?:\s*\((?:[^()`]*\bdefault\b|\s*\d)|,\s*\d|\s+(?:of|is|=)\s+`?\d)"
    )


def environment_repeats(page: Path, names: set[str]) -> list[str]:
    """Where ``page`` describes an environment variable again: a table row of its own, or
    a mention that gives its default. Naming a variable, and linking to its row, is fine."""
    text = page.read_text(encoding="utf-8")
    found = []
    for row in _TABLE_ROW.findall(text):
        cells = row.strip("|").split("|")
        if re.fullmatch(r"\s*`[A-Z][A-Z0-9_]*`\s*", cells[0]) and cells[0].strip(" `") in names:
            found.append(f"{_shown(page)}: a row for {cells[0].strip()}")
    for name in sorted(names):
        found += [f"{_shown(page)}: {m[0]}" for m in _default_given(name).finditer(text)]
    return found


def test_environment_variables_are_described_once() -> None:
    """docs/deploying.md's tables are the one place a variable's default and meaning are
    written; the other pages name it and link there."""
    names = set(_ENV_ROW.findall(DEPLOYING_PAGE.read_text(encoding="utf-8")))
    found = [
        problem
        for page in PAGES
        if page != DEPLOYING_PAGE
        for problem in environment_repeats(page, names)
    ]
    assert found == []


def test_environment_repeat_check_finds_a_second_description(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "| `REDUCTION_RATE_LIMIT` | `0` | requests a minute |\n"
        "Up to `REDUCTION_IMPORT_INLINE_BYTES` (2 MB by default), `REDUCTION_SWEEP_MAX_RUNS`,"
        " 3 runs; `DATABASE_URL` ([settings](deploying.md#environment-variables)).\n",
        encoding="utf-8",
    )
    names = {"REDUCTION_RATE_LIMIT", "REDUCTION_IMPORT_INLINE_BYTES", "REDUCTION_SWEEP_MAX_RUNS"}
    assert environment_repeats(page, names | {"DATABASE_URL"}) == [
        "page.md: a row for `REDUCTION_RATE_LIMIT`",
        "page.md: `REDUCTION_IMPORT_INLINE_BYTES` (2 MB by default",
        "page.md: `REDUCTION_SWEEP_MAX_RUNS`, 3",
    ]


_NOT_RUN = "<!-- not run: "


def _python_blocks() -> list[tuple[str, int, str, bool]]:
    """Each ```python block of the pages: its page, its index there, its code, and
    whether it is to run (not marked ``<!-- not run: WHY -->`` on the line before)."""
    blocks = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for index, match in enumerate(re.finditer(r"```python\n(.*?)```", text, re.S)):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            runs = not before.startswith(_NOT_RUN)
            blocks.append((_shown(page), index, match.group(1), runs))
    return blocks


@pytest.mark.parametrize(
    ("page", "index", "block", "runs"),
    [pytest.param(*block, id=f"{block[0]}-{block[1]}") for block in _python_blocks()],
)
def test_manual_python_blocks_run(
    page: str, index: int, block: str, runs: bool, tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Every ```python block runs without error, in a scratch folder; one that needs what a
    test cannot give (a model's API key, a server) compiles, and its imports resolve."""
    monkeypatch.chdir(tmp_path)
    code = compile(block, f"{page} python block {index}", "exec")
    if runs:
        exec(code, {})
        return
    tree = ast.parse(block)
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    exec(compile(ast.Module(body=imports, type_ignores=[]), page, "exec"), {})


def test_manual_marks_few_blocks_not_run() -> None:
    """Blocks that do not run are the exception: each says why, and most blocks run."""
    marked = [block for block in _python_blocks() if not block[3]]
    assert len(marked) <= 3
    for page in PAGES:
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.startswith(_NOT_RUN):
                assert line.endswith(" -->") and len(line) > len(_NOT_RUN) + 10, line


def test_manual_has_python_examples() -> None:
    pages = {page for page, _, _, _ in _python_blocks()}
    assert {"README.md", "docs/engine.md"} <= pages


def slug(heading: str) -> str:
    """The anchor a heading gets on GitHub: lower case, punctuation dropped (letters,
    digits, spaces, ``-`` and ``_`` kept), spaces made ``-``."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in ("L", "N"))
    return kept.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file's headings (a repeated one gets ``-1``, ``-2``),
    fenced code left out."""
    seen: dict[str, int] = {}
    out = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not re.match(r"#{1,6} ", line):
            continue
        base = slug(line.lstrip("#"))
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return frozenset(out)


_LINK = re.compile(r"(?<!!)\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def dangling_links(page: Path) -> list[str]:
    """Every relative link of ``page`` to a missing file or a missing heading."""
    problems = []
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for match in _LINK.finditer(line):
            target = match[1] or match[2]
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            destination = (page.parent / file_part).resolve() if file_part else page
            where = f"{_shown(page)}:{number}: {target}"
            if not destination.exists():
                problems.append(f"{where}: no such file")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                problems.append(f"{where}: no such heading")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=_shown)
def test_manual_links_resolve(page: Path) -> None:
    assert dangling_links(page) == []


def test_link_check_finds_what_is_missing(tmp_path: Path) -> None:
    """The check itself: a missing file and a missing heading are named; a heading with
    code, punctuation and a section sign resolves."""
    (tmp_path / "other.md").write_text("# §4.12 The `clear` phase (opt-in)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "## Here\n[a](other.md#412-the-clear-phase-opt-in) [b](#here)\n"
        "[c](missing.md) [d](other.md#nowhere) [e](https://example.com/x#y)\n",
        encoding="utf-8",
    )
    found = [problem.split(": ", 1)[1] for problem in dangling_links(page)]
    assert found == ["missing.md: no such file", "other.md#nowhere: no such heading"]
