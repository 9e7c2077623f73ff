"""The engine's layout: its public names, and the order its packages and modules depend
on each other in.

The engine groups its private modules by family (``_clear/``, ``_truncation/``,
``_storage/``, ``_tokens/``, ``_handlers/``) behind ``reduction_app.engine``; these tests
hold the public surface to an exact list and the families to an import graph without
cycles, so code can move between private modules without users noticing.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import reduction_app.engine as engine

PUBLIC_NAMES = [
    "COMMAND_KINDS",
    "CONFIG_FIELDS",
    "DEFAULT_MAX_LENGTH_FOR_TRUNC",
    "DEFAULT_MAX_TOKENS_FOR_CLEAR",
    "DEFAULT_READ_LIMIT",
    "FORMATS",
    "FORMAT_NAMES",
    "JSON_FIELDS",
    "MAX_CONFIG_INT",
    "MIN_CONFIG_INT",
    "PROCESSED_FLAG",
    "READ_FILE_DESCRIPTION",
    "READ_FILE_PARAMETERS",
    "TOKEN_COUNTER_NAMES",
    "AgenticMessage",
    "ApproxTokenCounter",
    "AssistantGenText",
    "Backend",
    "ChatModelAgentState",
    "ClearResult",
    "ClearToolResultConfig",
    "ConfigError",
    "ConfigField",
    "ConfigKnob",
    "ContentBlock",
    "Digester",
    "FormatError",
    "FunctionToolCall",
    "FunctionToolResult",
    "InMemoryBackend",
    "LocalFileBackend",
    "Media",
    "Message",
    "MessageError",
    "MessagePart",
    "NoBackendError",
    "OffloadError",
    "PairingError",
    "PathEscapeError",
    "RawBlock",
    "ReadPage",
    "Reasoning",
    "ReductionConfig",
    "ReductionError",
    "ReductionEvent",
    "ReductionMiddleware",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerUnavailable",
    "ToolArgument",
    "ToolCall",
    "ToolContext",
    "ToolDetail",
    "ToolInfo",
    "ToolOutputPart",
    "ToolReductionConfig",
    "ToolResult",
    "ToolResultConfig",
    "ToolResultContent",
    "ToolSearchResult",
    "TruncResult",
    "UserInputAudio",
    "UserInputFile",
    "UserInputImage",
    "UserInputText",
    "UserInputVideo",
    "WireFormat",
    "WriteRequest",
    "aanswer_read_file",
    "answer_read_file",
    "atruncate_output",
    "check_config",
    "command_kind",
    "config_field",
    "config_field_defaults",
    "config_fields",
    "config_from_dict",
    "config_knobs",
    "config_switches",
    "config_to_dict",
    "default_clear_handler",
    "default_digest",
    "default_trunc_handler",
    "get_format",
    "get_language",
    "get_token_counter",
    "json_config_fields",
    "messages_from_anthropic",
    "messages_from_openai",
    "messages_from_responses",
    "messages_to_anthropic",
    "messages_to_openai",
    "messages_to_responses",
    "new",
    "new_clear_tool_result",
    "new_tool_result_middleware",
    "numbered_lines",
    "read_file_backends",
    "read_file_tool",
    "read_page",
    "set_language",
    "shell_command",
    "stringify",
    "truncate_output",
    "validate",
]
"""Every name ``reduction_app.engine`` exports, in ruff's RUF022 order. A change here is
a change to the engine's public API."""


def test_engine_all_is_the_public_api() -> None:
    assert engine.__all__ == PUBLIC_NAMES


# The import graph -----------------------------------------------------------------------

ENGINE = "reduction_app.engine"
ENGINE_DIR = Path(engine.__file__).resolve().parent
ROOT = ENGINE_DIR.parent.parent


def _engine_modules() -> dict[str, Path]:
    """Every module of the engine by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(ENGINE_DIR.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in {
        "TYPE_CHECKING",
        "typing.TYPE_CHECKING",
    }


def _imports(source: str, module: str, *, is_package: bool, types_too: bool = False) -> set[str]:
    """The modules ``source`` imports, at any depth (inside functions too), leaving out
    those under ``if TYPE_CHECKING:`` unless ``types_too``. ``from package import name``
    gives ``package.name``; a caller keeps whichever of the two it knows."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) and _is_type_checking(child) and not types_too:
                for stmt in child.orelse:
                    walk(stmt)
                continue
            if isinstance(child, ast.Import):
                found.update(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - child.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in child.names)
            walk(child)

    walk(ast.parse(source))
    return found


