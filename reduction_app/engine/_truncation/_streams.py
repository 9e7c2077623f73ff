"""Streamed tool output: the incremental default truncation (docs/behaviour.md §3.6,
decision 8) and the plumbing the stream wrappers share (draining, async iteration,
replay). Buffered streams (those of a per-tool handler) are ``_buffered``'s.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reduction_app.engine._steps import AwaitableInSyncPhase, Steps, invoke, run_async, run_sync
from reduction_app.engine._truncation._buffered import chunks_text, event_steps, text_of
from reduction_app.engine.errors import NoBackendError, OffloadError, ReductionError
from reduction_app.engine.notices import stream_notice
from reduction_app.engine.offload_json import joined_plain_text
from reduction_app.engine.parts import flatten_tool_results, stringify, text_length, text_prefix
from reduction_app.engine.tool_io import (
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
)

if TYPE_CHECKING:
    from reduction_app.engine.runtime import Resolved, Runtime

__all__ = [
    "StreamCut",
    "adrain",
    "aincremental",
    "aiter_source",
    "drain",
    "finish_stream_steps",
    "incremental",
    "replay",
    "replayed",
    "sync_source",
]


ALL_HELD: Any = object()
"""What :meth:`StreamCut.hold` returns when every chunk was held."""


@dataclass
class StreamCut:
    """Incremental truncation of one stream of chunks: ``str``, or :class:`ToolResult`
    (``enhanced``)."""

    limit: int
    enhanced: bool
    chunks: list[Any] = field(default_factory=list)
    forwarded: int = 0
    """Characters passed on unchanged."""
    trigger: int = -1
    """Index of the chunk that crossed the limit; -1 while under it."""
    prefix: Any = None
    """The head of the trigger chunk that fits the limit."""
    tool: str = ""
    """The tool's name, for error messages."""

    @property
    def reached(self) -> bool:
        return self.trigger >= 0

    def feed(self, chunk: Any) -> bool:
        """Record ``chunk``; True when it is to be forwarded as it is."""
        check_output(chunk, self.tool, self.enhanced, chunk=True)
        self.chunks.append(chunk)
        if self.reached:
            return False
        size = _length(chunk, self.enhanced)
        if self.forwarded + size <= self.limit:
            self.forwarded += size
            return True
        self.trigger = len(self.chunks) - 1
        budget = self.limit - self.forwarded
        self.prefix = text_prefix(chunk, budget) if self.enhanced else chunk[:budget]
        return False

    def hold(self, source: Iterator[Any]) -> Any:
        """Record every chunk left in ``source``, once the limit is reached.

        What :meth:`feed` does past the limit, without its per-chunk calls: a stream of
        tens of megabytes in small chunks spends most of its time here. A chunk of the
        wrong type stops the walk and is returned, for the caller to refuse outside its
        handling of source errors; :data:`ALL_HELD` when the source ran out.
        """
        append = self.chunks.append
        if self.enhanced:
            for chunk in source:
                if chunk is not None and not isinstance(chunk, ToolResult):
                    return chunk
                append(chunk)
            return ALL_HELD
        for chunk in source:
            if chunk == "":
                continue
            if not isinstance(chunk, str):
                return chunk
            append(chunk)
        return ALL_HELD

    async def ahold(self, source: AsyncIterator[Any]) -> Any:
        """:meth:`hold` for an asynchronous stream."""
        append = self.chunks.append
        async for chunk in source:
            if self.enhanced:
                if chunk is not None and not isinstance(chunk, ToolResult):
                    return chunk
            elif chunk == "":
                continue
            elif not isinstance(chunk, str):
                return chunk
            append(chunk)
        return ALL_HELD


def check_output(output: Any, tool: str, enhanced: bool, *, chunk: bool = False) -> None:
    """Refuse a tool output of the wrong type with a message naming the tool."""
    what = "a chunk" if chunk else "an output"
    if enhanced:
        if isinstance(output, ToolResult) or (chunk and output is None):
            return
        expected = "a ToolResult"
    else:
        if isinstance(output, str):
            return
        expected = "a str"
    raise ReductionError(
        f"tool {tool!r} produced {what} of type {type(output).__name__}, not {expected}"
    )


def _length(chunk: Any, enhanced: bool) -> int:
    if not enhanced:
        return len(chunk)
    return text_length(chunk.parts) if chunk is not None else 0


def replay(cut: StreamCut) -> Any:
    """Everything held back since the limit, as one chunk (used when the source fails)."""
    if cut.enhanced:
        return ToolResult(parts=tuple(flatten_tool_results(cut.chunks[cut.trigger :])))
    return "".join(cut.chunks)[cut.forwarded :]


def _failure_text(exc: Exception) -> str:
    """What a stream notice says about a failed offload (docs/behaviour.md §3.3): a failed
    write's own error, as the reference says it. Our OffloadError's phase and path are
    for the caller's logs and the buffered paths that raise it, not for the model."""
    if isinstance(exc, OffloadError) and not isinstance(exc, NoBackendError):
        return str(exc.cause)
    return str(exc)


