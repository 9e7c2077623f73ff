"""Every list of wire formats in the app is the format registry's (``engine.formats``)."""

from __future__ import annotations

from typing import get_args

from reduction_app.api import api
from reduction_app.engine.formats import FORMAT_NAMES, FORMATS
from reduction_app.models import Conversation
from reduction_app.reductions.schemas import ToolDefinitionOut
from reduction_app.schemas import MessageFormat


def test_message_format_literal_is_the_registry_names() -> None:
    assert get_args(MessageFormat) == FORMAT_NAMES


def test_conversation_format_choices_are_the_registry_labels() -> None:
    choices = (
        ("openai_chat", "OpenAI chat"),
        ("anthropic", "Anthropic Messages"),
        ("openai_responses", "OpenAI Responses"),
    )
    assert choices == Conversation.FORMAT_CHOICES
    assert tuple((f.name, f.label) for f in FORMATS.values()) == Conversation.FORMAT_CHOICES
    field = Conversation._meta.get_field("message_format")
    assert [value for value, _ in field.choices] == list(FORMAT_NAMES)


def test_openapi_document_lists_the_registry_formats() -> None:
    schemas = api.get_openapi_schema()["components"]["schemas"]
    for body in ("ClearIn", "ConversationIn"):
        assert schemas[body]["properties"]["format"]["enum"] == list(FORMAT_NAMES), body


def test_read_file_tool_definitions_are_keyed_by_the_registry() -> None:
    assert list(ToolDefinitionOut.model_fields) == [f.key for f in FORMATS.values()]
