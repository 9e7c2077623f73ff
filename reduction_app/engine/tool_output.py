"""Truncating an output a tool has already returned.

Where a framework runs the tools itself (LangChain, pydantic-ai, the Agents SDK, the
REST API's ``/truncate``, the simulator's replays), the engine cannot wrap the call: it
gets the output afterwards. :func:`truncate_output` and :func:`atruncate_output` put that
output through the truncation phase exactly as the ``wrap_*`` tool wrappers would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

from reduction_app.engine.tool_io import ToolArgument, ToolContext, ToolResult

if TYPE_CHECKING:
    from reduction_app.engine.middleware import ReductionMiddleware

__all__ = ["atruncate_output", "truncate_output"]


@overload
def truncate_output(
    middleware: ReductionMiddleware, output: str, tool_ctx: ToolContext, arguments: str = ""
) -> str: ...
@overload
def truncate_output(
    middleware: ReductionMiddleware, output: ToolResult, tool_ctx: ToolContext, arguments: str = ""
) -> ToolResult: ...
def truncate_output(
    middleware: ReductionMiddleware,
    output: str | ToolResult,
    tool_ctx: ToolContext,
    arguments: str = "",
) -> str | ToolResult:
    """``output`` (a ``str`` or a ``ToolResult``) of the call ``tool_ctx`` as the model
    should get it: the very object given when the phase leaves it alone, else the notice
    (the whole output saved to the backend first). ``arguments`` are the call's, as JSON
    text. An async handler or backend raises ``TypeError``: use :func:`atruncate_output`."""
    if isinstance(output, str):
        text: str = output
        return middleware.wrap_invokable_tool_call(lambda _: text, tool_ctx)(arguments)
    result: ToolResult = output
    return middleware.wrap_enhanced_invokable_tool_call(lambda _: result, tool_ctx)(
        ToolArgument(text=arguments)
    )


@overload
async def atruncate_output(
    middleware: ReductionMiddleware, output: str, tool_ctx: ToolContext, arguments: str = ""
) -> str: ...
@overload
async def atruncate_output(
    middleware: ReductionMiddleware, output: ToolResult, tool_ctx: ToolContext, arguments: str = ""
) -> ToolResult: ...
async def atruncate_output(
    middleware: ReductionMiddleware,
    output: str | ToolResult,
    tool_ctx: ToolContext,
    arguments: str = "",
) -> str | ToolResult:
    """:func:`truncate_output` for asyncio: takes async handlers and backends too."""
    if isinstance(output, str):
        text: str = output
        return await middleware.awrap_invokable_tool_call(lambda _: text, tool_ctx)(arguments)
    result: ToolResult = output
    return await middleware.awrap_enhanced_invokable_tool_call(lambda _: result, tool_ctx)(
        ToolArgument(text=arguments)
    )