def finish_stream_steps(
    rt: Runtime, resolved: Resolved, ctx: ToolContext, arguments: str, cut: StreamCut
) -> Steps[Any]:
    """Offload a cut stream and build its closing chunk; a failed offload is reported
    in the notice, not raised."""
    if cut.enhanced:
        parts = flatten_tool_results(cut.chunks)
        full = ToolResult(parts=tuple(parts))
        joined = joined_plain_text(parts) if rt.config.trunc_stream_text_raw else None
        content = stringify(parts) if joined is None else joined
    else:
        content = "".join(cut.chunks)
        full = ToolResult.of_text(content)
    detail = ToolDetail(
        tool_context=ctx, tool_argument=ToolArgument(text=arguments), tool_result=full
    )
    gen_path = getattr(resolved.handler, "gen_path", None)
    path, error = "", ""
    try:
        if gen_path is None:
            raise ReductionError("the default truncation handler has no path generator")
        path = yield from invoke(gen_path, detail)
        yield from rt.offload("truncation", resolved.backend, path, content)
    except AwaitableInSyncPhase:
        raise
    except Exception as exc:
        path, error = "", _failure_text(exc)
    cfg = rt.config
    notice = stream_notice(
        limit=cut.limit,
        file_path=path,
        read_tool_name=cfg.read_file_tool_name,
        error=error,
        language=cfg.language,
    )
    last: Any
    if cut.enhanced:
        head = cut.prefix.parts if cut.prefix is not None else ()
        last = ToolResult(parts=(*head, ToolOutputPart.of_text(notice)))
    else:
        last = cut.prefix + notice
    # The event's texts are the whole output again: made only for a listener.
    if rt.listening():
        if cut.enhanced:
            seen = chunks_text(cut.chunks[: cut.trigger], enhanced=True) + text_of(last.parts)
            before = chunks_text(cut.chunks, enhanced=True)
        else:
            seen = content[: cut.forwarded] + last
            before = content
        yield from event_steps(rt, ctx, before, seen, path, streamed=True)
    return last


def incremental(
    rt: Runtime,
    resolved: Resolved,
    ctx: ToolContext,
    arguments: str,
    source: Iterator[Any],
    *,
    enhanced: bool,
) -> Iterator[Any]:
    """The default streaming truncation of a synchronous stream."""
    limit = rt.trunc_limits.limit(ctx.name, arguments)
    cut = StreamCut(limit=limit, enhanced=enhanced, tool=ctx.name)
    # Under the limit a source error passes through as it is.
    for chunk in source:
        # Empty string chunks carry nothing; the reference drops them too.
        if not enhanced and chunk == "":
            continue
        if cut.feed(chunk):
            yield chunk
        if cut.reached:
            break
    if not cut.reached:
        return
    try:
        refused = cut.hold(source)
    except Exception:
        yield replay(cut)
        raise
    if refused is not ALL_HELD:
        check_output(refused, cut.tool, enhanced, chunk=True)
    yield run_sync(finish_stream_steps(rt, resolved, ctx, arguments, cut))


async def aincremental(
    rt: Runtime,
    resolved: Resolved,
    ctx: ToolContext,
    arguments: str,
    source: AsyncIterator[Any],
    *,
    enhanced: bool,
) -> AsyncIterator[Any]:
    """The default streaming truncation of an asynchronous stream."""
    limit = rt.trunc_limits.limit(ctx.name, arguments)
    cut = StreamCut(limit=limit, enhanced=enhanced, tool=ctx.name)
    async for chunk in source:
        if not enhanced and chunk == "":
            continue
        if cut.feed(chunk):
            yield chunk
        if cut.reached:
            break
    if not cut.reached:
        return
    try:
        refused = await cut.ahold(source)
    except Exception:
        yield replay(cut)
        raise
    if refused is not ALL_HELD:
        check_output(refused, cut.tool, enhanced, chunk=True)
    yield await run_async(finish_stream_steps(rt, resolved, ctx, arguments, cut))


def drain(source: Iterable[Any]) -> tuple[list[Any], Exception | None]:
    """Every chunk of ``source``, and the error it ended with, if any."""
    chunks: list[Any] = []
    try:
        for chunk in source:
            chunks.append(chunk)
    except Exception as exc:
        return chunks, exc
    return chunks, None


async def adrain(source: AsyncIterator[Any]) -> tuple[list[Any], Exception | None]:
    chunks: list[Any] = []
    try:
        async for chunk in source:
            chunks.append(chunk)
    except Exception as exc:
        return chunks, exc
    return chunks, None


async def aiter_source(source: Any) -> AsyncIterator[Any]:
    """Iterate what an async endpoint returned: an async iterator, a plain iterable, or
    an awaitable of either."""
    if inspect.isawaitable(source):
        source = await source
    if hasattr(source, "__aiter__"):
        async for chunk in source:
            yield chunk
    else:
        for chunk in source:
            yield chunk


def replayed(chunks: list[Any], error: Exception | None) -> Iterator[Any]:
    yield from chunks
    if error is not None:
        raise error


def sync_source(source: Any, ctx: ToolContext, method: str) -> Any:
    """Refuse what only an async wrapper can handle, with a message that says so."""
    kind = "an awaitable" if inspect.isawaitable(source) else "an async iterator"
    if kind == "an awaitable" or hasattr(source, "__aiter__"):
        if inspect.iscoroutine(source):
            source.close()
        raise TypeError(f"tool {ctx.name!r} returned {kind}; wrap async tools with {method}")
    return source
