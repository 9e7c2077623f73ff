"""The README stays true to the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from reduction_app.engine import config_field_defaults

README = Path(__file__).resolve().parent.parent / "README.md"
_ROW = re.compile(r"^\| `(?P<name>\w+)` \| `(?P<default>[^`]*)` \|")


def _config_table() -> list[tuple[str, object]]:
    lines = README.read_text(encoding="utf-8").splitlines()
    start = lines.index("| field | default | what it does |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        match = _ROW.match(line)
        assert match, f"README config row does not parse: {line}"
        rows.append((match["name"], ast.literal_eval(match["default"])))
    return rows


def test_readme_config_table_matches_dataclass() -> None:
    """Every ReductionConfig field is in the README table, in order, with its real default."""
    assert _config_table() == config_field_defaults()


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    block = text.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split()[:2] for line in block.strip().splitlines()] == [
        ["make", "run"],
        ["make", "test"],
    ]
    assert text.index("```sh") < text.index("\n## ")


def test_readme_python_examples_run(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Every ```python block of the README runs without error, in a scratch folder."""
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    for index, block in enumerate(blocks):
        exec(compile(block, f"README.md python block {index}", "exec"), {})
