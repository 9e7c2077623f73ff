"""Tool definitions in the three wire formats, to and from :class:`ToolInfo`.

This module owns only the ``tools`` request parameter; messages live in the format
modules next to it. Provider-run tools (Responses' built-ins, Anthropic's server tools)
have no schema to count and are kept whole in ``extra`` (docs/engine.md, "Wire formats").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._common import (
    BOOL,
    NULL,
    OBJECT,
    as_object,
    as_sequence,
    as_str,
    check_fields,
    copy_json,
    join_object,
    join_str,
    keep,
    req_name,
    req_object,
    req_str,
    required,
    restore,
    split_object,
    split_str,
)
from reduction_app.engine.messages import ToolInfo

__all__ = [
    "tools_from_anthropic",
    "tools_from_openai",
    "tools_from_responses",
    "tools_to_anthropic",
    "tools_to_openai",
    "tools_to_responses",
]

_OPENAI, _RESPONSES, _ANTHROPIC = "openai.", "responses.", "anthropic."
_FUNCTION_FIELDS = frozenset({"name", "description", "parameters", "strict"})
_ANTHROPIC_FIELDS = frozenset(
    {"name", "description", "input_schema", "type", "strict", "cache_control"}
)
# The Responses API's built-in tool types, carried whole.
_RESPONSES_BUILTIN = frozenset(
    {"file_search", "web_search", "web_search_preview", "web_search_preview_2025_03_11"}
    | {"web_search_2025_08_26", "computer_use_preview", "computer", "mcp", "code_interpreter"}
    | {"image_generation", "local_shell", "shell", "apply_patch", "custom"}
)
# Anthropic server and client-side built-in tools carry a dated type: ``bash_20250124``.
_ANTHROPIC_SERVER_TYPE = re.compile(r"[a-z_]+_\d{8}")


def _entries(tools: Sequence[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    as_sequence(tools, "tools")
    return [(f"tools[{i}]", as_object(raw, f"tools[{i}]")) for i, raw in enumerate(tools)]


def _function_from(obj: Mapping[str, Any], where: str, prefix: str) -> ToolInfo:
    """A function body: name, description, parameters and strict."""
    description, extra = split_str(obj, "description", prefix, where)
    parameters, parameters_extra = split_object(obj, "parameters", prefix, where)
    extra |= parameters_extra | keep(obj, {"strict": BOOL + NULL}, prefix, where)
    name = req_name(obj, "name", where)
    return ToolInfo(name=name, description=description, parameters=parameters, extra=extra)


def _function_to(tool: ToolInfo, prefix: str) -> dict[str, Any]:
    return (
        {"name": tool.name}
        | join_str(tool.description, tool.extra, "description", prefix)
        | join_object(tool.parameters, tool.extra, "parameters", prefix)
        | restore(tool.extra, ("strict",), prefix)
    )


def _function_type(obj: Mapping[str, Any], where: str) -> None:
    kind = req_str(obj, "type", where)
    if kind != "function":
        raise FormatError(f"{where}.type", f"unknown tool type {kind!r}")


def tools_from_openai(tools: Sequence[Mapping[str, Any]]) -> list[ToolInfo]:
    """Parse Chat Completions ``tools``."""
    infos = []
    for where, obj in _entries(tools):
        _function_type(obj, where)
        check_fields(obj, {"type", "function"}, where)
        inner = f"{where}.function"
        function = as_object(required(obj, "function", where), inner)
        check_fields(function, _FUNCTION_FIELDS, inner)
        infos.append(_function_from(function, inner, _OPENAI))
    return infos


def tools_to_openai(tools: Sequence[ToolInfo]) -> list[dict[str, Any]]:
    """Dump tool definitions as Chat Completions ``tools``."""
    return [{"type": "function", "function": _function_to(tool, _OPENAI)} for tool in tools]


def tools_from_responses(tools: Sequence[Mapping[str, Any]]) -> list[ToolInfo]:
    """Parse Responses ``tools``: flat function tools, and built-in tools kept whole."""
    infos = []
    for where, obj in _entries(tools):
        kind = req_str(obj, "type", where)
        if kind in _RESPONSES_BUILTIN:
            name = req_name(obj, "name", where) if isinstance(obj.get("name"), str) else kind
            infos.append(ToolInfo(name=name, extra={_RESPONSES + "tool": copy_json(obj, where)}))
            continue
        _function_type(obj, where)
        check_fields(obj, _FUNCTION_FIELDS | {"type"}, where)
        infos.append(_function_from(obj, where, _RESPONSES))
    return infos


def tools_to_responses(tools: Sequence[ToolInfo]) -> list[dict[str, Any]]:
    """Dump tool definitions as Responses ``tools``."""
    return [
        copy_json(tool.extra[_RESPONSES + "tool"])
        if _RESPONSES + "tool" in tool.extra
        else {"type": "function"} | _function_to(tool, _RESPONSES)
        for tool in tools
    ]


def tools_from_anthropic(tools: Sequence[Mapping[str, Any]]) -> list[ToolInfo]:
    """Parse Anthropic ``tools``: custom tools, and server tools kept whole."""
    infos = []
    for where, obj in _entries(tools):
        kind = as_str(obj["type"], f"{where}.type") if "type" in obj else None
        if kind is not None and _ANTHROPIC_SERVER_TYPE.fullmatch(kind):
            name = req_name(obj, "name", where)
            infos.append(ToolInfo(name=name, extra={_ANTHROPIC + "tool": copy_json(obj, where)}))
            continue
        if kind not in (None, "custom"):
            raise FormatError(f"{where}.type", f"unknown tool type {kind!r}")
        check_fields(obj, _ANTHROPIC_FIELDS, where)
        description, extra = split_str(obj, "description", _ANTHROPIC, where)
        schema = req_object(obj, "input_schema", where)
        extra |= keep(
            obj, {"type": (str,), "strict": BOOL, "cache_control": OBJECT}, _ANTHROPIC, where
        )
        name = req_name(obj, "name", where)
        infos.append(
            ToolInfo(
                name=name,
                description=description,
                parameters=copy_json(schema, f"{where}.input_schema"),
                extra=extra,
            )
        )
    return infos


def tools_to_anthropic(tools: Sequence[ToolInfo]) -> list[dict[str, Any]]:
    """Dump tool definitions as Anthropic ``tools``.

    A tool with no schema gets an empty object schema: Anthropic requires ``input_schema``.
    """
    out = []
    for tool in tools:
        if _ANTHROPIC + "tool" in tool.extra:
            out.append(copy_json(tool.extra[_ANTHROPIC + "tool"]))
            continue
        schema = (
            tool.parameters if tool.parameters is not None else {"type": "object", "properties": {}}
        )
        out.append(
            {"name": tool.name}
            | join_str(tool.description, tool.extra, "description", _ANTHROPIC)
            | {"input_schema": copy_json(schema)}
            | restore(tool.extra, ("type", "strict", "cache_control"), _ANTHROPIC)
        )
    return out
