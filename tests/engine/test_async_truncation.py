"""Tests for the ``awrap_*`` twins (decision 11): coroutine and async generator
endpoints, async handlers, path generators, event sinks and backends."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest

from reduction_app.engine import InMemoryBackend, WriteRequest, default_trunc_handler
from reduction_app.engine._storage._paths import content_digest
from reduction_app.engine.config import ReductionConfig, ToolReductionConfig
from reduction_app.engine.errors import NoBackendError, OffloadError, ReductionError
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.middleware import new
from reduction_app.engine.tool_io import (
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)

S = "hello world" * 10 + "\n" + "hello world" * 8
S_CHUNKS = [S[i : i + 20] for i in range(0, len(S), 20)]
ARGS = '{"location": "London, UK", "unit": "c"}'
NOTICE_12345 = (
    "<persisted-output>\nOutput too large (199). Full output saved to: /tmp/trunc/12345\n"
    "Preview (first 35):\nhello worldhello worldhello worldhe\n\n"
    "Preview (last 35):\nldhello worldhello worldhello world\n\n"
    "Use read_file to view\n</persisted-output>"
)


def saved(limit: int, path: str) -> str:
    return (
        f"<persisted-output>\nOutput truncated after {limit} characters were streamed. "
        f"Full output saved to: {path}. Use read_file to view. \n</persisted-output>"
    )


def text(value: str) -> ToolOutputPart:
    return ToolOutputPart.of_text(value)


class AsyncBackend:
    """An in-memory backend with coroutine methods that yield to the loop."""

    def __init__(self, *, fail: str = "") -> None:
        self.files: dict[str, str] = {}
        self.fail = fail

    async def write(self, request: WriteRequest) -> None:
        await asyncio.sleep(0)
        if self.fail:
            raise OSError(self.fail)
        self.files[request.file_path] = request.content

    async def read(self, path: str) -> str:
        await asyncio.sleep(0)
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(path) from None


async def acollect(stream: AsyncIterator[Any]) -> tuple[list[Any], Exception | None]:
    out: list[Any] = []
    try:
        async for chunk in stream:
            out.append(chunk)
    except Exception as exc:
        return out, exc
    return out, None


def agen(chunks: list[Any], error: Exception | None = None) -> Any:
    async def endpoint(argument: Any) -> AsyncIterator[Any]:
        for chunk in chunks:
            await asyncio.sleep(0)
            yield chunk
        if error is not None:
            raise error

    return endpoint


async def test_awrap_invokable_with_coroutine_endpoint_and_async_backend() -> None:
    """Case 1 through the async twin."""
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70))

    async def endpoint(arguments: str) -> str:
        await asyncio.sleep(0)
        return S

    wrapped = mw.awrap_invokable_tool_call(endpoint, ToolContext(name="t", call_id="12345"))
    assert inspect.iscoroutinefunction(wrapped)
    assert await wrapped(ARGS) == NOTICE_12345
    assert backend.files == {"/tmp/trunc/12345": S}


async def test_awrap_invokable_with_plain_endpoint() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70))
    wrapped = mw.awrap_invokable_tool_call(lambda a: S, ToolContext(name="t", call_id="12345"))
    assert await wrapped(ARGS) == NOTICE_12345
    assert backend.files == {"/tmp/trunc/12345": S}


async def test_awrap_invokable_short_output_passes() -> None:
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=199))
    wrapped = mw.awrap_invokable_tool_call(lambda a: S, ToolContext(name="t", call_id="c1"))
    assert await wrapped(ARGS) == S
    assert backend.files == {}


async def test_awrap_invokable_excluded_tool_still_returns_a_coroutine_function() -> None:
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), max_length_for_trunc=10, trunc_exclude_tools=["t"]
        )
    )
    wrapped = mw.awrap_invokable_tool_call(lambda a: "y" * 20, ToolContext(name="t"))
    assert inspect.iscoroutinefunction(wrapped)
    assert await wrapped(ARGS) == "y" * 20


async def test_awrap_invokable_async_write_failure_raises_offload_error() -> None:
    events: list[ReductionEvent] = []
    mw = new(
        ReductionConfig(
            backend=AsyncBackend(fail="disk full"), max_length_for_trunc=70, on_event=events.append
        )
    )
    wrapped = mw.awrap_invokable_tool_call(lambda a: S, ToolContext(name="t", call_id="c1"))
    with pytest.raises(
        OffloadError, match=r"^truncation: failed to write /tmp/trunc/c1: disk full$"
    ):
        await wrapped(ARGS)
    assert events == []


async def test_awrap_invokable_endpoint_error_passes_through() -> None:
    async def endpoint(arguments: str) -> str:
        raise LookupError("endpoint failed")

    mw = new(ReductionConfig(backend=InMemoryBackend()))
    with pytest.raises(LookupError, match=r"^endpoint failed$"):
        await mw.awrap_invokable_tool_call(endpoint, ToolContext(name="t"))(ARGS)


async def test_awrap_invokable_uniqueness_reads_an_async_backend() -> None:
    """Decision 7 with an async read: a reused id with new content gets a path named by
    its digest."""
    backend = AsyncBackend()
    backend.files["/tmp/trunc/call_1"] = "earlier content"
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = await mw.awrap_invokable_tool_call(
        lambda a: "z" * 20, ToolContext(name="t", call_id="call_1")
    )(ARGS)
    second = f"/tmp/trunc/call_1-{content_digest('z' * 20)[:12]}"
    assert f"Full output saved to: {second}\n" in out
    assert backend.files == {"/tmp/trunc/call_1": "earlier content", second: "z" * 20}


async def test_awrap_enhanced_invokable_with_async_handler_and_async_event_sink() -> None:
    seen: list[ToolDetail] = []
    events: list[ReductionEvent] = []

    async def handler(detail: ToolDetail) -> TruncResult:
        await asyncio.sleep(0)
        seen.append(detail)
        return TruncResult(
            need_trunc=True,
            tool_result=ToolResult.of_text("truncated"),
            need_offload=True,
            offload_file_path="/tmp/trunc/cid",
            offload_content="full content",
        )

    async def on_event(event: ReductionEvent) -> None:
        await asyncio.sleep(0)
        events.append(event)

    async def endpoint(argument: ToolArgument) -> ToolResult:
        return ToolResult.of_text("orig")

    backend = AsyncBackend()
    mw = new(
        ReductionConfig(
            backend=backend,
            on_event=on_event,
            tool_config={"t": ToolReductionConfig(trunc_handler=handler)},
        )
    )
    wrapped = mw.awrap_enhanced_invokable_tool_call(endpoint, ToolContext(name="t", call_id="cid"))
    assert await wrapped(ToolArgument(text=ARGS)) == ToolResult.of_text("truncated")
    assert seen[0].tool_result == ToolResult.of_text("orig")
    assert seen[0].tool_argument == ToolArgument(text=ARGS)
    assert backend.files == {"/tmp/trunc/cid": "full content"}
    assert events == [
        ReductionEvent(
            phase="truncation",
            kind="tool",
            tool_name="t",
            call_id="cid",
            chars_before=4,
            chars_after=9,
            tokens_before=1,
            tokens_after=2,
            tokens_saved=-1,
            offload_path="/tmp/trunc/cid",
        )
    ]


async def test_awrap_enhanced_invokable_no_trunc_returns_the_original_object() -> None:
    async def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult(need_trunc=False)

    result = ToolResult.of_text("orig")
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    assert (
        await mw.awrap_enhanced_invokable_tool_call(lambda a: result, ToolContext(name="t"))(
            ToolArgument()
        )
        is result
    )


async def test_awrap_enhanced_invokable_no_backend_raises() -> None:
    async def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult(need_trunc=True, tool_result=ToolResult.of_text("t"), need_offload=True)

    mw = new(
        ReductionConfig(
            skip_truncation=True, tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    wrapped = mw.awrap_enhanced_invokable_tool_call(
        lambda a: ToolResult.of_text("o"), ToolContext(name="t")
    )
    with pytest.raises(NoBackendError, match=r"^truncation: no backend for offload$"):
        await wrapped(ToolArgument())


async def test_awrap_enhanced_invokable_with_async_path_generator() -> None:
    """Case 17 with a coroutine path generator."""

    async def gen_path(detail: ToolDetail) -> str:
        await asyncio.sleep(0)
        return f"/custom/trunc/{detail.tool_context.call_id}"

    backend = AsyncBackend()
    mw = new(
        ReductionConfig(
            backend=backend, max_length_for_trunc=70, gen_trunc_offload_file_path=gen_path
        )
    )
    out = await mw.awrap_enhanced_invokable_tool_call(
        lambda a: ToolResult.of_text(S), ToolContext(name="t", call_id="custom_123")
    )(ToolArgument())
    assert out == ToolResult.of_text(
        NOTICE_12345.replace("/tmp/trunc/12345", "/custom/trunc/custom_123")
    )
    assert backend.files == {"/custom/trunc/custom_123": S}


async def test_awrap_streamable_incremental_with_async_generator() -> None:
    """Decision 8 through the async twin: chunks pass, one closing notice."""
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70))
    wrapped = mw.awrap_streamable_tool_call(agen(S_CHUNKS), ToolContext(name="t", call_id="54321"))
    assert inspect.isasyncgenfunction(wrapped)
    out = await acollect(wrapped(ARGS))
    assert out == ([*S_CHUNKS[:3], S[60:70] + saved(70, "/tmp/trunc/54321")], None)
    assert backend.files == {"/tmp/trunc/54321": S}


async def test_awrap_streamable_forwards_before_the_source_ends() -> None:
    pulled: list[int] = []

    async def endpoint(arguments: str) -> AsyncIterator[str]:
        for index, chunk in enumerate(S_CHUNKS):
            pulled.append(index)
            yield chunk

    mw = new(ReductionConfig(backend=AsyncBackend(), max_length_for_trunc=70))
    stream = mw.awrap_streamable_tool_call(endpoint, ToolContext(name="t", call_id="c1"))(ARGS)
    assert await stream.__anext__() == S_CHUNKS[0]
    assert pulled == [0]
    await stream.aclose()


async def test_awrap_streamable_accepts_a_coroutine_returning_a_list() -> None:
    async def endpoint(arguments: str) -> list[str]:
        return ["ab", "", "cd"]

    mw = new(ReductionConfig(backend=AsyncBackend(), max_length_for_trunc=10))
    assert await acollect(mw.awrap_streamable_tool_call(endpoint, ToolContext(name="t"))(ARGS)) == (
        ["ab", "cd"],
        None,
    )


async def test_awrap_streamable_exactly_the_limit_passes() -> None:
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    out = await acollect(
        mw.awrap_streamable_tool_call(agen(["x" * 10]), ToolContext(name="t"))(ARGS)
    )
    assert out == (["x" * 10], None)
    assert backend.files == {}


async def test_awrap_streamable_source_error_after_the_limit_replays_and_raises() -> None:
    error = ConnectionError("mock error")
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    stream = mw.awrap_streamable_tool_call(
        agen(["abc", "x" * 20, "tail"], error), ToolContext(name="t")
    )
    assert await acollect(stream(ARGS)) == (["abc", "x" * 20 + "tail"], error)
    assert backend.files == {}


async def test_awrap_streamable_after_the_limit_drops_empty_chunks_and_refuses_bad_ones() -> None:
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    wrap = mw.awrap_streamable_tool_call
    out = await acollect(
        wrap(agen(["abc", "x" * 20, "", "tail"]), ToolContext(name="t", call_id="c1"))(ARGS)
    )
    assert out == (["abc", "x" * 7 + saved(10, "/tmp/trunc/c1")], None)
    assert backend.files == {"/tmp/trunc/c1": "abc" + "x" * 20 + "tail"}
    chunks, error = await acollect(
        wrap(agen(["abc", "x" * 20, None, "tail"]), ToolContext(name="t", call_id="c2"))(ARGS)
    )
    assert chunks == ["abc"]
    assert isinstance(error, ReductionError)
    assert str(error) == "tool 't' produced a chunk of type NoneType, not a str"
    assert list(backend.files) == ["/tmp/trunc/c1"]


async def test_awrap_enhanced_streamable_after_the_limit_replays_a_source_error() -> None:
    error = ConnectionError("mock error")
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    chunks = [ToolResult.of_text("x" * 20), None, ToolResult.of_text("tail")]
    stream = mw.awrap_enhanced_streamable_tool_call(agen(chunks, error), ToolContext(name="t"))
    out = await acollect(stream(ToolArgument(text=ARGS)))
    assert out == ([ToolResult(parts=(text("x" * 20), text("tail")))], error)
    assert backend.files == {}


async def test_awrap_streamable_async_write_failure_is_reported_in_the_notice() -> None:
    mw = new(
        ReductionConfig(backend=AsyncBackend(fail="stream write error"), max_length_for_trunc=10)
    )
    out = await acollect(
        mw.awrap_streamable_tool_call(agen(["x" * 20]), ToolContext(name="t", call_id="s"))(ARGS)
    )
    assert out == (
        [
            "x" * 10 + "<persisted-output>\nOutput truncated after 10 characters were streamed.  "
            "Failed to save full output: stream write error.\n</persisted-output>"
        ],
        None,
    )


async def test_awrap_streamable_excluded_tool_passes() -> None:
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), max_length_for_trunc=10, trunc_exclude_tools=["t"]
        )
    )
    stream = mw.awrap_streamable_tool_call(agen(["x" * 20, "y"]), ToolContext(name="t"))
    assert inspect.isasyncgenfunction(stream)
    assert await acollect(stream(ARGS)) == (["x" * 20, "y"], None)


async def test_awrap_streamable_buffered_with_async_handler() -> None:
    """Case 20 (streaming) with a coroutine handler and the inherited global backend."""
    seen: list[list[ToolResult]] = []

    async def handler(detail: ToolDetail) -> TruncResult:
        assert detail.stream_tool_result is not None
        seen.append(list(detail.stream_tool_result))
        return TruncResult(
            need_trunc=True,
            stream_tool_result=iter([ToolResult.of_text("truncated")]),
            need_offload=True,
            offload_file_path="/tmp/trunc/cid",
            offload_content="full content",
        )

    backend = AsyncBackend()
    mw = new(
        ReductionConfig(
            backend=backend, tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    stream = mw.awrap_streamable_tool_call(agen(["or", "ig"]), ToolContext(name="t", call_id="cid"))
    assert await acollect(stream(ARGS)) == (["truncated"], None)
    assert seen == [[ToolResult.of_text("or"), ToolResult.of_text("ig")]]
    assert backend.files == {"/tmp/trunc/cid": "full content"}


async def test_awrap_streamable_buffered_default_handler() -> None:
    """Case 3 through the async twin."""
    backend = AsyncBackend()
    handler = default_trunc_handler(
        lambda d: f"/tmp/trunc/{d.tool_context.call_id}", 70, "read_file"
    )
    mw = new(
        ReductionConfig(
            skip_truncation=True,
            tool_config={"t": ToolReductionConfig(backend=backend, trunc_handler=handler)},
        )
    )
    stream = mw.awrap_streamable_tool_call(agen(S_CHUNKS), ToolContext(name="t", call_id="12345"))
    assert await acollect(stream(ARGS)) == ([NOTICE_12345], None)
    assert backend.files == {"/tmp/trunc/12345": S}


async def test_awrap_streamable_buffered_source_error_replays_everything() -> None:
    """Case 15 through the async twin."""
    error = RuntimeError("mock error")
    handler = default_trunc_handler(lambda d: "/tmp/trunc/x", 70, "read_file")
    backend = AsyncBackend()
    mw = new(
        ReductionConfig(
            backend=backend, tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    stream = mw.awrap_streamable_tool_call(agen(S_CHUNKS, error), ToolContext(name="t"))
    assert await acollect(stream(ARGS)) == (S_CHUNKS, error)
    assert backend.files == {}


async def test_awrap_streamable_buffered_write_failure_raises() -> None:
    handler = default_trunc_handler(lambda d: "/tmp/trunc/x", 70, "read_file")
    mw = new(
        ReductionConfig(
            backend=AsyncBackend(fail="disk full"),
            tool_config={"t": ToolReductionConfig(trunc_handler=handler)},
        )
    )
    out, error = await acollect(
        mw.awrap_streamable_tool_call(agen(S_CHUNKS), ToolContext(name="t"))(ARGS)
    )
    assert out == []
    assert isinstance(error, OffloadError)
    assert str(error) == "truncation: failed to write /tmp/trunc/x: disk full"


async def test_awrap_enhanced_streamable_incremental_with_async_generator() -> None:
    """Case 13 through the async twin: [20 x], [tail] gives JSON."""
    backend = AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    chunks = [ToolResult.of_text("x" * 20), ToolResult.of_text("tail")]
    stream = mw.awrap_enhanced_streamable_tool_call(
        agen(chunks), ToolContext(name="t", call_id="e")
    )
    assert inspect.isasyncgenfunction(stream)
    out = await acollect(stream(ToolArgument()))
    assert out == ([ToolResult(parts=(text("x" * 10), text(saved(10, "/tmp/trunc/e"))))], None)
    assert backend.files == {
        "/tmp/trunc/e": (
            '[\n  {\n    "type": "text",\n    "text": "' + "x" * 20 + '"\n  },\n'
            '  {\n    "type": "text",\n    "text": "tail"\n  }\n]'
        )
    }


async def test_awrap_enhanced_streamable_source_error_before_the_limit() -> None:
    """Case 10 through the async twin."""
    error = ValueError("source failed")
    mw = new(ReductionConfig(backend=AsyncBackend(), max_length_for_trunc=10))
    stream = mw.awrap_enhanced_streamable_tool_call(
        agen([ToolResult.of_text("ok")], error), ToolContext(name="t")
    )
    assert await acollect(stream(ToolArgument())) == ([ToolResult.of_text("ok")], error)


async def test_awrap_enhanced_streamable_buffered_with_async_handler() -> None:
    replacement = [ToolResult.of_text("a"), ToolResult.of_text("b")]

    async def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult(need_trunc=True, stream_tool_result=iter(replacement))

    mw = new(
        ReductionConfig(
            backend=AsyncBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    stream = mw.awrap_enhanced_streamable_tool_call(
        agen([ToolResult.of_text("orig")]), ToolContext(name="t")
    )
    assert await acollect(stream(ToolArgument())) == (replacement, None)
