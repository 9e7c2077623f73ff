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
    messages: list[Any] = Field(
        ...,
        description="The whole context; with previous_revision, only the messages that "
        "follow the context that revision answered.",
    )
    tools: list[dict[str, Any]] | None = Field(
        None,
        description="The tools offered to the model; with previous_revision, left out "
        "means the conversation's tools as last sent.",
    )
    system: str | list[dict[str, Any]] | None = Field(
        None,
        description="Anthropic only: the request's top-level system parameter (sent with "
        "the whole context only).",
    )
    previous_revision: int | None = Field(
        None,
        ge=1,
        description="The revision the last answer for this conversation gave: send only "
        "the new messages, and the context is rebuilt from the one stored (needs "
        "conversation_id). 409 when it is stale.",
    )


class ClearOut(Schema):
    messages: list[Any] = Field(
        ...,
        description="The context from from_index on: your next context is your previous "
        "one up to from_index, then these (the whole context for a call without "
        "previous_revision, whose from_index is 0).",
    )
    system: str | list[dict[str, Any]] | None = None
    revision: int | None = Field(
        None,
        description="Send it back as previous_revision with only the new messages next "
        "time; null without conversation_id.",
    )
    from_index: int = Field(
        0,
        description="The first message of your context that this answer replaces; its "
        "length when only your new messages come back.",
    )
    applied: bool
    tokens_before: int
    tokens_after: int
    events: list[EventOut]


# One tool definition per wire format, under the format's key (``openai``, ``anthropic``,
# ``responses``): the formats come from the engine's registry, so a new one appears here.
_tool_fields: dict[str, Any] = {wire.key: (dict[str, Any], ...) for wire in FORMATS.values()}
ToolDefinitionOut: type[Schema] = create_model("ToolDefinitionOut", __base__=Schema, **_tool_fields)
