"""Tests for streamed tool output: the incremental default truncation (docs/behaviour.md §3.6,
decision 8) and the buffered path of per-tool handlers (§3.5), for string and
enhanced streams."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import pytest

from reduction_app.engine import InMemoryBackend, WriteRequest, default_trunc_handler
from reduction_app.engine.config import ReductionConfig, ToolReductionConfig
from reduction_app.engine.errors import MessageError, NoBackendError, OffloadError, ReductionError
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.messages import Media
from reduction_app.engine.middleware import ReductionMiddleware, new
from reduction_app.engine.notices import get_language, set_language
from reduction_app.engine.parts import stringify
from reduction_app.engine.tool_io import (
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)

S = "hello world" * 10 + "\n" + "hello world" * 8
S_CHUNKS = [S[i : i + 20] for i in range(0, len(S), 20)]  # nine of 20, one of 19
ARGS = '{"location": "London, UK", "unit": "c"}'


def saved(limit: int, path: str, read_tool: str = "read_file") -> str:
    return (
        f"<persisted-output>\nOutput truncated after {limit} characters were streamed. "
        f"Full output saved to: {path}. Use {read_tool} to view. \n</persisted-output>"
    )


def failed(limit: int, error: str) -> str:
    return (
        f"<persisted-output>\nOutput truncated after {limit} characters were streamed.  "
        f"Failed to save full output: {error}.\n</persisted-output>"
    )


def buffered_notice(path: str) -> str:
    """The case-1 notice for ``S`` with ``M=70``."""
    return (
        f"<persisted-output>\nOutput too large (199). Full output saved to: {path}\n"
        "Preview (first 35):\nhello worldhello worldhello worldhe\n\n"
        "Preview (last 35):\nldhello worldhello worldhello world\n\n"
        "Use read_file to view\n</persisted-output>"
    )


def text(value: str) -> ToolOutputPart:
    return ToolOutputPart.of_text(value)


def result(*parts: ToolOutputPart) -> ToolResult:
    return ToolResult(parts=parts)


AUDIO_A = ToolOutputPart(type="audio", media=Media(url="https://x/a.mp3", mime_type="audio/mpeg"))
AUDIO_B = ToolOutputPart(type="audio", media=Media(url="https://x/b.mp3", mime_type="audio/mpeg"))
IMAGE = ToolOutputPart(type="image", media=Media(url="https://x/i.png", mime_type="image/png"))


def emitting(chunks: Iterable[Any], error: Exception | None = None) -> Any:
    """An endpoint that streams ``chunks`` and then, if given, fails with ``error``."""

    def endpoint(argument: Any) -> Iterator[Any]:
        yield from chunks
        if error is not None:
            raise error

    return endpoint


def collect(stream: Iterable[Any]) -> tuple[list[Any], Exception | None]:
    out: list[Any] = []
    try:
        for chunk in stream:
            out.append(chunk)
    except Exception as exc:
        return out, exc
    return out, None


class FailingBackend:
    def __init__(self, message: str) -> None:
        self.message = message

    def write(self, request: WriteRequest) -> None:
        raise OSError(self.message)

    def read(self, path: str) -> str:
        raise FileNotFoundError(path)


def string_stream(
    mw: Any, chunks: Iterable[str], call_id: str, error: Exception | None = None
) -> Any:
    wrapped = mw.wrap_streamable_tool_call(
        emitting(chunks, error), ToolContext(name="t", call_id=call_id)
    )
    return collect(wrapped(ARGS))


def enhanced_stream(
    mw: Any, chunks: Iterable[ToolResult | None], call_id: str, error: Exception | None = None
) -> Any:
    wrapped = mw.wrap_enhanced_streamable_tool_call(
        emitting(chunks, error), ToolContext(name="t", call_id=call_id)
    )
    return collect(wrapped(ToolArgument(text=ARGS)))


@pytest.fixture
def default_language() -> Iterator[None]:
    before = get_language()
    yield
    set_language(before)


# Incremental, string streams ------------------------------------------------------------


def test_stream_short_output_passes() -> None:
    """Case 6: "short" under M=10."""
    backend, events = InMemoryBackend(), []
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10, on_event=events.append))
    assert string_stream(mw, ["short"], "c1") == (["short"], None)
    assert (backend.files, events) == ({}, [])


def test_stream_source_error_before_the_limit_is_forwarded() -> None:
    """Case 6: "ok", then the source's own error."""
    error = ValueError("source failed")
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10))
    assert string_stream(mw, ["ok"], "c1", error) == (["ok"], error)


