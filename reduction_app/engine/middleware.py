"""The reduction middleware: tool-call wrappers (truncation) and the pre-model hook
(clear), for synchronous and asyncio agents alike.

``new(config)`` validates the config and returns a :class:`ReductionMiddleware`.
One middleware serves chat messages and agentic messages (the reference's
``NewTyped``): the clear phase reads whichever style the state holds.

Sync wrappers take plain callables and iterators; the ``a``-prefixed twins take
coroutine functions and async generator functions (plain ones too), and accept
async handlers, counters, rewriters and backends.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any

from reduction_app.engine._steps import run_async, run_sync
from reduction_app.engine.clear import ChatModelAgentState, clear_steps
from reduction_app.engine.config import ReductionConfig, validate
from reduction_app.engine.runtime import Resolved, Runtime
from reduction_app.engine.tool_io import ToolArgument, ToolContext, ToolDetail, ToolResult
from reduction_app.engine.truncation import (
    StreamCut,
    buffered_steps,
    finish_stream_steps,
    replay,
    result_length,
    stream_results,
    string_length,
    string_prefix,
    text_prefix,
)

__all__ = ["ReductionMiddleware", "new"]

StrEndpoint = Callable[[str], str]
StrStreamEndpoint = Callable[[str], Iterable[str]]
EnhancedEndpoint = Callable[[ToolArgument], ToolResult]
EnhancedStreamEndpoint = Callable[[ToolArgument], Iterable[ToolResult]]


def new(config: ReductionConfig | None) -> ReductionMiddleware:
    """Build the middleware; a bad config raises :class:`ConfigError` naming the field."""
    return ReductionMiddleware(validate(config))


def _first_text(result: ToolResult | None) -> str:
    if result is None or not result.parts:
        return ""
    return result.parts[0].text


def _drain(source: Iterable[Any]) -> tuple[list[Any], Exception | None]:
    chunks: list[Any] = []
    try:
        for chunk in source:
            chunks.append(chunk)
    except Exception as exc:
        return chunks, exc
    return chunks, None


async def _adrain(source: Any) -> tuple[list[Any], Exception | None]:
    chunks: list[Any] = []
    try:
        async for chunk in _aiter(source):
            chunks.append(chunk)
    except Exception as exc:
        return chunks, exc
    return chunks, None


async def _aiter(source: Any) -> AsyncIterator[Any]:
    if inspect.isawaitable(source):
        source = await source
    if hasattr(source, "__aiter__"):
        async for chunk in source:
            yield chunk
    else:
        for chunk in source:
            yield chunk


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _replayed(chunks: list[Any], error: Exception | None) -> Iterator[Any]:
    yield from chunks
    if error is not None:
        raise error


class ReductionMiddleware:
    """Truncation around tool calls and clearing before model calls, for one config."""

    def __init__(self, config: ReductionConfig) -> None:
        self._rt = Runtime(config)

    @property
    def config(self) -> ReductionConfig:
        """The config in force, with defaults filled in."""
        return self._rt.config

    # Truncation, buffered ------------------------------------------------------------

    def wrap_invokable_tool_call(self, endpoint: StrEndpoint, tool_ctx: ToolContext) -> StrEndpoint:
        resolved = self._rt.trunc_for(tool_ctx.name)
        if resolved is None:
            return endpoint

        def wrapped(arguments: str) -> str:
            output = endpoint(arguments)
            result = run_sync(self._buffered(resolved, tool_ctx, arguments, ToolResult.of_text(output)))
            return output if result is None else _first_text(result.tool_result)

        return wrapped

    def wrap_enhanced_invokable_tool_call(
        self, endpoint: EnhancedEndpoint, tool_ctx: ToolContext
    ) -> EnhancedEndpoint:
        resolved = self._rt.trunc_for(tool_ctx.name)
        if resolved is None:
            return endpoint

        def wrapped(argument: ToolArgument) -> ToolResult:
            output = endpoint(argument)
            result = run_sync(self._buffered(resolved, tool_ctx, argument.text, output))
            return output if result is None or result.tool_result is None else result.tool_result

        return wrapped

    def _buffered(self, resolved: Resolved, ctx: ToolContext, arguments: str, output: ToolResult) -> Any:
        detail = ToolDetail(tool_context=ctx, tool_argument=ToolArgument(text=arguments), tool_result=output)
        return buffered_steps(self._rt, resolved, detail, streamed=False)

    # Truncation, streams -------------------------------------------------------------

    def wrap_streamable_tool_call(
        self, endpoint: StrStreamEndpoint, tool_ctx: ToolContext
    ) -> Callable[[str], Iterator[str]]:
        return self._wrap_stream(endpoint, tool_ctx, enhanced=False)  # type: ignore[arg-type]

    def wrap_enhanced_streamable_tool_call(
        self, endpoint: EnhancedStreamEndpoint, tool_ctx: ToolContext
    ) -> Callable[[ToolArgument], Iterator[ToolResult]]:
        return self._wrap_stream(endpoint, tool_ctx, enhanced=True)  # type: ignore[arg-type]

    def _wrap_stream(self, endpoint: Callable[[Any], Iterable[Any]], ctx: ToolContext, *, enhanced: bool) -> Any:
        resolved = self._rt.trunc_for(ctx.name)
        if resolved is None:
            return endpoint

        def wrapped(argument: Any) -> Iterator[Any]:
            source = endpoint(argument)
            arguments = argument.text if enhanced else argument
            if resolved.is_default:
                return self._incremental(resolved, ctx, arguments, iter(source), enhanced=enhanced)
            chunks, error = _drain(source)
            result = run_sync(self._stream_handler(resolved, ctx, arguments, chunks, error, enhanced))
            if result is None:
                return _replayed(chunks, error)
            return self._stream_output(result.stream_tool_result, enhanced)

        return wrapped

    def _cut(self, enhanced: bool) -> StreamCut[Any]:
        length = result_length if enhanced else string_length
        return StreamCut(limit=self._rt.config.max_length_for_trunc, length_of=length)

    def _incremental(
        self, resolved: Resolved, ctx: ToolContext, arguments: str, source: Iterator[Any], *, enhanced: bool
    ) -> Iterator[Any]:
        cut = self._cut(enhanced)
        prefix_of = text_prefix if enhanced else string_prefix
        while True:
            try:
                chunk = next(source)
            except StopIteration:
                break
            except Exception:
                if not cut.reached:
                    raise
                yield replay(cut, enhanced=enhanced)
                raise
            if not enhanced and chunk == "":
                continue
            if cut.feed(chunk, prefix_of):
                yield chunk
        if cut.reached:
            yield run_sync(finish_stream_steps(self._rt, resolved, ctx, arguments, cut, enhanced=enhanced))

    def _stream_handler(
        self, resolved: Resolved, ctx: ToolContext, arguments: str, chunks: list[Any],
        error: Exception | None, enhanced: bool,
    ) -> Any:
        detail = ToolDetail(
            tool_context=ctx,
            tool_argument=ToolArgument(text=arguments),
            stream_tool_result=stream_results(chunks, error, enhanced=enhanced),
        )
        return buffered_steps(self._rt, resolved, detail, streamed=True)

    @staticmethod
    def _stream_output(stream: Iterator[ToolResult] | None, enhanced: bool) -> Iterator[Any]:
        for chunk in stream or ():
            yield chunk if enhanced else _first_text(chunk)

    # Clear ---------------------------------------------------------------------------

    def before_model_rewrite_state(self, state: ChatModelAgentState) -> ChatModelAgentState:
        """The clear phase; returns a new state, or ``state`` itself when nothing applies."""
        return run_sync(clear_steps(self._rt, state))

    async def abefore_model_rewrite_state(self, state: ChatModelAgentState) -> ChatModelAgentState:
        return await run_async(clear_steps(self._rt, state))

    # Async twins ---------------------------------------------------------------------

    def awrap_invokable_tool_call(
        self, endpoint: Callable[[str], Awaitable[str] | str], tool_ctx: ToolContext
    ) -> Callable[[str], Awaitable[str]]:
        resolved = self._rt.trunc_for(tool_ctx.name)

        async def wrapped(arguments: str) -> str:
            output = await _maybe_await(endpoint(arguments))
            if resolved is None:
                return output  # type: ignore[no-any-return]
            result = await run_async(self._buffered(resolved, tool_ctx, arguments, ToolResult.of_text(output)))
            return output if result is None else _first_text(result.tool_result)  # type: ignore[no-any-return]

        return wrapped

    def awrap_enhanced_invokable_tool_call(
        self, endpoint: Callable[[ToolArgument], Awaitable[ToolResult] | ToolResult], tool_ctx: ToolContext
    ) -> Callable[[ToolArgument], Awaitable[ToolResult]]:
        resolved = self._rt.trunc_for(tool_ctx.name)

        async def wrapped(argument: ToolArgument) -> ToolResult:
            output = await _maybe_await(endpoint(argument))
            if resolved is None:
                return output  # type: ignore[no-any-return]
            result = await run_async(self._buffered(resolved, tool_ctx, argument.text, output))
            return output if result is None or result.tool_result is None else result.tool_result  # type: ignore[no-any-return]

        return wrapped

    def awrap_streamable_tool_call(
        self, endpoint: Callable[[str], Any], tool_ctx: ToolContext
    ) -> Callable[[str], AsyncIterator[str]]:
        return self._awrap_stream(endpoint, tool_ctx, enhanced=False)

    def awrap_enhanced_streamable_tool_call(
        self, endpoint: Callable[[ToolArgument], Any], tool_ctx: ToolContext
    ) -> Callable[[ToolArgument], AsyncIterator[ToolResult]]:
        return self._awrap_stream(endpoint, tool_ctx, enhanced=True)

    def _awrap_stream(self, endpoint: Callable[[Any], Any], ctx: ToolContext, *, enhanced: bool) -> Any:
        resolved = self._rt.trunc_for(ctx.name)

        async def wrapped(argument: Any) -> AsyncIterator[Any]:
            source = _aiter(endpoint(argument))
            arguments = argument.text if enhanced else argument
            if resolved is None:
                async for chunk in source:
                    yield chunk
                return
            if resolved.is_default:
                async for chunk in self._aincremental(resolved, ctx, arguments, source, enhanced=enhanced):
                    yield chunk
                return
            chunks, error = await _adrain(source)
            result = await run_async(self._stream_handler(resolved, ctx, arguments, chunks, error, enhanced))
            if result is None:
                for chunk in chunks:
                    yield chunk
                if error is not None:
                    raise error
                return
            for chunk in self._stream_output(result.stream_tool_result, enhanced):
                yield chunk

        return wrapped

    async def _aincremental(
        self, resolved: Resolved, ctx: ToolContext, arguments: str, source: AsyncIterator[Any], *, enhanced: bool
    ) -> AsyncIterator[Any]:
        cut = self._cut(enhanced)
        prefix_of = text_prefix if enhanced else string_prefix
        while True:
            try:
                chunk = await source.__anext__()
            except StopAsyncIteration:
                break
            except Exception:
                if not cut.reached:
                    raise
                yield replay(cut, enhanced=enhanced)
                raise
            if not enhanced and chunk == "":
                continue
            if cut.feed(chunk, prefix_of):
                yield chunk
        if cut.reached:
            yield await run_async(finish_stream_steps(self._rt, resolved, ctx, arguments, cut, enhanced=enhanced))
