"""Tool output parts as JSON: the shape offload files hold and the REST API takes.

A part is ``{"type": "text", "text": ...}``, ``{"type": "image", "image": {"url": ...,
"mime_type": ...}}`` (likewise ``audio``, ``video``, ``file``) or
``{"type": "tool_search_result", "tool_search_result": ...}``, with an optional
``extra`` object. :func:`parts_from_json` is the inverse of
:func:`reduction_app.engine.parts.part_to_json`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._common import check_depth
from reduction_app.engine.messages import Media
from reduction_app.engine.parts import part_to_json
from reduction_app.engine.tool_io import ToolOutputPart

__all__ = ["parts_from_json", "parts_to_json"]

_MEDIA = ("image", "audio", "video", "file")
_MEDIA_FIELDS = ("url", "base64_data", "mime_type", "detail", "name", "extra")


def _media_from(raw: Any, where: str) -> Media:
    if not isinstance(raw, dict):
        raise FormatError(where, f"expected an object, got {raw!r}")
    for key, value in raw.items():
        if key not in _MEDIA_FIELDS:
            raise FormatError(where, f"unknown field {key!r}")
        expected = dict if key == "extra" else str
        if not isinstance(value, expected):
            raise FormatError(
                f"{where}.{key}",
                f"expected a {'object' if expected is dict else 'string'}, got {value!r}",
            )
        check_depth(value, f"{where}.{key}")
    return Media(**raw)


def parts_from_json(raw: Any, where: str = "parts") -> tuple[ToolOutputPart, ...]:
    """Parse a JSON list of parts; errors name the part and field at fault."""
    if not isinstance(raw, list):
        raise FormatError(where, f"expected a list of parts, got {raw!r}")
    out = []
    for index, item in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise FormatError(at, f"expected an object, got {item!r}")
        kind = item.get("type")
        allowed = {"type", "extra"}
        if kind == "text":
            allowed.add("text")
        elif kind in _MEDIA:
            allowed.add(kind)
        elif kind == "tool_search_result":
            allowed.add("tool_search_result")
        else:
            raise FormatError(f"{at}.type", f"unknown part type {kind!r}")
        for key in item:
            if key not in allowed:
                raise FormatError(at, f"unknown field {key!r} for a {kind} part")
        text = item.get("text", "")
        if not isinstance(text, str):
            raise FormatError(f"{at}.text", f"expected a string, got {text!r}")
        extra = item.get("extra", {})
        if not isinstance(extra, dict):
            raise FormatError(f"{at}.extra", f"expected an object, got {extra!r}")
        check_depth(extra, f"{at}.extra")
        search_result = check_depth(item.get("tool_search_result"), f"{at}.tool_search_result")
        media = None
        if kind in _MEDIA:
            if kind not in item:
                raise FormatError(at, f"a {kind} part needs a {kind!r} object")
            media = _media_from(item[kind], f"{at}.{kind}")
        out.append(
            ToolOutputPart(
                type=kind,
                text=text,
                media=media,
                tool_search_result=search_result,
                extra=extra,
            )
        )
    return tuple(out)


def parts_to_json(parts: Sequence[ToolOutputPart]) -> list[dict[str, Any]]:
    return [part_to_json(p) for p in parts]