def test_stream_of_exactly_the_limit_passes_untouched() -> None:
    """Decision 2: the reference's >= trigger would cut this stream; ours does not."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    assert string_stream(mw, ["x" * 4, "x" * 6, ""], "c1") == (["x" * 4, "x" * 6], None)
    assert backend.files == {}


def test_stream_one_character_over_an_exact_limit_closes_with_the_notice() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = string_stream(mw, ["x" * 10, "y"], "c1")
    assert out == (["x" * 10, saved(10, "/tmp/trunc/c1")], None)
    assert backend.files == {"/tmp/trunc/c1": "x" * 10 + "y"}


def test_stream_truncates_on_source_eof() -> None:
    """Case 8: one closing chunk with the head, no preview; the file holds everything."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = string_stream(mw, ["x" * 20, "tail"], "stream_branches")
    assert out == (["x" * 10 + saved(10, "/tmp/trunc/stream_branches")], None)
    assert backend.files == {"/tmp/trunc/stream_branches": "x" * 20 + "tail"}


def test_stream_notice_names_the_configured_read_tool() -> None:
    """Case 8."""
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), max_length_for_trunc=10, read_file_tool_name="cat_file"
        )
    )
    out = string_stream(mw, ["x" * 20, "tail"], "stream_branches")
    assert out == (["x" * 10 + saved(10, "/tmp/trunc/stream_branches", "cat_file")], None)


def test_stream_forwards_chunks_before_the_source_ends() -> None:
    """Decision 8: chunks under the limit pass as they come, before the stream ends."""
    pulled: list[int] = []

    def endpoint(arguments: str) -> Iterator[str]:
        for index, chunk in enumerate(S_CHUNKS):
            pulled.append(index)
            yield chunk

    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70))
    stream = iter(
        mw.wrap_streamable_tool_call(endpoint, ToolContext(name="t", call_id="54321"))(ARGS)
    )
    assert next(stream) == S_CHUNKS[0]
    assert pulled == [0]
    rest = list(stream)
    assert rest == [S_CHUNKS[1], S_CHUNKS[2], S[60:70] + saved(70, "/tmp/trunc/54321")]
    assert backend.files == {"/tmp/trunc/54321": S}


def test_stream_drops_empty_chunks() -> None:
    """§3.6 step 1."""
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10))
    assert string_stream(mw, ["", "ab", "", "cd"], "c1") == (["ab", "cd"], None)


def test_stream_path_error_is_reported_in_the_notice() -> None:
    """Case 7: a failing path generator does not fail the stream."""

    def gen_path(detail: ToolDetail) -> str:
        raise ValueError("path generation error")

    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend, max_length_for_trunc=10, gen_trunc_offload_file_path=gen_path
        )
    )
    out = string_stream(mw, ["x" * 20], "stream_branches")
    assert out == (["x" * 10 + failed(10, "path generation error")], None)
    assert backend.files == {}


def test_stream_write_error_is_reported_in_the_notice() -> None:
    """Case 7: a failing write does not fail the stream; the notice quotes the write's own
    error, as the reference does, not our OffloadError's phase and path."""
    mw = new(ReductionConfig(backend=FailingBackend("stream write error"), max_length_for_trunc=10))
    out = string_stream(mw, ["x" * 20], "stream_branches")
    assert out == (["x" * 10 + failed(10, "stream write error")], None)


