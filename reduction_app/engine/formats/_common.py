"""Checked reads shared by the wire-format parsers, and the rules for fields kept in ``extra``.

This module owns no wire format (each format module lists the fields it allows). It owns
how a parse error reads (``FormatError(where, problem)``, quoting the value with ``repr``)
and how a wire field without a slot of its own survives a round trip: copied verbatim
into ``extra`` (:func:`keep` / :func:`restore`), or, for an optional string with a slot,
kept there only when empty or ``null`` (:func:`split_str` / :func:`join_str`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reduction_app.engine.errors import FormatError

__all__ = [
    "AUDIO_FORMAT",
    "AUDIO_MIME",
    "BOOL",
    "LIST",
    "MAX_JSON_DEPTH",
    "MAX_NAME_CHARS",
    "NULL",
    "OBJECT",
    "STR",
    "as_list",
    "as_object",
    "as_sequence",
    "as_str",
    "check_depth",
    "check_fields",
    "check_type",
    "copy_json",
    "join_nullable",
    "join_object",
    "join_str",
    "keep",
    "req_name",
    "req_object",
    "req_str",
    "required",
    "restore",
    "split_nullable",
    "split_object",
    "split_str",
    "text_problem",
    "too_deep",
]

# Allowed JSON types of a kept field, by name; each is a tuple for isinstance().
OBJECT: tuple[type, ...] = (dict,)
LIST: tuple[type, ...] = (list,)
STR: tuple[type, ...] = (str,)
BOOL: tuple[type, ...] = (bool,)
NULL: tuple[type, ...] = (type(None),)

# OpenAI's ``input_audio`` formats (chat and Responses alike) and their MIME types.
AUDIO_MIME = {"wav": "audio/wav", "mp3": "audio/mpeg"}
AUDIO_FORMAT = {mime: fmt for fmt, mime in AUDIO_MIME.items()}

_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer"}
_NAMES[type(None)] = "null"


# Objects and lists inside one another that a kept value may hold. A JSON Schema or a
# tool's input rarely nests past 20; the interpreter's recursion limit (1,000 frames,
# a few hundred of them spent by a web request) bounds what can be written back.
MAX_JSON_DEPTH = 128


def too_deep(where: str) -> FormatError:
    """The error for a value at ``where`` nested deeper than :data:`MAX_JSON_DEPTH`."""
    return FormatError(where, f"nested deeper than the limit of {MAX_JSON_DEPTH} levels")


def copy_json(value: Any, where: str = "") -> Any:
    """A copy of a JSON value that shares no dict or list with the original.

    JSON kept verbatim is copied on the way in and on the way out, so neither the caller's
    payload nor the dumped dicts share mutable state with the frozen values. The copy walks
    without recursing: everything past the parse (``json.dumps``, the database's JSON
    columns, the response encoder) recurses once a level, hence the depth limit.

    A FormatError at ``where`` when it nests deeper than :data:`MAX_JSON_DEPTH`.
    """
    if not isinstance(value, Mapping | list | tuple):
        return value
    root: Any = {} if isinstance(value, Mapping) else [None] * len(value)
    # (original, its copy, its depth); children are filled in place, so keys keep their order.
    stack: list[tuple[Any, Any, int]] = [(value, root, 1)]
    while stack:
        source, target, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise too_deep(where)
        items = source.items() if isinstance(source, Mapping) else enumerate(source)
        for key, item in items:
            if isinstance(item, Mapping):
                target[key] = {}
            elif isinstance(item, list | tuple):
                target[key] = [None] * len(item)
            else:
                target[key] = item
                continue
            stack.append((item, target[key], depth + 1))
    return root


def check_depth(value: Any, where: str) -> Any:
    """``value`` itself, or a FormatError when it nests deeper than :data:`MAX_JSON_DEPTH`."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth + 1 > MAX_JSON_DEPTH:
            raise too_deep(where)
        stack.extend((child, depth + 1) for child in children)
    return value


def _expected(types: tuple[type, ...]) -> str:
    names = [_NAMES[t] for t in types]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def check_type(value: Any, types: tuple[type, ...], where: str) -> Any:
    """``value`` itself, or a FormatError when it is not of one of ``types``."""
    # bool is an int in Python, but JSON keeps the two apart.
    if isinstance(value, bool) and bool not in types:
        raise FormatError(where, f"expected {_expected(types)}, got {value!r}")
    if not isinstance(value, types):
        raise FormatError(where, f"expected {_expected(types)}, got {value!r}")
    return value


def as_object(value: Any, where: str) -> dict[str, Any]:
    result: dict[str, Any] = check_type(value, OBJECT, where)
    return result


def as_list(value: Any, where: str) -> list[Any]:
    result: list[Any] = check_type(value, LIST, where)
    return result


def as_sequence(value: Any, where: str) -> Sequence[Any]:
    """A top-level list (a tuple is accepted too, for callers that build one in Python)."""
    if not isinstance(value, list | tuple):
        raise FormatError(where, f"expected a list, got {value!r}")
    return value


