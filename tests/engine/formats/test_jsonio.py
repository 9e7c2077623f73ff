"""Decoding JSON from bytes: the same values and the same errors as ``json``, less memory."""

from __future__ import annotations

import json
import math
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats import (
    json_loads,
    json_loads_checked,
    json_loads_utf8,
    json_problem,
    nesting_path,
)
from tests.conftest import max_examples

SETTINGS = settings(max_examples=max_examples(300), deadline=None)


def typed(value: Any) -> list[tuple[str, Any]]:
    """``value`` as a flat list, in document order, that tells apart what ``==`` does not:
    ``1``, ``1.0`` and ``True``; ``0.0`` and ``-0.0``; key order; and takes ``nan`` as
    equal to itself. Without recursion, for documents nested to the interpreter's limit."""
    out: list[tuple[str, Any]] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.append(("dict", list(item)))
            stack.extend(reversed(item.values()))
        elif isinstance(item, list):
            out.append(("list", len(item)))
            stack.extend(reversed(item))
        elif isinstance(item, float):
            out.append(("float", "nan" if math.isnan(item) else repr(item)))
        else:
            out.append((type(item).__name__, item))
    return out


def outcome(decode: Callable[[Any], Any], data: Any) -> tuple[str, Any]:
    """What ``decode(data)`` gives: its value, typed, or its error's type and message."""
    try:
        value = decode(data)
    except (ValueError, RecursionError) as exc:
        return "error", (type(exc).__name__, str(exc))
    return "value", typed(value)


def as_text(data: bytes) -> Any:
    """The old way of reading a file: UTF-8 text, then ``json.loads`` of it."""
    return json.loads(data.decode("utf-8"))


def same_as_json(data: bytes) -> None:
    """Both functions give what the ``json`` call each stands for gives."""
    assert outcome(json_loads, data) == outcome(json.loads, data)
    assert outcome(json_loads, bytearray(data)) == outcome(json.loads, bytearray(data))
    assert outcome(json_loads_utf8, data) == outcome(as_text, data)


# Generated documents ------------------------------------------------------------------------

# Lone surrogates included: tool output can hold them, and the engine keeps them.
TEXT = st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=20)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**80), max_value=10**80),
    st.floats(),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(TEXT, children, max_size=5)
    ),
    max_leaves=30,
)


@SETTINGS
@given(
    value=VALUES,
    ensure_ascii=st.booleans(),
    indent=st.sampled_from([None, 0, 2]),
    separators=st.sampled_from([None, (",", ":")]),
)
def test_json_loads_decodes_dumped_values_as_json_does(
    value: Any, ensure_ascii: bool, indent: int | None, separators: tuple[str, str] | None
) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators)
    data = text.encode("utf-8", "surrogatepass")
    same_as_json(data)
    assert outcome(json_loads, text) == outcome(json.loads, text)


@SETTINGS
@given(data=st.binary(max_size=40))
def test_json_loads_matches_json_on_any_bytes(data: bytes) -> None:
    same_as_json(data)


# JSON's own characters and a few beyond ASCII, so that most draws are nearly JSON.
NEARLY_JSON = st.text(
    st.sampled_from(list('[]{}":,0123456789.eE+- \t\n\r\\/ubfnrtalsNIiy\x00\x01\x7fé中😀')),
    max_size=30,
)


@SETTINGS
@given(text=NEARLY_JSON)
def test_json_loads_matches_json_on_nearly_json_text(text: str) -> None:
    same_as_json(text.encode("utf-8"))
    same_as_json(b'{"k": [' + text.encode("utf-8") + b"]}")


NUMBER = st.from_regex(
    r"-?(0|[1-9][0-9]{0,40})(\.[0-9]{1,40})?([eE][-+]?[0-9]{1,4})?", fullmatch=True
)


@SETTINGS
@given(number=NUMBER)
def test_json_loads_reads_numbers_as_json_does(number: str) -> None:
    """Integers stay ints of any size; floats round to the same double, or to inf."""
    same_as_json(number.encode("ascii"))


@SETTINGS
@given(number=st.floats())
def test_json_loads_reads_every_float_back(number: float) -> None:
    data = json.dumps([number]).encode("ascii")
    same_as_json(data)
    assert typed(json_loads(data)) == typed([number])


# Known cases, with the value json gives --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'"\\ud800"', "\ud800"),
        (b'["\\udc00\\ud800", "\\ud83d\\ude00", "a\\udfffb"]', ["\udc00\ud800", "😀", "a\udfffb"]),
        (b'"\xed\xa0\x80"', "\ud800"),
        (b"[NaN, Infinity, -Infinity]", [math.nan, math.inf, -math.inf]),
        (b"[1e400, -1e400, 1e-400]", [math.inf, -math.inf, 0.0]),
        (
            b"[123456789012345678901234567890, -18446744073709551617]",
            [123456789012345678901234567890, -18446744073709551617],
        ),
        (b'{"a": 1, "b": 2, "a": 3}', {"a": 3, "b": 2}),
        (b"[-0, -0.0, 0.1, 1E5]", [0, -0.0, 0.1, 100000.0]),
        (b"\xef\xbb\xbf[1]", [1]),
        ('["é", 1]'.encode("utf-16"), ["é", 1]),
        ('{"a": "中"}'.encode("utf-32-le"), {"a": "中"}),
    ],
    ids=[
        "lone-surrogate",
        "surrogates-unpaired-and-paired",
        "surrogate-in-utf-8",
        "nan-infinity",
        "out-of-range-floats",
        "big-ints",
        "duplicate-keys",
        "zeros-and-floats",
        "utf-8-bom",
        "utf-16",
        "utf-32",
    ],
)
def test_json_loads_known_cases(data: bytes, expected: Any) -> None:
    assert typed(json_loads(data)) == typed(expected)
    same_as_json(data)


