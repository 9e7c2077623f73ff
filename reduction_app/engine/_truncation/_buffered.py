"""The truncation phase for buffered outputs (docs/behaviour.md §3): after a tool returns,
its handler may replace a too-long output, the whole of it offloaded first; a failed
offload fails the call and leaves the output as it was. Streams under the default
handler are cut incrementally by ``_streams``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from reduction_app.engine._steps import Steps, invoke
from reduction_app.engine.errors import ReductionError
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.parts import flatten_tool_results
from reduction_app.engine.tool_io import (
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)

if TYPE_CHECKING:
    from reduction_app.engine.runtime import Resolved, Runtime

__all__ = [
    "buffered_steps",
    "buffered_stream_steps",
    "event_steps",
    "first_text",
    "stream_results",
    "text_of",
]


def text_of(parts: Sequence[ToolOutputPart]) -> str:
    """The text of a result, for event figures."""
    return "".join(p.text for p in parts if p.type == "text")


def first_text(result: ToolResult | None) -> str:
    """What a string tool returns for a result: the first part's text.

    See docs/behaviour.md §3.5 step 4.
    """
    if result is None or not result.parts:
        return ""
    return result.parts[0].text


def chunks_text(chunks: Sequence[Any], *, enhanced: bool) -> str:
    """The text of a stream's chunks (``str`` or :class:`ToolResult`)."""
    if enhanced:
        return text_of(flatten_tool_results(chunks))
    return "".join(chunks)


def event_steps(
    rt: Runtime, ctx: ToolContext, before: str, after: str, path: str, *, streamed: bool
) -> Steps[None]:
    """Emit the truncation event of one call, with figures for ``before`` → ``after``.

    Counting costs a pass over the output, so nothing is counted without a listener or a
    recording span."""
    if not rt.listening():
        return
    event = ReductionEvent(
        phase="truncation",
        kind="tool",
        tool_name=ctx.name,
        call_id=ctx.call_id,
        offload_path=path,
        streamed=streamed,
    )
    event = yield from rt.with_figures(event, before, after, "chat")
    yield from rt.emit(event)


def _handle_steps(
    rt: Runtime, resolved: Resolved, detail: ToolDetail, *, streamed: bool
) -> Steps[TruncResult | None]:
    """Run the handler and perform the offload it asks for; ``None`` when it declines."""
    assert resolved.handler is not None
    result = yield from invoke(resolved.handler, detail)
    name = detail.tool_context.name
    if not isinstance(result, TruncResult):
        raise ReductionError(
            f"trunc_handler for tool {name!r} returned {result!r}, not a TruncResult"
        )
    if not result.need_trunc:
        return None
    replacement = result.stream_tool_result if streamed else result.tool_result
    if replacement is None:
        which = "stream_tool_result" if streamed else "tool_result"
        raise ReductionError(f"trunc_handler for tool {name!r} set need_trunc without {which}")
    if result.need_offload:
        yield from rt.offload(
            "truncation", resolved.backend, result.offload_file_path, result.offload_content
        )
    return result


def _path(result: TruncResult) -> str:
    return result.offload_file_path if result.need_offload else ""


def buffered_steps(
    rt: Runtime, resolved: Resolved, detail: ToolDetail, *, first_only: bool = False
) -> Steps[ToolResult | None]:
    """Truncate a whole output; the replacement result, or ``None`` to keep the output.

    ``first_only`` for string tools, which return only the first part's text: the
    event then measures what the caller gets.
    """
    result = yield from _handle_steps(rt, resolved, detail, streamed=False)
    if result is None or result.tool_result is None:
        return None
    before = text_of(detail.tool_result.parts) if detail.tool_result is not None else ""
    replacement = result.tool_result
    after = first_text(replacement) if first_only else text_of(replacement.parts)
    yield from event_steps(rt, detail.tool_context, before, after, _path(result), streamed=False)
    return replacement


def buffered_stream_steps(
    rt: Runtime,
    resolved: Resolved,
    ctx: ToolContext,
    arguments: str,
    chunks: list[Any],
    error: Exception | None,
    *,
    enhanced: bool,
) -> Steps[list[Any] | None]:
    """Truncate a drained stream through a per-tool handler (docs/behaviour.md §3.5, buffered path).

    The replacement chunks, mapped for string streams to each chunk's first text;
    ``None`` when the handler keeps the stream (the caller then replays it, error and all).
    """
    detail = ToolDetail(
        tool_context=ctx,
        tool_argument=ToolArgument(text=arguments),
        stream_tool_result=stream_results(chunks, error, enhanced=enhanced),
    )
    result = yield from _handle_steps(rt, resolved, detail, streamed=True)
    if result is None or result.stream_tool_result is None:
        return None
    out = [chunk if enhanced else first_text(chunk) for chunk in result.stream_tool_result]
    before = chunks_text(chunks, enhanced=enhanced)
    after = chunks_text(out, enhanced=enhanced)
    yield from event_steps(rt, ctx, before, after, _path(result), streamed=True)
    return out


def stream_results(
    chunks: list[Any], error: BaseException | None, *, enhanced: bool
) -> Iterator[ToolResult]:
    """A handler's view of a drained stream: the chunks as results, then the source error."""
    for chunk in chunks:
        yield chunk if enhanced else ToolResult.of_text(chunk)
    if error is not None:
        raise error
