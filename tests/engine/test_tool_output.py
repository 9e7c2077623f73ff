"""Truncating an output a tool already returned: the same as wrapping the tool."""

from __future__ import annotations

import asyncio

import pytest

from reduction_app.engine import (
    InMemoryBackend,
    ReductionConfig,
    ToolContext,
    ToolOutputPart,
    ToolResult,
    WriteRequest,
    atruncate_output,
    new,
    truncate_output,
)
from reduction_app.engine.inspect import truncation_file_path

CTX = ToolContext(name="build_log", call_id="call_1")


def test_truncate_output_gives_the_wrappers_notice_and_saves_the_whole_output() -> None:
    text = "x" * 500
    backend = InMemoryBackend()
    direct = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=100))
    wrapped = direct.wrap_invokable_tool_call(lambda _: text, CTX)("{}")
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=100))
    notice = truncate_output(mw, text, CTX, "{}")
    assert notice == wrapped
    assert truncation_file_path(notice) == "/tmp/trunc/call_1"
    assert backend.read("/tmp/trunc/call_1") == text


def test_truncate_output_returns_a_short_output_itself() -> None:
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=100))
    text = "short"
    assert truncate_output(mw, text, CTX) is text
    result = ToolResult.of_text(text)
    assert truncate_output(mw, result, CTX) is result


def test_truncate_output_takes_a_tool_result() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=100))
    result = ToolResult(parts=(ToolOutputPart.of_text("y" * 300),))
    out = truncate_output(mw, result, CTX)
    assert out is not result
    assert truncation_file_path(out.parts[0].text) == "/tmp/trunc/call_1"
    assert backend.read("/tmp/trunc/call_1") == "y" * 300


class _AsyncBackend(InMemoryBackend):
    async def write(self, request: WriteRequest) -> None:  # type: ignore[override]
        super().write(request)


def test_atruncate_output_takes_an_async_backend_which_truncate_output_refuses() -> None:
    backend = _AsyncBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=100))
    with pytest.raises(TypeError, match="async handler or backend"):
        truncate_output(mw, "z" * 300, CTX)
    notice = asyncio.run(atruncate_output(mw, "z" * 300, CTX))
    assert truncation_file_path(notice) == "/tmp/trunc/call_1"
    assert backend.read("/tmp/trunc/call_1") == "z" * 300
