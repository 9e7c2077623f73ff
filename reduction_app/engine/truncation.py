"""The truncation phase: after a tool returns, a too-long output is offloaded whole
and replaced by a notice.

Buffered outputs (invokable tools, and streams given to a per-tool handler) go
through the tool's handler. Streams under the default handler are cut
incrementally: chunks pass until the limit, the rest is held back, and one closing
chunk carries the head of the cut chunk and a notice naming the offload file. A
source error after the limit replays everything held back, then raises.

The functions here build steps (see ``_steps.py``); the middleware runs them
synchronously or asynchronously.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from reduction_app.engine._steps import Steps, invoke
from reduction_app.engine.errors import ReductionError
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.notices import stream_notice
from reduction_app.engine.parts import flatten_tool_results, stringify, text_length, text_prefix
from reduction_app.engine.runtime import Resolved, Runtime
from reduction_app.engine.tool_io import (
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)

__all__ = [
    "StreamCut",
    "buffered_steps",
    "finish_stream_steps",
    "replay",
    "result_length",
    "stream_results",
    "string_length",
    "string_prefix",
    "text_of",
    "text_prefix",
]

C = TypeVar("C")


def text_of(parts: tuple[ToolOutputPart, ...] | list[ToolOutputPart]) -> str:
    """The text of a result, for event figures."""
    return "".join(p.text for p in parts if p.type == "text")


def buffered_steps(
    rt: Runtime, resolved: Resolved, detail: ToolDetail, *, streamed: bool
) -> Steps[TruncResult | None]:
    """Run the tool's handler on a whole output; offload; emit the event.

    ``None`` when the handler leaves the output alone.
    """
    assert resolved.handler is not None
    result = yield from invoke(resolved.handler, detail)
    name = detail.tool_context.name
    if not isinstance(result, TruncResult):
        raise ReductionError(f"trunc_handler for tool {name!r} returned {result!r}, not a TruncResult")
    if not result.need_trunc:
        return None
    replacement = result.stream_tool_result if streamed else result.tool_result
    if replacement is None:
        which = "stream_tool_result" if streamed else "tool_result"
        raise ReductionError(f"trunc_handler for tool {name!r} set need_trunc without {which}")
    if result.need_offload:
        yield from rt.offload("truncation", resolved.backend, result.offload_file_path, result.offload_content)
    if not streamed and result.tool_result is not None:
        before = text_of(detail.tool_result.parts) if detail.tool_result is not None else ""
        event = ReductionEvent(
            phase="truncation",
            kind="tool",
            tool_name=name,
            call_id=detail.tool_context.call_id,
            offload_path=result.offload_file_path if result.need_offload else "",
        )
        event = yield from rt.with_figures(event, before, text_of(result.tool_result.parts), "chat")
        yield from rt.emit(event)
    return result


def stream_event_steps(
    rt: Runtime, ctx: ToolContext, before: str, after: str, path: str
) -> Steps[None]:
    event = ReductionEvent(
        phase="truncation", kind="tool", tool_name=ctx.name, call_id=ctx.call_id,
        offload_path=path, streamed=True,
    )
    event = yield from rt.with_figures(event, before, after, "chat")
    yield from rt.emit(event)


@dataclass
class StreamCut(Generic[C]):
    """Incremental truncation of one stream of chunks (``str`` or :class:`ToolResult`).

    The limit is strict (decision 2): a stream of exactly ``limit`` characters passes.
    """

    limit: int
    length_of: Callable[[C], int]
    chunks: list[C] = field(default_factory=list)
    forwarded: int = 0
    trigger: int = -1
    """Index of the chunk that crossed the limit; -1 while under it."""
    prefix: Any = None

    @property
    def reached(self) -> bool:
        return self.trigger >= 0

    def feed(self, chunk: C, prefix_of: Callable[[C, int], Any]) -> bool:
        """Record ``chunk``; True when it is to be forwarded as it is."""
        self.chunks.append(chunk)
        if self.reached:
            return False
        size = self.length_of(chunk)
        if self.forwarded + size <= self.limit:
            self.forwarded += size
            return True
        self.trigger = len(self.chunks) - 1
        self.prefix = prefix_of(chunk, self.limit - self.forwarded)
        return False


def replay(cut: StreamCut[Any], *, enhanced: bool) -> Any:
    """Everything held back since the limit, as one chunk (used when the source fails)."""
    if enhanced:
        return ToolResult(parts=tuple(flatten_tool_results(cut.chunks[cut.trigger :])))
    return "".join(cut.chunks)[cut.forwarded :]


def finish_stream_steps(
    rt: Runtime, resolved: Resolved, ctx: ToolContext, arguments: str, cut: StreamCut[Any], *, enhanced: bool
) -> Steps[Any]:
    """Offload a cut stream and build its closing chunk. Offload failures never fail the
    stream: they are reported in the notice instead."""
    if enhanced:
        parts = flatten_tool_results(cut.chunks)
        full = ToolResult(parts=tuple(parts))
        content = stringify(parts)
        before = text_of(parts)
    else:
        content = before = "".join(cut.chunks)
        full = ToolResult.of_text(content)
    detail = ToolDetail(tool_context=ctx, tool_argument=ToolArgument(text=arguments), tool_result=full)
    handler = resolved.handler
    gen_path = getattr(handler, "gen_path", None)
    path, error = "", ""
    try:
        if gen_path is None:
            raise ReductionError("the default truncation handler has no path generator")
        path = yield from invoke(gen_path, detail)
        yield from rt.offload("truncation", resolved.backend, path, content)
    except Exception as exc:
        path, error = "", str(exc)
    cfg = rt.config
    notice = stream_notice(
        limit=cfg.max_length_for_trunc, file_path=path, read_tool_name=cfg.read_file_tool_name,
        error=error, language=cfg.language,
    )
    last: Any
    if enhanced:
        head = cut.prefix.parts if cut.prefix is not None else ()
        last = ToolResult(parts=(*head, ToolOutputPart.of_text(notice)))
        seen = text_of(flatten_tool_results(cut.chunks[: cut.trigger])) + text_of(last.parts)
    else:
        last = (cut.prefix or "") + notice
        seen = before[: cut.forwarded] + last
    yield from stream_event_steps(rt, ctx, before, seen, path)
    return last


def string_length(chunk: str) -> int:
    return len(chunk)


def string_prefix(chunk: str, budget: int) -> str:
    return chunk[: max(budget, 0)]


def result_length(chunk: ToolResult | None) -> int:
    return text_length(chunk.parts) if chunk is not None else 0


def stream_results(chunks: list[Any], error: BaseException | None, *, enhanced: bool) -> Iterator[ToolResult]:
    """A handler's view of a drained stream: the chunks as results, then the source error."""
    for chunk in chunks:
        yield chunk if enhanced else ToolResult.of_text(chunk)
    if error is not None:
        raise error