def test_stream_source_error_after_the_limit_replays_and_raises() -> None:
    """§3.6: everything held back comes back as one chunk, then the error; nothing is
    offloaded and no event is emitted."""
    error = ConnectionError("mock error")
    backend, events = InMemoryBackend(), []
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10, on_event=events.append))
    out = string_stream(mw, ["abc", "x" * 20, "tail"], "c1", error)
    assert out == (["abc", "x" * 20 + "tail"], error)
    assert (backend.files, events) == ({}, [])


def test_stream_after_the_limit_drops_empty_chunks_and_offloads_the_rest() -> None:
    """§3.6 steps 1-2 past the limit: held back, empty chunks dropped, all offloaded."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = string_stream(mw, ["abc", "x" * 20, "", "tail", ""], "c1")
    assert out == (["abc", "x" * 7 + saved(10, "/tmp/trunc/c1")], None)
    assert backend.files == {"/tmp/trunc/c1": "abc" + "x" * 20 + "tail"}


def test_stream_refuses_a_chunk_of_the_wrong_type_after_the_limit() -> None:
    """Refused as before the limit: no replay, nothing offloaded."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    chunks, error = string_stream(mw, ["abc", "x" * 20, 7, "tail"], "c1")  # type: ignore[list-item]
    assert chunks == ["abc"]
    assert isinstance(error, ReductionError)
    assert str(error) == "tool 't' produced a chunk of type int, not a str"
    assert backend.files == {}


def test_stream_counts_characters_of_chinese_text_in_a_chinese_notice() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=5, language="zh"))
    out = string_stream(mw, ["你好", "世界和平万岁"], "zh")
    assert out == (
        [
            "你好",
            "世界和<persisted-output>\n输出结果在流式传输 5 个字符后被截断。"
            "完整输出保存到: /tmp/trunc/zh。使用 read_file 进行查看。 \n</persisted-output>",
        ],
        None,
    )
    assert backend.files == {"/tmp/trunc/zh": "你好世界和平万岁"}


def test_stream_failure_notice_in_chinese_from_set_language(default_language: None) -> None:
    set_language("zh")
    mw = new(ReductionConfig(backend=FailingBackend("磁盘已满"), max_length_for_trunc=3))
    out = string_stream(mw, ["abcd"], "c1")
    assert out == (
        [
            "abc<persisted-output>\n输出结果在流式传输 3 个字符后被截断。 "
            "完整输出保存失败: 磁盘已满。"
            "\n</persisted-output>"
        ],
        None,
    )


def test_stream_emits_event_with_exact_figures() -> None:
    backend = InMemoryBackend()
    seen: list[tuple[ReductionEvent, dict[str, str]]] = []
    mw = new(
        ReductionConfig(
            backend=backend,
            max_length_for_trunc=10,
            on_event=lambda e: seen.append((e, backend.files)),
        )
    )
    string_stream(mw, ["abc", "x" * 20, "tail"], "ev")
    # Before: 27 characters (6 tokens). After: "abc" + 7 x + a 151-character notice.
    assert seen == [
        (
            ReductionEvent(
                phase="truncation",
                kind="tool",
                tool_name="t",
                call_id="ev",
                chars_before=27,
                chars_after=161,
                tokens_before=6,
                tokens_after=40,
                tokens_saved=-34,
                offload_path="/tmp/trunc/ev",
                streamed=True,
            ),
            {"/tmp/trunc/ev": "abc" + "x" * 20 + "tail"},
        )
    ]


def test_stream_event_after_a_failed_write_names_no_file() -> None:
    events: list[ReductionEvent] = []
    mw = new(
        ReductionConfig(
            backend=FailingBackend("nope"), max_length_for_trunc=10, on_event=events.append
        )
    )
    string_stream(mw, ["abc", "x" * 20, "tail"], "ev")
    # After: the 10 characters streamed and a notice of 125 = "<persisted-output>\n"
    # (19) + "Output truncated after 10 characters were streamed." (51) + two spaces +
    # "Failed to save full output: nope." (33) + "\n</persisted-output>" (20); tokens
    # are floor(chars / 4): 27 -> 6, 135 -> 33.
    assert events == [
        ReductionEvent(
            phase="truncation",
            kind="tool",
            tool_name="t",
            call_id="ev",
            chars_before=27,
            chars_after=135,
            tokens_before=6,
            tokens_after=33,
            tokens_saved=-27,
            offload_path="",
            streamed=True,
        )
    ]


