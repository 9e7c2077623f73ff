"""Tool schemas as OpenAI's chat models read them: a TypeScript-like namespace.

OpenAI renders function tools into the system prompt as type declarations rather than
JSON, which takes far fewer tokens. The rendering is the one known from OpenAI's
open-weight models and the community's counters (not published for the hosted models);
:mod:`simulator.calibration` checks its counts against the provider's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from reduction_app.engine import ToolInfo

__all__ = ["typescript_tools"]


def typescript_tools(tools: Sequence[ToolInfo]) -> tuple[str, int]:
    """The namespace declaring ``tools``, as the system prompt carries it, and the number
    of parameters declared in it (nested ones included)."""
    lines = ["# Tools", "", "## functions", "", "namespace functions {", ""]
    counted = _Count()
    for tool in tools:
        if tool.description:
            lines += [f"// {line}" for line in tool.description.splitlines()]
        params = tool.parameters or {}
        properties = params.get("properties") if isinstance(params, Mapping) else None
        if properties:
            defs = params.get("$defs") or params.get("definitions") or {}
            lines.append(f"type {tool.name} = (_: {{")
            lines += _properties(properties, params.get("required") or (), _Refs(defs, counted))
            lines.append("}) => any;")
        else:
            lines.append(f"type {tool.name} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines), counted.n


class _Count:
    def __init__(self) -> None:
        self.n = 0


class _Refs:
    """The ``$defs`` a schema's refs point into, the refs being expanded (a recursive
    schema is declared ``any`` where it comes back), and the parameter count."""

    def __init__(
        self, defs: Mapping[str, Any], count: _Count, open_refs: frozenset[str] = frozenset()
    ) -> None:
        self.defs = defs if isinstance(defs, Mapping) else {}
        self.count = count
        self.open = open_refs


def _properties(properties: Mapping[str, Any], required: Sequence[str], refs: _Refs) -> list[str]:
    out = []
    # Sorted, not in the order given: PostgreSQL's jsonb reorders object keys, and a
    # stored conversation must count the same on every database (a token or so a tool).
    for name, raw in sorted(properties.items()):
        refs.count.n += 1
        schema, inner = _resolve(raw, refs)
        description = schema.get("description")
        if isinstance(description, str) and description:
            out += [f"// {line}" for line in description.splitlines()]
        optional = "" if name in required else "?"
        out.append(f"{name}{optional}: {_type(schema, inner)},")
    return out


def _resolve(schema: Any, refs: _Refs) -> tuple[Mapping[str, Any], _Refs]:
    """``schema``, or what its local ``$ref`` (``#/$defs/Name``) points at, with the refs
    open inside it; a ref already open (a recursive schema) resolves to nothing."""
    if not isinstance(schema, Mapping):
        return {}, refs
    ref = schema.get("$ref")
    if not isinstance(ref, str):
        return schema, refs
    name = ref.rsplit("/", 1)[-1]
    target = refs.defs.get(name)
    if not ref.startswith("#/") or name in refs.open or not isinstance(target, Mapping):
        return {}, refs
    return target, _Refs(refs.defs, refs.count, refs.open | {name})


def _type(raw: Mapping[str, Any], refs: _Refs) -> str:
    schema, refs = _resolve(raw, refs)
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_type(s, refs) for s in schema[key] if isinstance(s, Mapping))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}, refs) for k in kind)
    if kind == "array":
        items = schema.get("items")
        inner = _type(items, refs) if isinstance(items, Mapping) else "any"
        union = " | " in inner and not inner.startswith("{")
        return f"({inner})[]" if union else f"{inner}[]"
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return "object"
        body = _properties(properties, schema.get("required") or (), refs)
        return "{\n" + "\n".join(body) + "\n}"
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    return "any"