def _unit(module: str) -> str:
    """The node of the package graph a module belongs to: its family (``_clear``,
    ``formats``...) for a module inside one, else the module itself."""
    rest = module.removeprefix(f"{ENGINE}.")
    return rest.split(".")[0] if module != ENGINE else "__init__"


def _graph(*, by_unit: bool) -> dict[str, set[str]]:
    """Engine module (or unit) -> the engine modules (or units) it imports at run time."""
    modules = _engine_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        seen = _imports(
            path.read_text(encoding="utf-8"), name, is_package=path.name == "__init__.py"
        )
        targets = {m for m in seen if m in modules and m != name}
        # ``from reduction_app.engine import blocks`` needs ``blocks``, not the package.
        targets -= {m for m in targets if any(t.startswith(f"{m}.") for t in seen & targets)}
        if by_unit:
            graph.setdefault(_unit(name), set()).update(_unit(t) for t in targets)
        else:
            graph[name] = targets
    for node, targets in graph.items():
        targets.discard(node)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` as the nodes along it (first repeated last), or ``[]``."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return []


def test_engine_units_import_without_cycles() -> None:
    """The families (``_clear``, ``formats``...) and the top-level modules, as one graph:
    imports anywhere in a module count, those under ``TYPE_CHECKING`` do not."""
    graph = _graph(by_unit=True)
    assert {"_clear", "_truncation", "_storage", "_tokens", "_handlers", "runtime"} <= set(graph)
    assert _cycle(graph) == []


def test_engine_modules_import_without_cycles() -> None:
    assert _cycle(_graph(by_unit=False)) == []


def test_runtime_imports_no_phase() -> None:
    """The phases build on the runtime, never the other way round."""
    graph = _graph(by_unit=True)
    assert graph["runtime"] & {"_clear", "_truncation", "middleware"} == set()
    assert "runtime" not in graph["_clear"] | graph["_truncation"]  # for types only


def test_cycle_finder_sees_a_cycle_through_a_function_import() -> None:
    """The checks see imports inside functions and skip those under TYPE_CHECKING."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "from reduction_app.engine import blocks\n"
        "if TYPE_CHECKING:\n"
        "    from reduction_app.engine.runtime import Runtime\n"
        "def f():\n"
        "    from .._clear._phase import clear_steps\n"
    )
    seen = _imports(source, f"{ENGINE}._tokens._counters", is_package=False)
    assert f"{ENGINE}.blocks" in seen
    assert f"{ENGINE}._clear._phase" in seen
    assert f"{ENGINE}.runtime" not in seen
    assert f"{ENGINE}.runtime" in _imports(
        source, f"{ENGINE}._tokens._counters", is_package=False, types_too=True
    )
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []


# Nothing above the engine ---------------------------------------------------------------

_ABOVE = ("django", "ninja", "simulator", "config", "reduction_app")


def test_engine_imports_nothing_above_it() -> None:
    """No engine module, not even for types, imports Django, django-ninja, the simulator,
    the Django project or the rest of ``reduction_app``."""
    found = sorted(
        f"{path.relative_to(ROOT)}: {imported}"
        for name, path in _engine_modules().items()
        for imported in _imports(
            path.read_text(encoding="utf-8"),
            name,
            is_package=path.name == "__init__.py",
            types_too=True,
        )
        if imported.split(".")[0] in _ABOVE
        and not (imported == ENGINE or imported.startswith(f"{ENGINE}."))
        and imported != "reduction_app"
    )
    assert found == []


# Paths the docs name --------------------------------------------------------------------

_DOCUMENTED = re.compile(r"reduction_app\.engine(?:\.\w+)+")


def test_engine_paths_named_in_docs_and_examples_resolve() -> None:
    """Every ``reduction_app.engine.<module>[.<name>]`` the docs, the README and the
    examples name can be imported (modules may move; what users read stays valid)."""
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").glob("*.py")]
    named = {m for path in texts for m in _DOCUMENTED.findall(path.read_text(encoding="utf-8"))}
    assert "reduction_app.engine.commands.command_kind" in named
    broken = []
    for dotted in sorted(named):
        module, _, attr = dotted, "", ""
        while module:
            try:
                found = importlib.import_module(module)
            except ModuleNotFoundError:
                module, _, last = module.rpartition(".")
                attr = f"{last}.{attr}" if attr else last
                continue
            for part in filter(None, attr.split(".")):
                found = getattr(found, part, None)
            if found is None:
                broken.append(dotted)
            break
    assert broken == []
