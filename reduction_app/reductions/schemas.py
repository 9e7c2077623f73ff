"""Bodies of the engine's operations: ``/truncate``, ``/clear`` and the read_file tool."""

from __future__ import annotations

from typing import Any

from ninja import Field, Schema
from pydantic import create_model

from reduction_app.configs.schemas import ConfigJson
from reduction_app.engine.formats import FORMATS
from reduction_app.records.schemas import EventOut
from reduction_app.schemas import ConversationId, MessageFormat, StrictIn, Text


class ConfigRef(StrictIn):
    config: ConfigJson | None = Field(
        None, description="An inline engine config (the JSON fields of ReductionConfig)."
    )
    config_id: int | None = Field(
        None, description="A stored config profile; its latest version is used."
    )
    conversation_id: ConversationId | None = Field(
        None,
        max_length=200,
        description="Your conversation id; events and files are filed under it.",
    )


class PartsIn(StrictIn):
    parts: list[dict[str, Any]]


class TruncateIn(ConfigRef):
    tool_name: Text = Field(..., min_length=1, max_length=200)
    tool_call_id: Text = Field("", max_length=200)
    arguments: str = ""
    result: str | PartsIn


class TruncateOut(Schema):
    truncated: bool
    result: str | dict[str, Any]
    offload_path: str | None
    events: list[EventOut]


class ClearIn(ConfigRef):
    format: MessageFormat = "openai_chat"
    messages: list[Any]
    tools: list[dict[str, Any]] = Field(default_factory=list)
    system: str | list[dict[str, Any]] | None = Field(
        None, description="Anthropic only: the request's top-level system parameter."
    )


class ClearOut(Schema):
    messages: list[Any]
    system: str | list[dict[str, Any]] | None = None
    applied: bool
    tokens_before: int
    tokens_after: int
    events: list[EventOut]


# One tool definition per wire format, under the format's key (``openai``, ``anthropic``,
# ``responses``): the formats come from the engine's registry, so a new one appears here.
_tool_fields: dict[str, Any] = {wire.key: (dict[str, Any], ...) for wire in FORMATS.values()}
ToolDefinitionOut: type[Schema] = create_model("ToolDefinitionOut", __base__=Schema, **_tool_fields)
