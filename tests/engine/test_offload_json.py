"""Tests for the offload content of parts (decision 9): ``stringify`` writes, byte for
byte, what one ``json.dumps`` of the whole list of part objects writes, and fails the
same way; so do the enhanced stream wrappers, which offload every part of a cut stream."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reduction_app.engine import InMemoryBackend
from reduction_app.engine.config import ReductionConfig
from reduction_app.engine.messages import Media
from reduction_app.engine.middleware import new
from reduction_app.engine.offload_json import stringify
from reduction_app.engine.tool_io import ToolArgument, ToolContext, ToolOutputPart, ToolResult
from tests.conftest import max_examples


def reference_part(part: ToolOutputPart) -> dict[str, Any]:
    """A part's object as decision 9 spells it, written out independently of the engine."""
    out: dict[str, Any] = {"type": part.type}
    if part.text:
        out["text"] = part.text
    if part.media is not None and part.type in ("image", "audio", "video", "file"):
        media = part.media
        fields = ("url", "base64_data", "mime_type", "detail", "name")
        out[part.type] = {k: getattr(media, k) for k in fields if getattr(media, k)}
        if media.extra:
            out[part.type]["extra"] = dict(media.extra)
    if part.tool_search_result is not None:
        out["tool_search_result"] = part.tool_search_result
    if part.extra:
        out["extra"] = dict(part.extra)
    return out


def reference(parts: Sequence[ToolOutputPart]) -> str:
    """The offload content as the engine wrote it before text parts had a fast path."""
    if not parts:
        return ""
    if len(parts) == 1 and parts[0].type == "text":
        return parts[0].text
    return json.dumps([reference_part(p) for p in parts], ensure_ascii=False, indent=2)


def text(value: str, **extra: Any) -> ToolOutputPart:
    return ToolOutputPart(type="text", text=value, extra=extra)


# Texts: every character class the escaper treats apart, short and long.
_SPECIAL = '"\\/\n\r\t\b\f\x00\x01\x1f\x7f <>&\u2028\u00e9\u4e2d\U0001f600\ud800\udc00'
_CHARS = st.one_of(
    st.sampled_from(_SPECIAL),
    st.characters(max_codepoint=0x7F),
    st.characters(blacklist_categories=()),
)
_PRINTABLE_ASCII = st.sampled_from([chr(c) for c in range(0x20, 0x7F)] + list('\t\n\r"\\'))


