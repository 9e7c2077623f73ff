"""Decoding JSON documents from bytes without one ``str`` of the whole document.

``json.loads`` of bytes first decodes them into one ``str``, 2 or 4 bytes a character as
soon as one character is beyond Latin-1; ``msgspec.json.decode`` parses the bytes in
place, and faster (``benchmarks/README.md``, "Decoding speed"). Each function returns and
raises exactly what the ``json`` call it stands for does. This module also owns the
checks on decoded values (numbers JSON cannot give back, text a database cannot store).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import msgspec

from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._common import text_problem

__all__ = ["json_loads", "json_loads_checked", "json_loads_utf8", "json_problem", "nesting_path"]

# DecodeError for malformed or unsupported input, ValidationError for numbers out of
# range, RecursionError for nesting beyond the interpreter's limit.
_REFUSED = (msgspec.MsgspecError, RecursionError)


def _fast(data: bytes | bytearray) -> tuple[bool, Any]:
    """``(True, value)`` when msgspec decodes ``data``, ``(False, None)`` when it refuses.

    msgspec refuses a few documents ``json`` accepts: lone surrogate escapes
    (``"\\ud800"``, which tool output can hold), ``NaN`` and ``Infinity``, numbers beyond a
    float's range (``json`` reads ``1e400`` as ``inf``), a negative integer with as many
    digits as ``sys.get_int_max_str_digits()`` allows (msgspec counts the sign) or any
    integer over 4,300 digits when that limit is off, a UTF-8 byte order mark, and UTF-16
    or UTF-32 documents. Whatever it refuses, ``json`` decides, with its own memory and its
    own error message. Where msgspec accepts, the values are ``json``'s: duplicate keys
    keep the last value in the first key's place, integers of any length stay ``int``,
    floats round to the same double (``tests/engine/formats/test_jsonio.py``).

    One difference is left, in what is refused, never in a value: ``json.loads`` spends a
    few levels of the recursion limit before it reaches the document (four on CPython
    3.11), msgspec none, so a document up to four levels deeper than ``json.loads`` could
    decode from the same place (about 990 levels) is decoded rather than refused with
    ``RecursionError``.
    """
    try:
        return True, msgspec.json.decode(data)
    except _REFUSED:
        return False, None


def json_loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``, without a ``str`` of the whole document when ``data`` is bytes.

    A ``str`` goes to ``json.loads`` as it is: the whole text exists already.
    """
    if isinstance(data, str):
        return json.loads(data)
    done, value = _fast(data)
    # Outside the except clause, so json's own error carries no msgspec error as context.
    return value if done else json.loads(data)


def json_loads_utf8(data: bytes | bytearray) -> Any:
    """``json.loads(data.decode("utf-8"))``, with its errors (``UnicodeDecodeError``, then
    ``json.JSONDecodeError``), without a ``str`` of the whole document: for files that
    were read as UTF-8 text.

    Stricter than :func:`json_loads`, as that text was: no byte order mark, no UTF-16, no
    surrogates encoded in UTF-8. (A file opened as text also had its newlines made
    ``"\\n"``, which changes no value, only the line an error names when lines end with
    ``"\\r"`` alone.)
    """
    done, value = _fast(data)
    return value if done else json.loads(data.decode("utf-8"))


class OverlongInt:
    """What :func:`json_loads_checked` decodes an integer to that has more digits than
    Python converts (``sys.get_int_max_str_digits()``), so that :func:`json_problem`
    can say which field holds it."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


class _Numbers:
    """The number hooks of ``json.loads``, noting whether any number was one that
    :func:`json_problem` refuses (so that most documents are not walked again)."""

    def __init__(self) -> None:
        self.refused = False
        self.max_digits = sys.get_int_max_str_digits()

    def constant(self, name: str) -> float:
        self.refused = True  # NaN, Infinity, -Infinity
        return float(name)

    def float(self, text: str) -> float:
        value = float(text)
        if not math.isfinite(value):  # 1e999: beyond a double's range
            self.refused = True
        return value

    def int(self, text: str) -> int | OverlongInt:
        digits = len(text) - text.startswith("-")
        if self.max_digits and digits > self.max_digits:
            self.refused = True
            return OverlongInt(digits)
        return int(text)


def json_loads_checked(data: bytes | bytearray) -> Any:
    """:func:`json_loads` of a request body, refusing the numbers no JSON answer can give
    back (``NaN``, ``Infinity``, ``1e999``) and integers longer than Python converts:
    :class:`FormatError` naming the first such field in document order. Other errors are
    :func:`json_loads`'s own."""
    done, value = _fast(data)
    if done:
        # msgspec refuses all of those numbers: nothing to look for.
        return value
    numbers = _Numbers()
    value = json.loads(
        data, parse_constant=numbers.constant, parse_float=numbers.float, parse_int=numbers.int
    )
    if numbers.refused:
        found = json_problem(value, "", text=False)
        if found is not None:
            raise FormatError(*found)
    return value


def json_problem(value: Any, where: str, *, text: bool = True) -> tuple[str, str] | None:
    """Where ``value`` (found at ``where``) holds what cannot be written back as JSON
    (``NaN``, an infinity, an :class:`OverlongInt`) or, with ``text``, what a database
    cannot store in text or JSON (a NUL or a lone surrogate, in a string or a key), and
    why: the first in document order (an object's keys before its values), ``None`` when
    there is none. Walks without recursing, so a value of any depth is looked at."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return path, f"must be a finite number, got {json.dumps(item)}"
        if isinstance(item, OverlongInt):
            limit = sys.get_int_max_str_digits()
            return path, f"must be an integer of at most {limit} digits, got {item.digits} digits"
        if text and isinstance(item, str) and (problem := text_problem(item)) is not None:
            return path, problem
        if isinstance(item, dict):
            for key in item:
                if text and (problem := text_problem(key)) is not None:
                    return _child(path, key), f"key {problem}"
            stack.extend((_child(path, key), child) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{path}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# A JSON string (escapes included) or one of the characters that open, close or separate.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)
# Components of a path a message shows before it elides the rest.
_SHOWN = 8


def nesting_path(data: bytes | bytearray, limit: int) -> str | None:
    """Where the JSON document ``data`` first nests deeper than ``limit``, as a path such as
    ``tools[0].function.parameters.a…`` (``""`` for the document itself), or ``None``.

    It reads the document's structure only, without recursing and without checking it is
    well formed: for a document the decoders refused with ``RecursionError``.
    """
    # Per open container: the key (an object's, once read) or index (a list's) it is at.
    at: list[str | int | None] = []
    expect_key = False
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token in (b"{", b"["):
            if len(at) + 1 > limit:
                return _path_text(at)
            at.append(None if token == b"{" else 0)
            expect_key = token == b"{"
        elif token in (b"}", b"]"):
            if at:
                at.pop()
            expect_key = False
        elif token == b",":
            last = at[-1] if at else None
            if isinstance(last, int):
                at[-1] = last + 1
            else:
                expect_key = True
        elif token == b":":
            expect_key = False
        elif expect_key and at:
            at[-1] = str(json.loads(token))
    return None


def _path_text(path: list[str | int | None]) -> str:
    out = ""
    for part in path[:_SHOWN]:
        # An object's key is None only in a malformed document (a value before any key).
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out + ("…" if len(path) > _SHOWN else "")
