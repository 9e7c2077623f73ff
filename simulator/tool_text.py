"""Tool schemas as OpenAI's chat models read them: a TypeScript-like namespace.

OpenAI does not send the JSON schemas of function tools to the model as JSON; it
renders them into the system prompt as type declarations, which take far fewer tokens::

    # Tools

    ## functions

    namespace functions {

    // Get a user.
    type get_user = (_: {
    // The user id.
    user_id: string,
    limit?: number,
    }) => any;

    } // namespace functions

This is the rendering known from OpenAI's open-weight models and the community's token
counters (it is not published for the hosted models); :mod:`simulator.calibration`
checks the resulting counts against the provider's own figures.
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
    for tool in tools:
        if tool.description:
            lines += [f"// {line}" for line in tool.description.splitlines()]
        params = tool.parameters or {}
        properties = params.get("properties") if isinstance(params, Mapping) else None
        if properties:
            defs = params.get("$defs") or params.get("definitions") or {}
            lines.append(f"type {tool.name} = (_: {{")
            lines += _properties(properties, params.get("required") or (), defs)
            lines.append("}) => any;")
        else:
            lines.append(f"type {tool.name} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    text = "\n".join(lines)
    # Every declared parameter, and only those, ends its line with a comma.
    return text, text.count(",\n")


def _properties(
    properties: Mapping[str, Any], required: Sequence[str], defs: Mapping[str, Any]
) -> list[str]:
    out = []
    for name, schema in properties.items():
        schema = _resolve(schema, defs)
        description = schema.get("description")
        if isinstance(description, str) and description:
            out += [f"// {line}" for line in description.splitlines()]
        optional = "" if name in required else "?"
        out.append(f"{name}{optional}: {_type(schema, defs)},")
    return out


def _resolve(schema: Any, defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema``, or what its local ``$ref`` (``#/$defs/Name``) points at."""
    if not isinstance(schema, Mapping):
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target = defs.get(ref.rsplit("/", 1)[-1])
        return target if isinstance(target, Mapping) else {}
    return schema


def _type(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    schema = _resolve(schema, defs)
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(v) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_type(s, defs) for s in schema[key] if isinstance(s, Mapping))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_type({**schema, "type": k}, defs) for k in kind)
    if kind == "array":
        items = schema.get("items")
        inner = _type(items, defs) if isinstance(items, Mapping) else "any"
        union = " | " in inner and not inner.startswith("{")
        return f"({inner})[]" if union else f"{inner}[]"
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping) or not properties:
            return "object"
        body = _properties(properties, schema.get("required") or (), defs)
        return "{\n" + "\n".join(body) + "\n}"
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    return "any"