def _long(chars: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Texts of 1,024 to 3,000 characters or so, well past msgspec's threshold."""
    return st.builds(
        lambda s, n: s * (n // len(s) + 1),
        st.text(chars, min_size=1, max_size=30),
        st.integers(1024, 3000),
    )


_TEXTS = st.one_of(
    st.text(_CHARS, max_size=40),
    # Either side of the lengths from which msgspec escapes (32 for ASCII, 128).
    st.text(st.one_of(_PRINTABLE_ASCII, st.sampled_from("\x00\x1f\x7f")), min_size=28, max_size=36),
    st.text(_CHARS, min_size=120, max_size=136),
    _long(_CHARS),
    _long(_PRINTABLE_ASCII),
    st.builds(lambda a, c, b: a + c + b, _long(_PRINTABLE_ASCII), _CHARS, _long(_PRINTABLE_ASCII)),
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(_CHARS, max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=6,
)
_EXTRA = st.dictionaries(st.text(_CHARS, max_size=5), _JSON, max_size=2)
_MEDIA = st.builds(
    Media,
    url=st.none() | st.text(_CHARS, max_size=20),
    base64_data=st.none() | st.text(max_size=10),
    mime_type=st.text(max_size=10),
    detail=st.sampled_from(["", "low", "high"]),
    name=st.text(_CHARS, max_size=10),
    extra=_EXTRA,
)
_PARTS = st.one_of(
    st.builds(text, _TEXTS),
    st.builds(text, _TEXTS),
    st.builds(ToolOutputPart, type=st.just("text"), text=_TEXTS, extra=_EXTRA),
    st.builds(ToolOutputPart, type=st.just("text"), text=_TEXTS, media=_MEDIA),
    st.builds(
        ToolOutputPart,
        type=st.sampled_from(["image", "audio", "video", "file"]),
        text=st.just("") | _TEXTS,
        media=st.none() | _MEDIA,
        extra=_EXTRA,
    ),
    st.builds(
        ToolOutputPart,
        type=st.just("tool_search_result"),
        tool_search_result=_JSON,
        text=st.just("") | _TEXTS,
    ),
)


@settings(max_examples=max_examples(200), deadline=None)
@given(st.lists(_PARTS, max_size=8))
def test_stringify_matches_one_json_dumps_of_the_whole_list(parts: list[ToolOutputPart]) -> None:
    assert stringify(parts) == reference(parts)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "a",
        "<b>&amp;</b> \u2028 \ud800 \U0001f600",
        "x" * 30 + '"',
        "x" * 31 + '"',
        "\u00e9" * 126 + '"',
        "\u00e9" * 127 + '"',
        "x" * 127 + "\ud800",
        "\ud800" + "x" * 127,
        "x" * 4095 + "\udc00",
        "\x00\x1f\x7f\x80\x9f\xa0\u2028\u2029\ufeff\uffff" * 10,
        "\U0001f600\U0010ffff\u00e9 astral and Latin-1 " * 10,
        'plain "quoted" line\\n with a \\ backslash\n\ttab\r\n' * 40,
        "a control \x01 in a long ASCII text " * 40,
        "\b\f form feed and backspace " * 50,
        "\x7f delete is not escaped " * 50,
        'non-ASCII \u00e9\u4e2d\ud83d\ude00 "quote" \\ \n' * 40,
        "lone \udfff surrogate " * 100,
    ],
)
def test_stringify_text_parts_beside_an_empty_one(value: str) -> None:
    parts = [text(value), text(""), text(value)]
    assert stringify(parts) == reference(parts)


def test_stringify_many_long_ascii_parts() -> None:
    source = "".join(f'line {i}: "x" \\ y\n' for i in range(20_000))
    parts = [text(source[i : i + 4096]) for i in range(0, len(source), 4096)]
    assert stringify(parts) == reference(parts)


def test_stringify_escapes_every_code_point_as_json_does() -> None:
    """msgspec's escaping matches json's for every character it can write, and a part it
    refuses (a lone surrogate) is still written as json writes it."""
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    parts = [text(every[i : i + 4096]) for i in range(0, len(every), 4096)]
    parts.append(text("".join(map(chr, range(0xD800, 0xE000)))))
    assert stringify(parts) == reference(parts)


def test_stringify_many_non_ascii_parts_with_a_lone_surrogate() -> None:
    source = "".join(
        f'ligne {i} : \u00ab\u00e9t\u00e9\u00bb \u4e2d "\U0001f600"\n' for i in range(5_000)
    )
    parts = [text(source[i : i + 1000]) for i in range(0, len(source), 1000)]
    parts[7] = text(parts[7].text[:500] + "\udfff" + parts[7].text[500:])
    parts[9] = ToolOutputPart(type="image", media=Media(url="https://x/\u00e9.png"))
    assert stringify(parts) == reference(parts)


@settings(max_examples=max_examples(30), deadline=None)
@given(st.lists(_PARTS, min_size=20, max_size=60))
def test_stringify_matches_json_dumps_for_many_parts(parts: list[ToolOutputPart]) -> None:
    assert stringify(parts) == reference(parts)


def test_stringify_one_part_is_raw_or_json_as_before() -> None:
    assert stringify([text('a "b"\n')]) == 'a "b"\n'
    image = ToolOutputPart(type="image", media=Media(url="https://x/<i>.png"))
    assert stringify([image]) == (
        '[\n  {\n    "type": "image",\n    "image": {\n      "url": "https://x/<i>.png"\n'
        "    }\n  }\n]"
    )


def test_stringify_fails_on_an_unwritable_part_as_json_dumps_does() -> None:
    parts = [text("a"), ToolOutputPart(type="tool_search_result", tool_search_result={1j})]
    with pytest.raises(TypeError, match=r"^Object of type set is not JSON serializable$"):
        reference(parts)
    with pytest.raises(TypeError, match=r"^Object of type set is not JSON serializable$"):
        stringify(parts)


def test_stringify_makes_every_object_before_encoding_any() -> None:
    """A part that cannot be made an object fails first, even after one that cannot be
    encoded, as with one ``json.dumps`` of the list."""
    unwritable = ToolOutputPart(type="tool_search_result", tool_search_result=object())
    broken = ToolOutputPart(type="image", media="not media")  # type: ignore[arg-type]
    message = r"^'str' object has no attribute 'url'$"
    with pytest.raises(AttributeError, match=message):
        reference([unwritable, broken])
    with pytest.raises(AttributeError, match=message):
        stringify([unwritable, broken])


def test_stringify_circular_extra_fails_as_json_dumps_does() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    parts = [text("a"), ToolOutputPart(type="text", text="b", extra={"loop": loop})]
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        reference(parts)
    with pytest.raises(ValueError, match=r"^Circular reference detected$"):
        stringify(parts)


# Through the stream wrappers ------------------------------------------------------------

_CHUNKS = st.lists(
    st.one_of(st.none(), st.builds(lambda ps: ToolResult(parts=tuple(ps)), st.lists(_PARTS))),
    max_size=12,
)


def _flat(chunks: Sequence[ToolResult | None]) -> list[ToolOutputPart]:
    return [p for c in chunks if c is not None for p in c.parts]


def _expected_file(chunks: Sequence[ToolResult | None], limit: int) -> dict[str, str]:
    """The file of a cut stream: every part of every chunk, as decision 9 writes them."""
    total = sum(len(p.text) for p in _flat(chunks) if p.type == "text")
    return {"/tmp/trunc/c1": reference(_flat(chunks))} if total > limit else {}


@settings(max_examples=max_examples(80), deadline=None)
@given(_CHUNKS, st.integers(1, 300))
def test_enhanced_stream_offloads_every_part_as_one_json_dumps(
    chunks: list[ToolResult | None], limit: int
) -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=limit))

    def endpoint(argument: ToolArgument) -> Iterator[Any]:
        yield from chunks

    list(
        mw.wrap_enhanced_streamable_tool_call(endpoint, ToolContext(name="t", call_id="c1"))(
            ToolArgument()
        )
    )
    assert backend.files == _expected_file(chunks, limit)


@settings(max_examples=max_examples(40), deadline=None)
@given(_CHUNKS, st.integers(1, 300))
async def test_async_enhanced_stream_offloads_every_part_as_one_json_dumps(
    chunks: list[ToolResult | None], limit: int
) -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=limit))

    async def endpoint(argument: ToolArgument) -> AsyncIterator[Any]:
        for chunk in chunks:
            yield chunk

    wrapped = mw.awrap_enhanced_streamable_tool_call(endpoint, ToolContext(name="t", call_id="c1"))
    [chunk async for chunk in wrapped(ToolArgument())]
    assert backend.files == _expected_file(chunks, limit)