def test_stream_excluded_tool_passes_untouched() -> None:
    """Case 16 (streaming)."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend, max_length_for_trunc=70, trunc_exclude_tools=["important_stream_tool"]
        )
    )
    endpoint = emitting(S_CHUNKS)
    wrapped = mw.wrap_streamable_tool_call(
        endpoint, ToolContext(name="important_stream_tool", call_id="12345")
    )
    assert wrapped is endpoint
    assert "".join(wrapped(ARGS)) == S
    assert backend.files == {}


def test_stream_entry_backend_receives_the_incremental_offload() -> None:
    """Decision 4: a per-tool backend without a handler keeps incremental streaming."""
    global_backend, entry_backend = InMemoryBackend(), InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=global_backend,
            max_length_for_trunc=10,
            tool_config={"t": ToolReductionConfig(backend=entry_backend)},
        )
    )
    out = string_stream(mw, ["abc", "x" * 20], "c1")
    assert out == (["abc", "x" * 7 + saved(10, "/tmp/trunc/c1")], None)
    assert (entry_backend.files, global_backend.files) == ({"/tmp/trunc/c1": "abc" + "x" * 20}, {})


def test_stream_sync_wrapper_refuses_an_async_generator_endpoint() -> None:
    async def endpoint(arguments: str) -> AsyncIterator[str]:
        yield "chunk"

    mw = new(ReductionConfig(backend=InMemoryBackend()))
    wrapped = mw.wrap_streamable_tool_call(endpoint, ToolContext(name="t"))  # type: ignore[arg-type]
    with pytest.raises(TypeError) as info:
        wrapped(ARGS)
    assert str(info.value) == (
        "tool 't' returned an async iterator; wrap async tools with awrap_streamable_tool_call"
    )


def test_stream_sync_wrapper_raises_for_an_async_backend_instead_of_reporting_it() -> None:
    """Misuse is a TypeError, not an offload failure softened into the notice."""

    class AsyncBackend:
        async def write(self, request: WriteRequest) -> None:
            return None

        async def read(self, path: str) -> str:
            raise FileNotFoundError(path)

    mw = new(ReductionConfig(backend=AsyncBackend(), max_length_for_trunc=10))
    # Refused when wrapping, before the stream starts: no chunk is forwarded and then lost.
    with pytest.raises(TypeError) as info:
        string_stream(mw, ["x" * 20], "c1")
    assert str(info.value) == (
        "tool 't' has an async handler or backend; wrap it with awrap_streamable_tool_call"
    )


# Incremental, enhanced streams -----------------------------------------------------------


def test_enhanced_stream_short_output_passes() -> None:
    """Case 10."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    chunk = result(text("short"))
    out, error = enhanced_stream(mw, [chunk], "c1")
    assert (out, error) == ([chunk], None)
    assert out[0] is chunk
    assert backend.files == {}


def test_enhanced_stream_source_error_before_the_limit_is_forwarded() -> None:
    """Case 10."""
    error = ValueError("source failed")
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10))
    assert enhanced_stream(mw, [result(text("ok"))], "c1", error) == ([result(text("ok"))], error)


