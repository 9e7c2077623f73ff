"""Tool input and output values, and what the phases hand to handlers.

``ToolArgument`` / ``ToolResult`` / ``ToolOutputPart`` are what an enhanced tool
takes and returns (Eino ``schema.ToolArgument`` / ``schema.ToolResult``).
``ToolDetail`` is what a truncation or clear handler is given, and
``TruncResult`` / ``ClearResult`` are what it answers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from reduction_app.engine.messages import Media, _empty_extra, _freeze

__all__ = [
    "ClearResult",
    "ToolArgument",
    "ToolContext",
    "ToolDetail",
    "ToolOutputPart",
    "ToolResult",
    "TruncResult",
]

ToolOutputPartType = Literal["text", "image", "audio", "video", "file", "tool_search_result"]


@dataclass(frozen=True, kw_only=True)
class ToolOutputPart:
    """One part of a tool's output."""

    type: ToolOutputPartType = "text"
    """What the part holds."""
    text: str = ""
    """The text of a ``text`` part."""
    media: Media | None = None
    """The media of an ``image``, ``audio``, ``video`` or ``file`` part."""
    tool_search_result: Any = None
    """The JSON payload of a ``tool_search_result`` part."""
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    """Fields with no slot of their own; kept through every conversion."""

    @classmethod
    def of_text(cls, text: str) -> ToolOutputPart:
        return cls(type="text", text=text)


@dataclass(frozen=True, kw_only=True)
class ToolArgument:
    """The arguments a tool was called with, as JSON text."""

    text: str = ""


@dataclass(frozen=True, kw_only=True)
class ToolResult:
    """What an enhanced tool returns: an ordered list of parts."""

    parts: tuple[ToolOutputPart, ...] = ()

    def __post_init__(self) -> None:
        _freeze(self, "parts")

    @classmethod
    def of_text(cls, text: str) -> ToolResult:
        return cls(parts=(ToolOutputPart.of_text(text),))


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """Which call is being reduced."""

    name: str = ""
    """The tool's name."""
    call_id: str = ""
    """The call id the model gave this call."""


@dataclass(frozen=True, kw_only=True)
class ToolDetail:
    """Everything a handler or a path generator knows about one tool call."""

    tool_context: ToolContext
    tool_argument: ToolArgument = field(default_factory=ToolArgument)
    tool_result: ToolResult | None = None
    """The whole result, for buffered input."""
    stream_tool_result: Iterator[ToolResult] | None = None
    """The result as a stream of chunks, for streamed input to a per-tool handler."""


@dataclass(frozen=True, kw_only=True)
class TruncResult:
    """A truncation handler's answer."""

    need_trunc: bool = False
    """Whether the tool's output is replaced."""
    tool_result: ToolResult | None = None
    """The replacement, for buffered input (required when ``need_trunc``)."""
    stream_tool_result: Iterator[ToolResult] | None = None
    """The replacement, for streamed input (required when ``need_trunc``)."""
    need_offload: bool = False
    """Whether ``offload_content`` is written to ``offload_file_path`` first."""
    offload_file_path: str = ""
    offload_content: str = ""


@dataclass(frozen=True, kw_only=True)
class ClearResult:
    """A clear handler's answer."""

    need_clear: bool = False
    """Whether the call's argument and result are replaced."""
    tool_argument: ToolArgument | None = None
    """The replacement argument (required when ``need_clear``)."""
    tool_result: ToolResult | None = None
    """The replacement result (required when ``need_clear``)."""
    need_offload: bool = False
    """Whether ``offload_content`` is written to ``offload_file_path`` first."""
    offload_file_path: str = ""
    offload_content: str = ""
