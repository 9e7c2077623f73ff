"""Offload content of tool output parts (decision 9), written fast.

One text part is written raw; anything else is ``json.dumps([part_to_json(p) for p in
parts], ensure_ascii=False, indent=2)``, byte for byte, though most of it is not made by
``json.dumps`` (:func:`stringify` says why). This module owns that format; when content is
offloaded is decided elsewhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring
from typing import Any

import msgspec

from reduction_app.engine.messages import Media
from reduction_app.engine.tool_io import ToolOutputPart

__all__ = ["joined_plain_text", "media_to_json", "part_to_json", "stringify"]

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
_MSGSPEC_FROM_ASCII = 32
_MSGSPEC_FROM = 128
"""Characters from which msgspec escapes a text (ASCII, other) faster than
``encode_basestring``: below them its fixed cost (a call, a ``bytes``, a decode) is more
than it saves, and a non-ASCII text pays a slower decode."""
_encode = msgspec.json.encode

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


def joined_plain_text(parts: Sequence[ToolOutputPart]) -> str | None:
    """The texts of ``parts`` joined, when every part is a plain text part (its type and
    text, nothing else); ``None`` otherwise."""
    texts = []
    for part in parts:
        text = _plain_text(part)
        if text is None:
            return None
        texts.append(text)
    return "".join(texts)


def _text_object(text: str) -> _TextObject:
    """The object of a plain text part holding ``text``.

    msgspec's escaping is, character for character, ``json.dumps(text,
    ensure_ascii=False)``'s (``"`` and ``\\`` and the named escapes, ``\\u00XX`` for the other
    control characters, every other character as it is). Its UTF-8 is decoded again at
    once, while the piece is small and in the cache: joining bytes and decoding once is
    slower, by a second buffer the size of the content. Per character msgspec and its
    decode cost about a quarter of ``encode_basestring``'s time on ASCII text and a half to
    two thirds on most other text; text made mostly of three-byte UTF-8 characters with
    nothing to escape (CJK prose without line breaks or quotes) takes some 1.3 times.
    """
    if not text:
        return _EMPTY_TEXT
    if len(text) >= (_MSGSPEC_FROM_ASCII if text.isascii() else _MSGSPEC_FROM):
        try:
            return _TEXT_OPEN, _encode(text).decode("utf-8"), _TEXT_CLOSE
        except UnicodeEncodeError:
            pass  # A lone surrogate: json writes it as it is.
    return _TEXT_OPEN, encode_basestring(text), _TEXT_CLOSE


def stringify(parts: Sequence[ToolOutputPart]) -> str:
    """The offload content of ``parts``: raw text for a single text part, else JSON.

    Nearly all the work of a large content is escaping its text as JSON strings, and
    ``indent`` turns ``json``'s C encoder off, leaving a pure-Python one that walks every
    part. So the object of a *plain* text part (nothing but its text) is written here,
    three constant pieces around the escaped text, and one ``join`` makes the array; every
    other part still goes through ``json.dumps``, alone, its lines indented one level more,
    as the array's encoder writes them. The result is byte for byte what ``json.dumps``
    writes (``tests/engine/test_offload_json.py``).
    """
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