def test_enhanced_stream_first_chunk_passes_and_the_rest_is_offloaded_as_json() -> None:
    """Case 5 (default incremental path, M=70)."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70))
    first = result(text("first chunk"))
    out = enhanced_stream(mw, [first, result(text("x" * 80))], "e5")
    assert out == ([first, result(text("x" * 59), text(saved(70, "/tmp/trunc/e5")))], None)
    assert backend.files == {
        "/tmp/trunc/e5": (
            '[\n  {\n    "type": "text",\n    "text": "first chunk"\n  },\n'
            '  {\n    "type": "text",\n    "text": "' + "x" * 80 + '"\n  }\n]'
        )
    }


def test_enhanced_stream_with_text_raw_offloads_the_joined_text() -> None:
    """``trunc_stream_text_raw`` (docs/behaviour.md §3.10): the file holds the texts joined,
    and everything the stream yields, the path and the event are as without it."""
    chunks = [result(text("first chunk")), result(text("x" * 40), text("y" * 40))]
    runs = []
    for raw in (False, True):
        backend, events = InMemoryBackend(), []
        config = ReductionConfig(
            backend=backend,
            max_length_for_trunc=70,
            trunc_stream_text_raw=raw,
            on_event=events.append,
        )
        runs.append((enhanced_stream(new(config), chunks, "e5"), backend.files, events))
    (out_json, files_json, events_json), (out_raw, files_raw, events_raw) = runs
    assert out_raw == out_json
    assert events_raw == events_json
    assert files_raw == {"/tmp/trunc/e5": "first chunk" + "x" * 40 + "y" * 40}
    assert files_json["/tmp/trunc/e5"].startswith("[\n")


@pytest.mark.parametrize(
    "other",
    [AUDIO_A, ToolOutputPart(type="text", text="tagged", extra={"k": "v"})],
    ids=["media", "extra"],
)
def test_enhanced_stream_with_text_raw_keeps_json_for_other_parts(other: ToolOutputPart) -> None:
    """A part that is not plain text (media, a text with ``extra``) keeps the JSON."""
    chunks = [result(text("x" * 20)), result(other)]
    files = []
    for raw in (False, True):
        backend = InMemoryBackend()
        mw = new(
            ReductionConfig(backend=backend, max_length_for_trunc=10, trunc_stream_text_raw=raw)
        )
        enhanced_stream(mw, chunks, "m")
        files.append(backend.files)
    assert files[0] == files[1]
    assert files[1]["/tmp/trunc/m"] == stringify([text("x" * 20), other])


def test_enhanced_stream_conflicting_media_do_not_prevent_the_notice() -> None:
    """Case 11: the audio parts after the cut are dropped from the output, kept in the file."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = enhanced_stream(mw, [result(text("x" * 20), AUDIO_A), result(AUDIO_B)], "m")
    assert out == ([result(text("x" * 10), text(saved(10, "/tmp/trunc/m")))], None)
    assert backend.files == {
        "/tmp/trunc/m": (
            '[\n  {\n    "type": "text",\n    "text": "' + "x" * 20 + '"\n  },\n'
            '  {\n    "type": "audio",\n    "audio": {\n      "url": "https://x/a.mp3",\n'
            '      "mime_type": "audio/mpeg"\n    }\n  },\n'
            '  {\n    "type": "audio",\n    "audio": {\n      "url": "https://x/b.mp3",\n'
            '      "mime_type": "audio/mpeg"\n    }\n  }\n]'
        )
    }


def test_enhanced_stream_path_error_is_reported_in_the_notice() -> None:
    """Case 13."""

    def gen_path(detail: ToolDetail) -> str:
        raise ValueError("enhanced path generation error")

    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), max_length_for_trunc=10, gen_trunc_offload_file_path=gen_path
        )
    )
    out = enhanced_stream(mw, [result(text("x" * 20))], "c1")
    assert out == (
        [result(text("x" * 10), text(failed(10, "enhanced path generation error")))],
        None,
    )


def test_enhanced_stream_write_error_is_reported_in_the_notice() -> None:
    """Case 13."""
    mw = new(
        ReductionConfig(backend=FailingBackend("enhanced write error"), max_length_for_trunc=10)
    )
    out = enhanced_stream(mw, [result(text("x" * 20))], "enhanced_stream_branches")
    assert out == ([result(text("x" * 10), text(failed(10, "enhanced write error")))], None)


