"""The README stays true to the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from reduction_app.engine import config_field_defaults, config_fields

README = Path(__file__).resolve().parent.parent / "README.md"
_ROW = re.compile(r"^\| `(?P<name>\w+)` \| `(?P<default>[^`]*)` \| (?P<help>.*) \|$")


def config_table(text: str) -> list[tuple[str, object, str]]:
    """``(field, default, help)`` per row of the README's table of config fields; the help
    as plain text (code marks and escaped pipes undone)."""
    lines = text.splitlines()
    start = lines.index("| field | default | what it does |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        match = _ROW.match(line)
        assert match, f"README config row does not parse: {line}"
        help_text = match["help"].replace("`", "").replace("\\|", "|")
        rows.append((match["name"], ast.literal_eval(match["default"]), help_text))
    return rows


def config_table_expected() -> list[tuple[str, object, str]]:
    """The rows the spec of the config fields asks for."""
    return [(spec.name, spec.default, spec.help) for spec in config_fields()]


def test_readme_config_table_matches_the_spec() -> None:
    """Every config field is in the README table, in order, with its default and the
    spec's help word for word."""
    assert config_table(README.read_text(encoding="utf-8")) == config_table_expected()


def test_readme_config_table_defaults_are_the_dataclass_defaults() -> None:
    assert [row[:2] for row in config_table(README.read_text(encoding="utf-8"))] == (
        config_field_defaults()
    )


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


_ENV_READ = re.compile(
    r"""(?:(?:os\.)?environ(?:\.get)?[\[(]|_env_(?:bool|int)\()\s*"([A-Z][A-Z0-9_]*)\""""
)
_AWS_NAME = re.compile(r'"(AWS_[A-Z0-9_]+)"')
_ENV_SOURCES = ("settings.py", "gunicorn_conf.py")
_ENV_ROW = re.compile(r"^\| `([A-Z][A-Z0-9_]*)` \|", re.M)


def environment_variables_read() -> set[str]:
    """Every variable the settings and gunicorn's config read from the environment."""
    config = README.parent / "config"
    texts = [(config / source).read_text(encoding="utf-8") for source in _ENV_SOURCES]
    # The S3 options are read in a loop over (option, "AWS_...") pairs.
    return {name for text in texts for name in _ENV_READ.findall(text) + _AWS_NAME.findall(text)}


def test_readme_deploying_lists_every_environment_variable() -> None:
    """The table of the "Deploying" section names each variable the code reads, and
    only those (besides gunicorn's own GUNICORN_CMD_ARGS)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Deploying\n", 1)[1].split("\n## ", 1)[0]
    listed = set(_ENV_ROW.findall(section))
    assert listed == environment_variables_read() | {"GUNICORN_CMD_ARGS"}
