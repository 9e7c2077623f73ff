"""The reduction middleware: tool-call wrappers (truncation) and the pre-model hook
(clear) over one config, for sync and asyncio agents alike. One middleware serves chat
and agentic messages (the reference's ``NewTyped``); the ``a``-prefixed twins also take
async endpoints, handlers, counters, rewriters and backends.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any

from reduction_app.engine._clear._phase import ChatModelAgentState, ClearMemory, clear_steps
from reduction_app.engine._steps import run_async, run_sync
from reduction_app.engine._truncation._buffered import (
    buffered_steps,
    buffered_stream_steps,
    first_text,
)
from reduction_app.engine._truncation._streams import (
    adrain,
    aincremental,
    aiter_source,
    check_output,
    drain,
    incremental,
    replayed,
    sync_source,
)
from reduction_app.engine.config import ReductionConfig, validate
from reduction_app.engine.runtime import Resolved, Runtime
from reduction_app.engine.tool_io import ToolArgument, ToolContext, ToolDetail, ToolResult

__all__ = ["ReductionMiddleware", "new"]

StrEndpoint = Callable[[str], str]
StrStreamEndpoint = Callable[[str], Iterable[str]]
EnhancedEndpoint = Callable[[ToolArgument], ToolResult]
EnhancedStreamEndpoint = Callable[[ToolArgument], Iterable[ToolResult]]


def new(config: ReductionConfig | None) -> ReductionMiddleware:
    """Build the middleware; a bad config raises :class:`ConfigError` naming the field."""
    return ReductionMiddleware(validate(config))


def _detail(ctx: ToolContext, arguments: str, output: ToolResult) -> ToolDetail:
    return ToolDetail(
        tool_context=ctx, tool_argument=ToolArgument(text=arguments), tool_result=output
    )


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class ReductionMiddleware:
    """Truncation around tool calls and clearing before model calls, for one config.

    A tool that is excluded, or whose resolved config has no trunc handler, gets its
    endpoint back unchanged from the sync wrappers (the async ones still wrap it, so
    they can always be awaited / iterated asynchronously).
    """

    def __init__(self, config: ReductionConfig) -> None:
        self._rt = Runtime(config)
        self._memory = ClearMemory(self._rt.config)

    @property
    def config(self) -> ReductionConfig:
        """The config in force, with defaults filled in."""
        return self._rt.config

    @property
    def clear_reads_from(self) -> int:
        """Where the next clear pass starts going through calls, when it is handed the
        list the last one returned plus new messages: the first assistant message with
        tool calls that no pass has gone through (0 before the first pass). Calls before
        it are neither cleared nor read again."""
        marks = self._memory.landmarks
        return 0 if marks is None else marks.calls_from

    def set_telemetry(
        self, *, config_name: str | None = None, conversation_id: str | None = None
    ) -> None:
        """Name the config (``reduction.config``) and the conversation
        (``reduction.conversation_id``) on the span events of this middleware's events;
        ``None`` leaves a name as it is, ``""`` removes it (docs/engine.md, "Reductions
        in your traces")."""
        labels = self._rt.telemetry
        if config_name is not None:
            labels.config_name = config_name
        if conversation_id is not None:
            labels.conversation_id = conversation_id

    def _sync_trunc_for(self, ctx: ToolContext, twin: str) -> Resolved | None:
        """The tool's truncation config, refusing (before the tool runs, so nothing it
        returns is lost) an async handler or backend in a synchronous wrapper."""
        resolved = self._rt.trunc_for(ctx.name)
        if resolved is not None:
            backend = resolved.backend
            handler = resolved.handler
            suspects = [
                getattr(backend, "write", None),
                getattr(backend, "read", None),
                getattr(backend, "digest", None),
                handler,
                getattr(handler, "__call__", None),  # noqa: B004 - a class with async __call__
            ]
            if any(inspect.iscoroutinefunction(f) for f in suspects if f is not None):
                raise TypeError(
                    f"tool {ctx.name!r} has an async handler or backend; wrap it with {twin}"
                )
        return resolved

    # Truncation, buffered ------------------------------------------------------------

    def wrap_invokable_tool_call(self, endpoint: StrEndpoint, tool_ctx: ToolContext) -> StrEndpoint:
        resolved = self._sync_trunc_for(tool_ctx, "awrap_invokable_tool_call")
        if resolved is None:
            return endpoint

        def wrapped(arguments: str) -> str:
            output = sync_source(endpoint(arguments), tool_ctx, "awrap_invokable_tool_call")
            check_output(output, tool_ctx.name, enhanced=False)
            detail = _detail(tool_ctx, arguments, ToolResult.of_text(output))
            result = run_sync(buffered_steps(self._rt, resolved, detail, first_only=True))
            return output if result is None else first_text(result)

        return wrapped

    def wrap_enhanced_invokable_tool_call(
        self, endpoint: EnhancedEndpoint, tool_ctx: ToolContext
    ) -> EnhancedEndpoint:
        resolved = self._sync_trunc_for(tool_ctx, "awrap_enhanced_invokable_tool_call")
        if resolved is None:
            return endpoint

        def wrapped(argument: ToolArgument) -> ToolResult:
            method = "awrap_enhanced_invokable_tool_call"
            output = sync_source(endpoint(argument), tool_ctx, method)
            check_output(output, tool_ctx.name, enhanced=True)
            result = run_sync(
                buffered_steps(self._rt, resolved, _detail(tool_ctx, argument.text, output))
            )
            return output if result is None else result

        return wrapped

    # Truncation, streams -------------------------------------------------------------

    def wrap_streamable_tool_call(
        self, endpoint: StrStreamEndpoint, tool_ctx: ToolContext
    ) -> Callable[[str], Iterable[str]]:
        wrapped: Callable[[str], Iterable[str]] = self._wrap_stream(
            endpoint, tool_ctx, enhanced=False
        )
        return wrapped

    def wrap_enhanced_streamable_tool_call(
        self, endpoint: EnhancedStreamEndpoint, tool_ctx: ToolContext
    ) -> Callable[[ToolArgument], Iterable[ToolResult]]:
        wrapped: Callable[[ToolArgument], Iterable[ToolResult]] = self._wrap_stream(
            endpoint, tool_ctx, enhanced=True
        )
        return wrapped

    def _wrap_stream(
        self, endpoint: Callable[[Any], Iterable[Any]], ctx: ToolContext, *, enhanced: bool
    ) -> Any:
        twin = "awrap_enhanced_streamable_tool_call" if enhanced else "awrap_streamable_tool_call"
        resolved = self._sync_trunc_for(ctx, twin)
        if resolved is None:
            return endpoint
        method = "awrap_enhanced_streamable_tool_call" if enhanced else "awrap_streamable_tool_call"

        def wrapped(argument: Any) -> Iterator[Any]:
            source = sync_source(endpoint(argument), ctx, method)
            arguments = argument.text if enhanced else argument
            if resolved.is_default:
                return incremental(
                    self._rt, resolved, ctx, arguments, iter(source), enhanced=enhanced
                )
            chunks, error = drain(source)
            out = run_sync(
                buffered_stream_steps(
                    self._rt, resolved, ctx, arguments, chunks, error, enhanced=enhanced
                )
            )
            return replayed(chunks, error) if out is None else iter(out)

        return wrapped

    # Clear ---------------------------------------------------------------------------

    def before_model_rewrite_state(self, state: ChatModelAgentState) -> ChatModelAgentState:
        """The clear phase; returns a new state, or ``state`` itself when nothing applies."""
        return run_sync(clear_steps(self._rt, self._memory, state))

    async def abefore_model_rewrite_state(self, state: ChatModelAgentState) -> ChatModelAgentState:
        return await run_async(clear_steps(self._rt, self._memory, state))

    # Async twins ---------------------------------------------------------------------

    def awrap_invokable_tool_call(
        self, endpoint: Callable[[str], Awaitable[str] | str], tool_ctx: ToolContext
    ) -> Callable[[str], Awaitable[str]]:
        resolved = self._rt.trunc_for(tool_ctx.name)

        async def wrapped(arguments: str) -> str:
            output: str = await _maybe_await(endpoint(arguments))
            if resolved is None:
                return output
            check_output(output, tool_ctx.name, enhanced=False)
            detail = _detail(tool_ctx, arguments, ToolResult.of_text(output))
            result = await run_async(buffered_steps(self._rt, resolved, detail, first_only=True))
            return output if result is None else first_text(result)

        return wrapped

    def awrap_enhanced_invokable_tool_call(
        self,
        endpoint: Callable[[ToolArgument], Awaitable[ToolResult] | ToolResult],
        tool_ctx: ToolContext,
    ) -> Callable[[ToolArgument], Awaitable[ToolResult]]:
        resolved = self._rt.trunc_for(tool_ctx.name)

        async def wrapped(argument: ToolArgument) -> ToolResult:
            output: ToolResult = await _maybe_await(endpoint(argument))
            if resolved is None:
                return output
            check_output(output, tool_ctx.name, enhanced=True)
            detail = _detail(tool_ctx, argument.text, output)
            result = await run_async(buffered_steps(self._rt, resolved, detail))
            return output if result is None else result

        return wrapped

    def awrap_streamable_tool_call(
        self, endpoint: Callable[[str], Any], tool_ctx: ToolContext
    ) -> Callable[[str], AsyncIterator[str]]:
        wrapped: Callable[[str], AsyncIterator[str]] = self._awrap_stream(
            endpoint, tool_ctx, enhanced=False
        )
        return wrapped

    def awrap_enhanced_streamable_tool_call(
        self, endpoint: Callable[[ToolArgument], Any], tool_ctx: ToolContext
    ) -> Callable[[ToolArgument], AsyncIterator[ToolResult]]:
        wrapped: Callable[[ToolArgument], AsyncIterator[ToolResult]] = self._awrap_stream(
            endpoint, tool_ctx, enhanced=True
        )
        return wrapped

    def _awrap_stream(
        self, endpoint: Callable[[Any], Any], ctx: ToolContext, *, enhanced: bool
    ) -> Any:
        resolved = self._rt.trunc_for(ctx.name)
        rt = self._rt

        async def wrapped(argument: Any) -> AsyncIterator[Any]:
            source = aiter_source(endpoint(argument))
            arguments = argument.text if enhanced else argument
            if resolved is None:
                async for chunk in source:
                    yield chunk
                return
            if resolved.is_default:
                async for chunk in aincremental(
                    rt, resolved, ctx, arguments, source, enhanced=enhanced
                ):
                    yield chunk
                return
            chunks, error = await adrain(source)
            out = await run_async(
                buffered_stream_steps(
                    rt, resolved, ctx, arguments, chunks, error, enhanced=enhanced
                )
            )
            for chunk in replayed(chunks, error) if out is None else out:
                yield chunk

        return wrapped
