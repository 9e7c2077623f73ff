"""The engine's public surface: outside code imports only the public engine modules.

The public modules are ``reduction_app.engine`` (reducing conversations),
``reduction_app.engine.inspect`` (read-only helpers) and ``reduction_app.engine.formats``
(the wire formats). Every other engine module is private: the engine may move code
between them freely. Tests are exempt (they test units).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = "reduction_app.engine"
PUBLIC = (ENGINE, f"{ENGINE}.formats", f"{ENGINE}.inspect")
_SKIPPED_DIRS = {"tests", "node_modules", "__pycache__", "screenshots"}


def _outside_files() -> Iterator[Path]:
    """Every Python file of the project outside the engine and the tests."""
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts
        if any(p in _SKIPPED_DIRS or p.startswith(".") for p in parts[:-1]):
            continue
        if parts[:2] == ("reduction_app", "engine"):
            continue
        yield path


def _package(path: Path) -> str:
    """The package a file's relative imports start from."""
    parts = path.relative_to(ROOT).parts
    return ".".join(parts[:-1])


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module an ``import from`` names, with relative imports resolved."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def _public_names(module: str) -> set[str]:
    names = set(importlib.import_module(module).__all__)
    if module == ENGINE:
        names |= {"formats", "inspect"}
    return names


def _private_uses(source: str, package: str) -> list[str]:
    """``line: what`` for every use of a private engine module or name in ``source``."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []
    engine_aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [
                (node.lineno, f"import {alias.name}")
                for alias in node.names
                if alias.name.startswith(f"{ENGINE}.") and alias.name not in PUBLIC
            ]
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if module == "reduction_app":
                engine_aliases |= {a.asname or a.name for a in node.names if a.name == "engine"}
            if not (module == ENGINE or module.startswith(f"{ENGINE}.")):
                continue
            if module not in PUBLIC:
                found.append((node.lineno, f"from {module} import ..."))
                continue
            public = _public_names(module)
            found += [
                (node.lineno, f"from {module} import {alias.name}")
                for alias in node.names
                if alias.name not in public
            ]
    found += [
        (node.lineno, f"{node.value.id}.{node.attr}")
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in engine_aliases
        and node.attr not in _public_names(ENGINE)
    ]
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_outside_code_imports_only_public_engine_modules() -> None:
    """Names the file and line of every import of a private engine module or name."""
    files = list(_outside_files())
    assert any(p.relative_to(ROOT).parts[0] == "simulator" for p in files)
    found = [
        f"{path.relative_to(ROOT)}:{use}"
        for path in files
        for use in _private_uses(path.read_text(encoding="utf-8"), _package(path))
    ]
    assert found == [], "private engine modules used outside the engine:\n" + "\n".join(found)


def test_private_uses_are_found() -> None:
    """The check itself sees the forms a private import can take."""
    source = (
        "from reduction_app import engine\n"
        "from reduction_app.engine import Message, access\n"
        "from reduction_app.engine.access import classify\n"
        "from reduction_app.engine.inspect import classify as c\n"
        "import reduction_app.engine.tokens\n"
        "def f():\n"
        "    from reduction_app.engine.formats.tool_parts import parts_from_json\n"
        "    return engine.notices, engine.new\n"
        "from .engine.clear import ChatModelAgentState\n"
        "from .engine import formats\n"
    )
    assert list(_private_uses(source, "reduction_app")) == [
        "2: from reduction_app.engine import access",
        "3: from reduction_app.engine.access import ...",
        "5: import reduction_app.engine.tokens",
        "7: from reduction_app.engine.formats.tool_parts import ...",
        "8: engine.notices",
        "9: from reduction_app.engine.clear import ...",
    ]


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's RUF022 order: SCREAMING_CASE, then CamelCase, then the rest."""
    if name.isupper():
        return 0, name
    return (1 if name[0].isupper() else 2), name


@pytest.mark.parametrize("name", PUBLIC)
def test_public_module_all_is_sorted_and_complete(name: str) -> None:
    module: ModuleType = importlib.import_module(name)
    names = list(module.__all__)
    assert names == sorted(names, key=_isort_key)
    assert len(set(names)) == len(names)
    assert [n for n in names if not hasattr(module, n)] == []