def test_json_loads_duplicate_keys_keep_the_last_value_in_the_first_place() -> None:
    assert list(json_loads(b'{"a": 1, "b": 2, "a": 3}').items()) == [("a", 3), ("b", 2)]


def test_json_loads_integer_digits_as_json_allows() -> None:
    """Up to ``sys.get_int_max_str_digits()`` digits, a minus sign not counted; beyond
    that json's ValueError."""
    limit = sys.get_int_max_str_digits()
    assert json_loads(b"9" * limit) == int("9" * limit)
    assert json_loads(b"-" + b"9" * limit) == -int("9" * limit)
    with pytest.raises(ValueError) as raised:
        json_loads(b"9" * (limit + 1))
    assert str(raised.value) == (
        f"Exceeds the limit ({limit} digits) for integer string conversion: "
        f"value has {limit + 1} digits; use sys.set_int_max_str_digits() to increase the limit"
    )


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (b"not json", "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)"),
        (b"", "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)"),
        (b"[1,]", "JSONDecodeError", "Expecting value: line 1 column 4 (char 3)"),
        (b'{"a": 1} x', "JSONDecodeError", "Extra data: line 1 column 10 (char 9)"),
        (b'"a\x01"', "JSONDecodeError", "Invalid control character at: line 1 column 3 (char 2)"),
        (
            b"\xff\xfe\x00",
            "UnicodeDecodeError",
            "'utf-16-le' codec can't decode byte 0x00 in position 2: truncated data",
        ),
        (
            b'"\xff"',
            "UnicodeDecodeError",
            "'utf-8' codec can't decode byte 0xff in position 1: invalid start byte",
        ),
    ],
)
def test_json_loads_refuses_with_json_errors(data: bytes, error: str, message: str) -> None:
    """No error message changes: what msgspec refuses, json reports."""
    assert outcome(json_loads, data) == ("error", (error, message))
    same_as_json(data)


def test_json_loads_utf8_refuses_what_utf_8_text_refused() -> None:
    """A byte order mark and surrogates encoded in UTF-8, which json.loads of bytes takes."""
    assert outcome(json_loads_utf8, b"\xef\xbb\xbf[1]") == (
        "error",
        (
            "JSONDecodeError",
            "Unexpected UTF-8 BOM (decode using utf-8-sig): line 1 column 1 (char 0)",
        ),
    )
    assert outcome(json_loads_utf8, b'"\xed\xa0\x80"') == (
        "error",
        (
            "UnicodeDecodeError",
            "'utf-8' codec can't decode byte 0xed in position 1: invalid continuation byte",
        ),
    )
    assert json_loads_utf8(b'["\\ud800", NaN]')[0] == "\ud800"


# Nesting -----------------------------------------------------------------------------------------


def nested(depth: int, kind: str) -> bytes:
    if kind == "array":
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def deepest(decode: Callable[[bytes], Any], kind: str) -> int:
    """The deepest document ``decode`` takes from this frame (a binary search)."""
    low, high = 1, 5000
    while low < high:
        middle = (low + high + 1) // 2
        try:
            decode(nested(middle, kind))
        except RecursionError:
            high = middle - 1
        else:
            low = middle
    return low


@pytest.mark.parametrize("kind", ["array", "object"])
def test_json_loads_decodes_every_depth_json_decodes(kind: str) -> None:
    for depth in range(1, deepest(json.loads, kind) + 1):
        data = nested(depth, kind)
        assert typed(json_loads(data)) == typed(json.loads(data)), depth


@pytest.mark.parametrize("kind", ["array", "object"])
def test_json_loads_refuses_depth_within_four_levels_of_json(kind: str) -> None:
    """The one difference (see the module's docstring): json.loads spends four levels of
    the recursion limit before the document's first bracket, msgspec none."""
    assert 0 <= deepest(json_loads, kind) - deepest(json.loads, kind) <= 4
    with pytest.raises(RecursionError):
        json_loads(nested(100_000, kind))


# Memory ------------------------------------------------------------------------------------------


def traced_peak(decode: Callable[[bytes], Any], data: bytes) -> int:
    """The peak of memory allocated while ``decode(data)`` runs, its value included."""
    tracemalloc.start()
    try:
        decode(data)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("decode", [json_loads, json_loads_utf8])
