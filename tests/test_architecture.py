"""The engine's public surface: outside code imports only the public engine modules.

The public modules are ``reduction_app.engine`` (reducing conversations),
``reduction_app.engine.inspect`` (read-only helpers), ``reduction_app.engine.formats``
(the wire formats) and ``reduction_app.engine.telemetry`` (events in traces). Every other
engine module is private: the engine may move code between them freely. Tests are
exempt (they test units).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Collection, Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
ENGINE = "reduction_app.engine"
PUBLIC = (ENGINE, f"{ENGINE}.formats", f"{ENGINE}.inspect", f"{ENGINE}.telemetry")
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


# The import graph -----------------------------------------------------------------------
#
# Every import of reduction_app and simulator, read from the source (imports inside
# functions too; those under ``if TYPE_CHECKING:`` are for type checkers only and run
# never). Each package of reduction_app and simulator (conversations, simulations,
# engine, simulator.sources, ...) and each of their top-level modules (models, schemas,
# simulator.pricing, ...) is a node. No two nodes may import each other, however
# indirectly: that is what keeps a lower package from calling back into the ones that use
# it. Within a package, no two modules may either.

GRAPH_ROOTS = ("reduction_app", "simulator")
KNOWN_MODULE_CYCLES: frozenset[frozenset[str]] = frozenset()
"""Cycles among the modules of one package that are known (none): a new one fails, and so
does one listed here that is gone (drop it from the list)."""

Edges = dict[str, dict[str, list[str]]]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph_modules() -> dict[str, Path]:
    return {
        _module_name(path): path
        for root in GRAPH_ROOTS
        for path in sorted((ROOT / root).rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(source: str, module: str, *, is_package: bool) -> Iterator[tuple[int, str]]:
    """``(line, module)`` for every import in ``source`` that runs: at the top, inside
    functions and classes, not under ``if TYPE_CHECKING:``. ``from a import b`` names
    ``a.b`` (when ``b`` is a module, the caller resolves it) and ``a``."""
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST) -> Iterator[tuple[int, str]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for other in child.orelse:
                    yield from visit_one(other)
                continue
            yield from visit_one(child)

    def visit_one(node: ast.AST) -> Iterator[tuple[int, str]]:
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package) if node.level else node.module or ""
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"
        yield from visit(node)

    yield from visit(ast.parse(source))


def _resolve(name: str, modules: Collection[str]) -> str | None:
    """The module of ours ``name`` is, or is in (``a.b.func`` is in ``a.b``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _node(module: str) -> str:
    """The package a module counts in: one of the packages or top-level modules of
    reduction_app or simulator."""
    return ".".join(module.split(".")[:2])


def _module_edges() -> Edges:
    """Module -> the modules of ours it imports -> where (``path:line``)."""
    modules = _graph_modules()
    edges: Edges = {}
    for module, path in modules.items():
        found = _imported(
            path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py"
        )
        for line, name in found:
            target = _resolve(name, modules)
            if target is None or target == module:
                continue
            where = f"{path.relative_to(ROOT)}:{line}"
            edges.setdefault(module, {}).setdefault(target, []).append(where)
    return edges


def _package_edges(edges: Edges) -> Edges:
    out: Edges = {}
    for source, targets in edges.items():
        for target, where in targets.items():
            a, b = _node(source), _node(target)
            if a != b:
                out.setdefault(a, {}).setdefault(b, []).extend(where)
    return out


def _cycles(edges: Edges) -> list[list[str]]:
    """One shortest cycle through each group of nodes that import each other (each
    strongly connected component of more than one node), as the nodes in order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, {})):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return [_shortest_cycle(edges, group) for group in groups]


def _shortest_cycle(edges: Edges, group: set[str]) -> list[str]:
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for target in sorted(edges.get(node, {})):
            if target == start:
                return paths[node]
            if target in group and target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"no cycle through {start}")  # a component always has one


def _described(cycle: list[str], edges: Edges) -> str:
    steps = zip(cycle, [*cycle[1:], cycle[0]], strict=True)
    return "\n".join(
        f"  {a} -> {b}  ({', '.join(list(dict.fromkeys(edges[a][b]))[:3])})" for a, b in steps
    )


def test_packages_import_each_other_without_cycles() -> None:
    """Prints each cycle, one import that makes each step of it."""
    edges = _package_edges(_module_edges())
    seen = {"reduction_app.models", "reduction_app.jobs", "simulator.importers"}
    assert seen | {"simulator.sources"} <= set(edges)
    cycles = _cycles(edges)
    assert cycles == [], "packages that import each other:\n" + "\n\n".join(
        _described(cycle, edges) for cycle in cycles
    )


def test_modules_import_each_other_without_cycles_but_the_known() -> None:
    edges = _module_edges()
    cycles = _cycles(edges)
    found = {frozenset(cycle) for cycle in cycles}
    new = [cycle for cycle in cycles if frozenset(cycle) not in KNOWN_MODULE_CYCLES]
    assert new == [], "modules that import each other:\n" + "\n\n".join(
        _described(cycle, edges) for cycle in new
    )
    assert found >= KNOWN_MODULE_CYCLES, "a known cycle is gone: drop it from the list"


def test_import_graph_sees_every_import_that_runs() -> None:
    """Imports inside functions count, relative ones are resolved, and those under
    ``if TYPE_CHECKING:`` do not count (those of its ``else`` do)."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "import reduction_app.models\n"
        "from . import selectors\n"
        "from ..jobs.watch import watch_enqueue\n"
        "if TYPE_CHECKING:\n"
        "    from reduction_app.simulations import services\n"
        "else:\n"
        "    from reduction_app.records import storage\n"
        "def f():\n"
        "    from reduction_app.simulations.sweeps import run_sweep_part\n"
        "class C:\n"
        "    def g(self):\n"
        "        import simulator.pricing\n"
    )
    found = list(_imported(source, "reduction_app.conversations.imports", is_package=False))
    assert found == [
        (1, "typing.TYPE_CHECKING"),
        (2, "reduction_app.models"),
        (3, "reduction_app.conversations.selectors"),
        (4, "reduction_app.jobs.watch.watch_enqueue"),
        (8, "reduction_app.records.storage"),
        (10, "reduction_app.simulations.sweeps.run_sweep_part"),
        (13, "simulator.pricing"),
    ]
    assert _resolve("reduction_app.jobs.watch.watch_enqueue", _graph_modules()) == (
        "reduction_app.jobs.watch"
    )
    assert [
        _node(m)
        for m in (
            "reduction_app.simulations.sweeps",
            "reduction_app.models",
            "reduction_app",
            "simulator.pricing",
            "simulator.sources.claude_code",
            "simulator.sources.otel._spans",
            "simulator",
        )
    ] == [
        "reduction_app.simulations",
        "reduction_app.models",
        "reduction_app",
        "simulator.pricing",
        "simulator.sources",
        "simulator.sources",
        "simulator",
    ]


