"""Offload content of tool output parts (decision 9), and writing it fast.

One text part is written raw; anything else is
``json.dumps([part_to_json(p) for p in parts], ensure_ascii=False, indent=2)``: objects
with ``type`` first and empty fields left out, in the reference's key order. This module
owns that format; when content is offloaded is decided elsewhere.

Nearly all the work of a large content is escaping its text as JSON strings, and
``indent`` turns ``json``'s C encoder off, leaving a pure-Python one that walks every
part. So :func:`stringify` writes the object of a *plain* text part (one holding
nothing but its text) itself, three constant pieces around the escaped text, and one
``join`` makes the array; every other part still goes through ``json.dumps``, alone,
its lines indented one level more, as the array's encoder writes them. The escaping is
``json``'s own C escaper (``encode_basestring``), or for a long ASCII text without rare
control characters a few ``bytes.replace`` calls on its ASCII bytes, which give the
same characters in some 40 to 60% of the time: CPython finds and copies bytes with
``memchr`` and ``memcpy``, where the escaper looks at every character twice. Either way
the result is byte for byte what ``json.dumps`` writes (``tests/engine/test_offload_json.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring
from typing import Any

from reduction_app.engine.messages import Media
from reduction_app.engine.tool_io import ToolOutputPart

__all__ = ["media_to_json", "part_to_json", "stringify"]

_MEDIA_TYPES = ("image", "audio", "video", "file")


def media_to_json(media: Media) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("url", "base64_data", "mime_type", "detail", "name"):
        value = getattr(media, key)
        if value:
            out[key] = value
    if media.extra:
        out["extra"] = dict(media.extra)
    return out


def part_to_json(part: ToolOutputPart) -> dict[str, Any]:
    """A part as the JSON object offload files hold: ``type`` first, empty fields omitted."""
    out: dict[str, Any] = {"type": part.type}
    if part.text:
        out["text"] = part.text
    if part.media is not None and part.type in _MEDIA_TYPES:
        out[part.type] = media_to_json(part.media)
    if part.tool_search_result is not None:
        out["tool_search_result"] = part.tool_search_result
    if part.extra:
        out["extra"] = dict(part.extra)
    return out


# A text part's object inside the array (indent 2, one level down).
_TEXT_OPEN = '{\n    "type": "text",\n    "text": '
_TEXT_CLOSE = "\n  }"
_EMPTY_TEXT = ('{\n    "type": "text"\n  }', "", "")
_OPEN_QUOTED = _TEXT_OPEN + '"'
_CLOSE_QUOTED = '"' + _TEXT_CLOSE

_RARE_CONTROLS = tuple(c for c in range(0x20) if chr(c) not in "\t\n\r")
"""Code points ``json`` escapes that the replacements below leave alone; a text with any
of them goes to ``encode_basestring``. Ints, so that ``in`` on bytes is one ``memchr``."""
_REPLACE_FROM = 512
"""Characters from which the replacements beat ``encode_basestring``: below it, their
fixed cost (the search for rare control characters, the bytes round trip) is more than
they save."""

_TextObject = tuple[str, str, str]
"""A plain text part's object inside the array, as pieces to join."""


def _plain_text(part: object) -> str | None:
    """The text of a part whose object holds only its type and text; ``None`` for any
    other part. Looks at exact types only, so it runs no code of the caller's."""
    if type(part) is not ToolOutputPart:
        return None
    kind, text, extra = part.type, part.text, part.extra
    if (
        type(kind) is str
        and kind == "text"
        and type(text) is str
        and part.tool_search_result is None
        and type(extra) is dict
        and not extra
    ):
        return text
    return None


def _text_object(text: str) -> _TextObject:
    """The object of a plain text part holding ``text``."""
    if not text:
        return _EMPTY_TEXT
    if len(text) >= _REPLACE_FROM and text.isascii():
        # As bytes: CPython counts and finds a byte with memchr, a str character in a loop.
        data = text.encode("ascii")
        for rare in _RARE_CONTROLS:
            if rare in data:
                break
        else:
            # The backslash first, so that the escapes added after it stay as they are.
            if 0x5C in data:
                data = data.replace(b"\\", b"\\\\")
            if 0x22 in data:
                data = data.replace(b'"', b'\\"')
            if 0x0A in data:
                data = data.replace(b"\n", b"\\n")
            if 0x0D in data:
                data = data.replace(b"\r", b"\\r")
            if 0x09 in data:
                data = data.replace(b"\t", b"\\t")
            return _OPEN_QUOTED, data.decode("ascii"), _CLOSE_QUOTED
    return _TEXT_OPEN, encode_basestring(text), _TEXT_CLOSE


def stringify(parts: Sequence[ToolOutputPart]) -> str:
    """The offload content of ``parts``: raw text for a single text part, else JSON."""
    if not parts:
        return ""
    if len(parts) == 1 and parts[0].type == "text":
        return parts[0].text
    texts = [_plain_text(p) for p in parts]
    # Every other part is made a dict before any is encoded, as the one json.dumps of the
    # whole list did, so a part that cannot be written fails the same way.
    objects = [part_to_json(p) if t is None else None for p, t in zip(parts, texts, strict=True)]
    pieces = ["["]
    for text, obj in zip(texts, objects, strict=True):
        pieces.append(",\n  " if len(pieces) > 1 else "\n  ")
        if text is not None:
            pieces.extend(_text_object(text))
        else:
            pieces.append(json.dumps(obj, ensure_ascii=False, indent=2).replace("\n", "\n  "))
    pieces.append("\n]")
    return "".join(pieces)
