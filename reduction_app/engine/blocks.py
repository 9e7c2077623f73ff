"""Content-block messages (Anthropic Messages, OpenAI Responses; Eino's ``AgenticMessage``).

An :class:`AgenticMessage` has no tool role: tool results travel as
:class:`FunctionToolResult` blocks inside user messages, several parallel calls' results
in one message. Each block's ``type`` is fixed by its class, so a block list can be
matched on ``type`` or with ``isinstance``. Values only; wire formats live in ``formats/``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from reduction_app.engine.messages import Media, _empty_extra, _freeze

__all__ = [
    "AgenticMessage",
    "AssistantGenText",
    "ContentBlock",
    "FunctionToolCall",
    "FunctionToolResult",
    "RawBlock",
    "Reasoning",
    "ToolResultContent",
    "ToolSearchResult",
    "UserInputAudio",
    "UserInputFile",
    "UserInputImage",
    "UserInputText",
    "UserInputVideo",
]

ToolResultContentType = Literal["text", "image", "audio", "video", "file"]


@dataclass(frozen=True, kw_only=True)
class UserInputText:
    """Text the user (or the application) wrote."""

    text: str = ""
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["user_input_text"] = field(default="user_input_text", init=False)


@dataclass(frozen=True, kw_only=True)
class UserInputImage:
    """An image in user input."""

    media: Media = field(default_factory=Media)
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["user_input_image"] = field(default="user_input_image", init=False)


@dataclass(frozen=True, kw_only=True)
class UserInputAudio:
    """An audio clip in user input."""

    media: Media = field(default_factory=Media)
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["user_input_audio"] = field(default="user_input_audio", init=False)


@dataclass(frozen=True, kw_only=True)
class UserInputVideo:
    """A video in user input."""

    media: Media = field(default_factory=Media)
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["user_input_video"] = field(default="user_input_video", init=False)


@dataclass(frozen=True, kw_only=True)
class UserInputFile:
    """A file (a PDF, say) in user input."""

    media: Media = field(default_factory=Media)
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["user_input_file"] = field(default="user_input_file", init=False)


@dataclass(frozen=True, kw_only=True)
class AssistantGenText:
    """Text the model generated."""

    text: str = ""
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["assistant_gen_text"] = field(default="assistant_gen_text", init=False)


@dataclass(frozen=True, kw_only=True)
class Reasoning:
    """The model's reasoning (Anthropic ``thinking``, Responses ``reasoning``)."""

    text: str = ""
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    """Provider fields such as a thinking ``signature`` or an encrypted payload."""
    type: Literal["reasoning"] = field(default="reasoning", init=False)


@dataclass(frozen=True, kw_only=True)
class FunctionToolCall:
    """A function call the model requested."""

    call_id: str = ""
    name: str = ""
    arguments: str = ""
    """The arguments as JSON text."""
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["function_tool_call"] = field(default="function_tool_call", init=False)


@dataclass(frozen=True, kw_only=True)
class ToolResultContent:
    """One piece of a function result: text, or a media reference."""

    type: ToolResultContentType = "text"
    text: str = ""
    media: Media | None = None
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)


@dataclass(frozen=True, kw_only=True)
class FunctionToolResult:
    """The result of a function call, sent back to the model in a user message."""

    call_id: str = ""
    name: str = ""
    content: tuple[ToolResultContent, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    """Provider fields such as Anthropic's ``is_error``."""
    type: Literal["function_tool_result"] = field(default="function_tool_result", init=False)

    def __post_init__(self) -> None:
        _freeze(self, "content")


@dataclass(frozen=True, kw_only=True)
class ToolSearchResult:
    """The result of a provider-side tool search."""

    call_id: str = ""
    name: str = ""
    result: Any = None
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["tool_search_result"] = field(default="tool_search_result", init=False)


@dataclass(frozen=True, kw_only=True)
class RawBlock:
    """A wire block the engine carries verbatim and never rewrites (for example an
    Anthropic ``server_tool_use`` or a Responses ``web_search_call``)."""

    data: Mapping[str, Any] = field(default_factory=_empty_extra)
    """The block exactly as the wire format had it."""
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    type: Literal["raw"] = field(default="raw", init=False)


ContentBlock = (
    UserInputText
    | UserInputImage
    | UserInputAudio
    | UserInputVideo
    | UserInputFile
    | AssistantGenText
    | Reasoning
    | FunctionToolCall
    | FunctionToolResult
    | ToolSearchResult
    | RawBlock
)


@dataclass(frozen=True, kw_only=True)
class AgenticMessage:
    """A message made of content blocks; roles are ``system``, ``user`` and ``assistant``."""

    role: str
    """``system``, ``user`` or ``assistant``."""
    content_blocks: tuple[ContentBlock, ...] = ()
    """The blocks, in order."""
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)
    """Engine markers (the processed flag) and wire fields with no slot of their own."""

    kind: Literal["agentic"] = field(default="agentic", init=False, repr=False)
    """Discriminator between agentic messages and chat :class:`Message`."""

    def __post_init__(self) -> None:
        _freeze(self, "content_blocks")