def as_str(value: Any, where: str) -> str:
    result: str = check_type(value, STR, where)
    return result


def check_fields(obj: Mapping[str, Any], allowed: Iterable[str], where: str) -> None:
    """Refuse any key of ``obj`` that is not in ``allowed``."""
    known = set(allowed)
    for key in obj:
        if key not in known:
            raise FormatError(where, f"unknown field {key!r}")


def required(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise FormatError(where, f"missing field {key!r}")
    return obj[key]


def req_str(obj: Mapping[str, Any], key: str, where: str) -> str:
    """A required string field."""
    return as_str(required(obj, key, where), f"{where}.{key}")


# Characters of an id or name: providers' ids are about 30 ASCII characters, tool names
# at most 64 or 128. Every store of one (a file name, a database column) can hold that,
# without NUL characters or lone surrogates.
MAX_NAME_CHARS = 200
# Text PostgreSQL (and UTF-8) cannot hold: NUL, and surrogates, which a decoded ``str``
# holds only alone (JSON's escaped pairs decode to one character beyond the BMP).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text (a NUL, a lone surrogate), or ``None``."""
    match = _UNSTORABLE.search(value)
    if match is None:
        return None
    if match.group() == "\x00":
        return "must not contain NUL characters"
    return f"must not contain a lone surrogate ({match.group()!r} at {match.start()})"


def req_name(obj: Mapping[str, Any], key: str, where: str) -> str:
    """A required id or name: a string of at most :data:`MAX_NAME_CHARS` storable characters."""
    value = req_str(obj, key, where)
    if len(value) > MAX_NAME_CHARS:
        problem: str | None = (
            f"longer than the limit of {MAX_NAME_CHARS} characters ({len(value)} characters)"
        )
    else:
        problem = text_problem(value)
    if problem is not None:
        raise FormatError(f"{where}.{key}", problem)
    return value


def req_object(obj: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    """A required object field."""
    return as_object(required(obj, key, where), f"{where}.{key}")


def keep(
    obj: Mapping[str, Any], kept: Mapping[str, tuple[type, ...]], prefix: str, where: str
) -> dict[str, Any]:
    """The fields of ``obj`` named in ``kept`` (field → allowed types), keyed ``prefix + field``."""
    return {
        prefix + key: copy_json(check_type(obj[key], types, f"{where}.{key}"), f"{where}.{key}")
        for key, types in kept.items()
        if key in obj
    }


def restore(extra: Mapping[str, Any], fields: Iterable[str], prefix: str) -> dict[str, Any]:
    """The wire fields that :func:`keep` stored in ``extra``, under their own names again."""
    return {key: copy_json(extra[prefix + key]) for key in fields if prefix + key in extra}


def split_str(
    obj: Mapping[str, Any], key: str, prefix: str, where: str
) -> tuple[str, dict[str, Any]]:
    """An optional string field: its slot value, and what ``extra`` must hold instead."""
    if key not in obj:
        return "", {}
    value = check_type(obj[key], (str, type(None)), f"{where}.{key}")
    if value:
        return str(value), {}
    return "", {prefix + key: value}


def join_str(slot: str, extra: Mapping[str, Any], key: str, prefix: str) -> dict[str, Any]:
    """The wire form of a field read by :func:`split_str`: ``{}`` when it was absent."""
    if slot:
        return {key: slot}
    if prefix + key in extra:
        return {key: extra[prefix + key]}
    return {}


def split_object(
    obj: Mapping[str, Any], key: str, prefix: str, where: str
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """An optional object field (a JSON Schema): the object for its slot, or a ``null`` kept."""
    if key not in obj:
        return None, {}
    value = check_type(obj[key], (dict, type(None)), f"{where}.{key}")
    if value is None:
        return None, {prefix + key: None}
    return copy_json(value, f"{where}.{key}"), {}


def join_object(
    slot: Mapping[str, Any] | None, extra: Mapping[str, Any], key: str, prefix: str
) -> dict[str, Any]:
    """The wire form of a field read by :func:`split_object`: ``{}`` when it was absent."""
    if slot is not None:
        return {key: copy_json(slot)}
    if prefix + key in extra:
        return {key: None}
    return {}


def split_nullable(
    obj: Mapping[str, Any], key: str, prefix: str, where: str
) -> tuple[str | None, dict[str, Any]]:
    """An optional string for a ``str | None`` slot (a URL, inline data): a ``null`` is kept."""
    if key not in obj:
        return None, {}
    value = check_type(obj[key], (str, type(None)), f"{where}.{key}")
    return (value, {}) if value is not None else (None, {prefix + key: None})


def join_nullable(
    slot: str | None, extra: Mapping[str, Any], key: str, prefix: str
) -> dict[str, Any]:
    """The wire form of a field read by :func:`split_nullable`: ``{}`` when it was absent."""
    if slot is not None:
        return {key: slot}
    return {key: None} if prefix + key in extra else {}