def test_enhanced_stream_two_text_chunks_are_offloaded_as_json() -> None:
    """Case 13: chunks [20 x], [tail]."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = enhanced_stream(
        mw, [result(text("x" * 20)), result(text("tail"))], "enhanced_stream_branches"
    )
    assert out == (
        [result(text("x" * 10), text(saved(10, "/tmp/trunc/enhanced_stream_branches")))],
        None,
    )
    assert backend.files == {
        "/tmp/trunc/enhanced_stream_branches": (
            '[\n  {\n    "type": "text",\n    "text": "' + "x" * 20 + '"\n  },\n'
            '  {\n    "type": "text",\n    "text": "tail"\n  }\n]'
        )
    }


def test_enhanced_stream_forwards_media_only_and_null_chunks() -> None:
    """§3.6: a media-only chunk has length 0; null chunks are forwarded."""
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10))
    chunks = [result(IMAGE), None, result(text("x" * 10)), result()]
    assert enhanced_stream(mw, chunks, "c1") == (chunks, None)


def test_enhanced_stream_cut_at_zero_budget_keeps_leading_media() -> None:
    """Case 49 through the stream: budget 0 keeps the media before the first text part."""
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10))
    out = enhanced_stream(mw, [result(text("x" * 10)), result(IMAGE, text("y"))], "c1")
    assert out == ([result(text("x" * 10)), result(IMAGE, text(saved(10, "/tmp/trunc/c1")))], None)


def test_enhanced_stream_source_error_after_the_limit_replays_one_result() -> None:
    error = ConnectionError("mock error")
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    chunks = [result(text("abc")), result(text("x" * 20), AUDIO_A), None, result(text("tail"))]
    out = enhanced_stream(mw, chunks, "c1", error)
    assert out == ([chunks[0], result(text("x" * 20), AUDIO_A, text("tail"))], error)
    assert backend.files == {}


def test_enhanced_stream_after_the_limit_holds_null_chunks_and_refuses_strings() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = enhanced_stream(mw, [result(text("x" * 20)), None, result(text("yz"))], "c1")
    assert out == ([result(text("x" * 10), text(saved(10, "/tmp/trunc/c1")))], None)
    assert backend.files == {"/tmp/trunc/c1": stringify([text("x" * 20), text("yz")])}
    chunks, error = enhanced_stream(mw, [result(text("x" * 20)), None, "yz"], "c2")  # type: ignore[list-item]
    assert chunks == []
    assert isinstance(error, ReductionError)
    assert str(error) == "tool 't' produced a chunk of type str, not a ToolResult"


def test_enhanced_stream_of_exactly_the_limit_passes_untouched() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    chunks = [result(text("x" * 4), IMAGE), result(text("x" * 6))]
    assert enhanced_stream(mw, chunks, "c1") == (chunks, None)
    assert backend.files == {}


def test_enhanced_stream_emits_event_with_exact_figures() -> None:
    events: list[ReductionEvent] = []
    mw = new(
        ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10, on_event=events.append)
    )
    enhanced_stream(
        mw, [result(text("abc")), result(IMAGE, text("x" * 20)), result(text("tail"))], "ee"
    )
    assert events == [
        ReductionEvent(
            phase="truncation",
            kind="tool",
            tool_name="t",
            call_id="ee",
            chars_before=27,
            chars_after=161,
            tokens_before=6,
            tokens_after=40,
            tokens_saved=-34,
            offload_path="/tmp/trunc/ee",
            streamed=True,
        )
    ]


# Buffered, per-tool handlers -------------------------------------------------------------


class ReplacingHandler:
    def __init__(self, *, need_trunc: bool = True) -> None:
        self.need_trunc = need_trunc
        self.seen: list[list[ToolResult]] = []

    def __call__(self, detail: ToolDetail) -> TruncResult:
        assert detail.stream_tool_result is not None
        self.seen.append(list(detail.stream_tool_result))
        return TruncResult(
            need_trunc=self.need_trunc,
            stream_tool_result=iter([result(text("truncated"))]),
            need_offload=True,
            offload_file_path="/tmp/trunc/cid",
            offload_content="full content",
        )


def per_tool(handler: Any, **changes: Any) -> ReductionMiddleware:
    entry = ToolReductionConfig(trunc_handler=handler, backend=changes.pop("entry_backend", None))
    return new(ReductionConfig(tool_config={"t": entry}, **changes))


def by_id(detail: ToolDetail) -> str:
    return f"/tmp/trunc/{detail.tool_context.call_id}"


def test_buffered_stream_with_explicit_default_handler() -> None:
    """Case 3: global skip_truncation; the per-tool default handler reads the whole stream."""
    backend = InMemoryBackend()
    mw = per_tool(
        default_trunc_handler(by_id, 70, "read_file"), skip_truncation=True, entry_backend=backend
    )
    assert string_stream(mw, S_CHUNKS, "54321") == ([buffered_notice("/tmp/trunc/54321")], None)
    assert backend.files == {"/tmp/trunc/54321": S}


def test_buffered_stream_source_error_bypasses_truncation() -> None:
    """Case 15: every chunk, then the error; nothing offloaded."""
    error = RuntimeError("mock error")
    backend = InMemoryBackend()
    mw = per_tool(default_trunc_handler(by_id, 70, "read_file"), backend=backend)
    assert string_stream(mw, S_CHUNKS, "54321", error) == (S_CHUNKS, error)
    assert backend.files == {}


def test_buffered_stream_reads_the_whole_source_first() -> None:
    """Decision 8: an explicit handler gets the buffered path."""
    pulled: list[int] = []

    def endpoint(arguments: str) -> Iterator[str]:
        for index, chunk in enumerate(S_CHUNKS):
            pulled.append(index)
            yield chunk

    mw = per_tool(default_trunc_handler(by_id, 70, "read_file"), backend=InMemoryBackend())
    stream = mw.wrap_streamable_tool_call(endpoint, ToolContext(name="t", call_id="b"))(ARGS)
    assert next(iter(stream)) == buffered_notice("/tmp/trunc/b")
    assert pulled == list(range(10))


def test_buffered_stream_of_exactly_the_limit_passes_untouched() -> None:
    backend = InMemoryBackend()
    mw = per_tool(default_trunc_handler(by_id, 199, "read_file"), backend=backend)
    assert string_stream(mw, S_CHUNKS, "c1") == (S_CHUNKS, None)
    assert backend.files == {}


def test_buffered_stream_handler_sees_one_text_part_per_chunk() -> None:
    handler = ReplacingHandler(need_trunc=False)
    mw = per_tool(handler, backend=InMemoryBackend())
    assert string_stream(mw, ["a", "", "b"], "c1") == (["a", "", "b"], None)
    assert handler.seen == [[result(text("a")), result(text("")), result(text("b"))]]


def test_buffered_stream_offload_inherits_the_global_backend() -> None:
    """Case 20 (streaming) read through decision 4."""
    backend = InMemoryBackend()
    mw = per_tool(ReplacingHandler(), backend=backend)
    assert string_stream(mw, ["orig"], "cid") == (["truncated"], None)
    assert backend.files == {"/tmp/trunc/cid": "full content"}


def test_buffered_stream_offload_without_any_backend_raises() -> None:
    """Case 20 / §3.8 for streams."""
    mw = per_tool(ReplacingHandler(), skip_truncation=True)
    wrapped = mw.wrap_streamable_tool_call(emitting(["orig"]), ToolContext(name="t", call_id="cid"))
    with pytest.raises(NoBackendError, match=r"^truncation: no backend for offload$"):
        wrapped(ARGS)


def test_buffered_stream_write_failure_fails_the_call() -> None:
    mw = per_tool(ReplacingHandler(), backend=FailingBackend("disk full"))
    wrapped = mw.wrap_streamable_tool_call(emitting(["orig"]), ToolContext(name="t", call_id="cid"))
    with pytest.raises(
        OffloadError, match=r"^truncation: failed to write /tmp/trunc/cid: disk full$"
    ):
        wrapped(ARGS)


def test_buffered_stream_handler_error_fails_the_call() -> None:
    def handler(detail: ToolDetail) -> TruncResult:
        raise ValueError("trunc handler error")

    mw = per_tool(handler, backend=InMemoryBackend())
    wrapped = mw.wrap_streamable_tool_call(emitting(["orig"]), ToolContext(name="t"))
    with pytest.raises(ValueError, match=r"^trunc handler error$"):
        wrapped(ARGS)


def test_buffered_stream_maps_null_and_empty_chunks_to_empty_strings() -> None:
    """§3.5 step 6."""

    def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult(
            need_trunc=True, stream_tool_result=iter([None, result(), result(text("a"), text("b"))])
        )

    mw = per_tool(handler, backend=InMemoryBackend())
    assert string_stream(mw, ["orig"], "c1") == (["", "", "a"], None)


def test_buffered_stream_emits_event_after_the_write() -> None:
    backend = InMemoryBackend()
    seen: list[tuple[ReductionEvent, dict[str, str]]] = []
    mw = per_tool(
        default_trunc_handler(by_id, 70, "read_file"),
        backend=backend,
        on_event=lambda e: seen.append((e, backend.files)),
    )
    string_stream(mw, S_CHUNKS, "54321")
    assert seen == [
        (
            ReductionEvent(
                phase="truncation",
                kind="tool",
                tool_name="t",
                call_id="54321",
                chars_before=199,
                chars_after=236,
                tokens_before=49,
                tokens_after=59,
                tokens_saved=-10,
                offload_path="/tmp/trunc/54321",
                streamed=True,
            ),
            {"/tmp/trunc/54321": S},
        )
    ]


def test_buffered_enhanced_stream_merges_text_chunks_before_truncating() -> None:
    """§3.2 step 1: the default handler concatenates the chunks, so one text part results."""
    backend = InMemoryBackend()
    mw = per_tool(default_trunc_handler(by_id, 70, "read_file"), backend=backend)
    out, error = enhanced_stream(mw, [result(text("first chunk")), result(text("x" * 80))], "e5")
    assert error is None
    assert out == [
        result(
            text(
                "<persisted-output>\nOutput too large (91). Full output saved to: /tmp/trunc/e5\n"
                "Preview (first 35):\nfirst chunk"
                + "x" * 24
                + "\n\nPreview (last 35):\n"
                + "x" * 35
                + "\n\nUse read_file to view\n</persisted-output>"
            )
        )
    ]
    assert backend.files == {"/tmp/trunc/e5": "first chunk" + "x" * 80}


def test_buffered_enhanced_stream_conflicting_media_fail_the_call() -> None:
    """§1.2: the same media type in two chunks cannot be joined."""
    mw = per_tool(default_trunc_handler(by_id, 10, "read_file"), backend=InMemoryBackend())
    wrapped = mw.wrap_enhanced_streamable_tool_call(
        emitting([result(text("x" * 20), AUDIO_A), result(AUDIO_B)]), ToolContext(name="t")
    )
    with pytest.raises(
        MessageError, match=r"^conflicting audio parts found in chunk 0 and chunk 1$"
    ):
        wrapped(ToolArgument())


def test_buffered_enhanced_stream_returns_the_handlers_chunks() -> None:
    """Case 19/20 for enhanced streams: whole results pass, and no-trunc replays the source."""
    replacement = [result(text("a"), IMAGE), result(text("b"))]

    def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult(need_trunc=True, stream_tool_result=iter(replacement))

    mw = per_tool(handler, backend=InMemoryBackend())
    assert enhanced_stream(mw, [result(text("orig"))], "c1") == (replacement, None)
    keep = per_tool(ReplacingHandler(need_trunc=False), backend=InMemoryBackend())
    source = [result(text("orig")), None]
    assert enhanced_stream(keep, source, "c1") == (source, None)
