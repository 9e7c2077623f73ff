"""The Django layer's shape: nouns keep to their own private names, and selectors only read.

The layer is grouped by noun (``configs``, ``conversations``, ``records``, ``reductions``,
``simulations``, ``workspaces``); what one module shares with another is public. Reads
live in ``selectors`` modules and writes in ``services`` modules, so a selector never
calls a method that writes.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "reduction_app"
OWN_PACKAGES = ("reduction_app", "simulator")
WRITE_METHODS = frozenset(
    {
        "save",
        "create",
        "update",
        "delete",
        "bulk_create",
        "bulk_update",
        "get_or_create",
        "update_or_create",
    }
)


def _app_files() -> list[Path]:
    return sorted(
        path
        for path in APP.rglob("*.py")
        if "migrations" not in path.parts and "engine" not in path.relative_to(APP).parts
    )


def private_imports(source: str) -> list[str]:
    """``line: module.name`` for each private name imported from another of our modules."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(OWN_PACKAGES):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{node.lineno}: {node.module}.{alias.name}")
    return found


def write_calls(source: str) -> list[str]:
    """``line: method`` for each call of a writing method (``.save()``, ``.update()``, ...)."""
    return [
        f"{node.lineno}: {node.func.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in WRITE_METHODS
    ]


def test_layout_no_module_imports_another_modules_private_names() -> None:
    problems = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in _app_files()
        for hit in private_imports(path.read_text())
    ]
    assert problems == []


def test_layout_private_imports_are_found() -> None:
    source = "from reduction_app.records.api import _file_or_404, list_files\n"
    assert private_imports(source) == ["1: reduction_app.records.api._file_or_404"]


def test_layout_selectors_only_read() -> None:
    selectors = sorted(APP.rglob("selectors.py"))
    assert [p.parent.name for p in selectors] == [
        "configs",
        "conversations",
        "prices",
        "records",
        "retention",
        "simulations",
        "workspaces",
    ]
    problems = [
        f"{path.relative_to(ROOT)}:{hit}"
        for path in selectors
        for hit in write_calls(path.read_text())
    ]
    assert problems == []


def test_layout_write_calls_are_found() -> None:
    source = "ApiKey.objects.filter(pk=1).update(last_used_at=now)\nkey.save()\n"
    assert write_calls(source) == ["1: update", "2: save"]


def test_layout_every_noun_has_its_pieces() -> None:
    """Each noun package holds its services, its REST router and its schemas."""
    for noun in ("configs", "conversations", "records", "reductions", "simulations"):
        package = APP / noun
        for piece in ("services.py", "api.py", "schemas.py"):
            assert (package / piece).is_file(), f"{noun}/{piece}"