def test_json_loads_makes_no_str_of_the_whole_document(decode: Callable[[bytes], Any]) -> None:
    """One character beyond Latin-1 widens only its own string, not a copy of the document:
    json.loads peaks above twice the bytes here (the text at 2 bytes a character, then
    the values), the decoder at the values (the long string, 1 byte a character)."""
    data = json.dumps(["x" * 1_000_000, "中"], ensure_ascii=False).encode("utf-8")
    assert traced_peak(decode, data) < 1.1 * len(data)
    assert traced_peak(json.loads, data) > 3 * len(data)


@pytest.mark.parametrize(
    ("data", "limit", "path"),
    [
        (b'[1, {"a": [2]}]', 3, None),
        (b"[[[[", 3, "[0][0][0]"),
        (b'[1, "[", [2, [[{"k\\"]": {"x": 0}}]]]', 5, '[2][1][0][0].k"]'),
        (b'{"a": {"b": [0, {"c": [[[[[[[[', 5, "a.b[1].c[0]"),
        (b'{"a": 1, "b": {"c": 1, "d": {"e": {', 3, "b.d.e"),
    ],
)
def test_nesting_path_names_where_a_document_passes_the_limit(
    data: bytes, limit: int, path: str | None
) -> None:
    """Strings (brackets and escaped quotes in them) are skipped, keys and indexes kept."""
    assert nesting_path(data, limit) == path


def test_nesting_path_shows_eight_components_of_a_deep_path() -> None:
    data = b'{"tools": [{"function": {"parameters": ' + b'{"a": ' * 100_000
    assert nesting_path(data, 128) == "tools[0].function.parameters.a.a.a.a…"


@pytest.mark.parametrize(
    "data",
    [
        '{"messages": [{"role": "tool", "content": "中文 \\ud800 é"}]}'.encode(),
        b'{"a": 1, "a": [-0.0, 1e308, -1e-320, 123456789012345678901234567890]}',
        b'["\\udc80", 1.5, -0.0, 1e308]',
    ],
    ids=["lone-surrogate", "fast-numbers", "slow-numbers"],
)
def test_json_loads_checked_returns_what_json_loads_returns(data: bytes) -> None:
    assert repr(json_loads_checked(data)) == repr(json.loads(data))


@pytest.mark.parametrize(
    ("data", "where", "problem"),
    [
        (b'{"a": NaN}', "a", "must be a finite number, got NaN"),
        (b'{"a": [1, {"b": -Infinity}]}', "a[1].b", "must be a finite number, got -Infinity"),
        # Beyond a double's range: json reads it as an infinity.
        (
            b'{"m": [{"input": {"x": 1e999}}]}',
            "m[0].input.x",
            "must be a finite number, got Infinity",
        ),
        (b"[Infinity]", "[0]", "must be a finite number, got Infinity"),
        (b"NaN", "", "must be a finite number, got NaN"),
        # The first in document order, whatever the hooks met first.
        (b'{"a": "\\ud800", "b": [2, NaN], "c": NaN}', "b[1]", "must be a finite number, got NaN"),
    ],
)
def test_json_loads_checked_names_a_number_json_cannot_give_back(
    data: bytes, where: str, problem: str
) -> None:
    with pytest.raises(FormatError) as refused:
        json_loads_checked(data)
    assert (refused.value.where, str(refused.value)) == (
        where,
        f"{where}: {problem}" if where else problem,
    )


def test_json_loads_checked_names_an_integer_longer_than_python_converts() -> None:
    limit = sys.get_int_max_str_digits()
    assert json_loads_checked(b'{"n": -' + b"9" * limit + b"}") == {"n": -int("9" * limit)}
    for digits in (b"9" * (limit + 1), b"-" + b"1" * 5000):
        with pytest.raises(FormatError) as refused:
            json_loads_checked(b'{"config": {"n": [0, ' + digits + b"]}}")
        count = len(digits.lstrip(b"-"))
        assert str(refused.value) == (
            f"config.n[1]: must be an integer of at most {limit} digits, got {count} digits"
        )


def test_json_loads_checked_keeps_json_errors() -> None:
    with pytest.raises(json.JSONDecodeError) as raised:
        json_loads_checked(b'{"a": NaN,}')
    assert (
        str(raised.value)
        == "Expecting property name enclosed in double quotes: line 1 column 11 (char 10)"
    )


NAN = float("nan")


def test_json_problem_checks_text_only_when_asked() -> None:
    value = {"tools": [{"name": "a\x00"}], "n": 1}
    assert json_problem(value, "body") == ("body.tools[0].name", "must not contain NUL characters")
    assert json_problem(value, "body", text=False) is None
    # An object's keys are looked at before its values.
    assert json_problem({"a": [NAN], "k\ud800": 1}, "system") == (
        "system.k\ud800",
        "key must not contain a lone surrogate ('\\ud800' at 1)",
    )
    assert json_problem([1, "x", {"a": [True, None, 2.5]}], "tools") is None


def test_json_problem_walks_any_depth_without_recursing() -> None:
    value: Any = float("nan")
    for _ in range(100_000):
        value = [value]
    found = json_problem(value, "v", text=False)
    assert found is not None
    assert found[0] == "v" + "[0]" * 100_000