def test_cycles_are_found_and_printed() -> None:
    edges: Edges = {
        "a": {"b": ["a.py:1"]},
        "b": {"c": ["b.py:2"], "d": ["b.py:3"]},
        "c": {"a": ["c.py:4"]},
        "d": {},
        "e": {"f": ["e.py:5"]},
        "f": {"e": ["f.py:6"]},
    }
    cycles = _cycles(edges)
    assert sorted(cycles) == [["a", "b", "c"], ["e", "f"]]
    assert _described(["a", "b", "c"], edges) == (
        "  a -> b  (a.py:1)\n  b -> c  (b.py:2)\n  c -> a  (c.py:4)"
    )


def test_a_subpackage_of_simulator_is_a_node_of_its_own() -> None:
    """A reader of simulator.sources importing back a module that imports the readers is
    a cycle between packages, though both are simulator's."""
    modules: Edges = {
        "simulator.importers": {"simulator.sources.tau2": ["simulator/importers.py:1"]},
        "simulator.sources.tau2": {"simulator.importers": ["simulator/sources/tau2.py:2"]},
        "simulator.sources.otel": {"simulator.sources": ["simulator/sources/otel/x.py:3"]},
    }
    edges = _package_edges(modules)
    assert edges == {
        "simulator.importers": {"simulator.sources": ["simulator/importers.py:1"]},
        "simulator.sources": {"simulator.importers": ["simulator/sources/tau2.py:2"]},
    }
    assert _cycles(edges) == [["simulator.importers", "simulator.sources"]]
