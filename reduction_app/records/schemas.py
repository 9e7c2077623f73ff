"""Bodies of the records' operations: events and offloaded files."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import models
from ninja import Field, Schema
from pydantic import create_model

from reduction_app.models import EventRecord


def _python_type(field: models.Field[Any, Any]) -> type:
    """The type the API answers with for a model field of an engine event (every one has
    a value: no nulls)."""
    # BigIntegerField is an IntegerField.
    kinds = ((models.BooleanField, bool), (models.IntegerField, int), (models.CharField, str))
    for kind, python in kinds:
        if isinstance(field, kind):
            return python
    raise TypeError(f"EventRecord.{field.name}: no API type for {type(field).__name__}")


def _event_fields() -> dict[str, Any]:
    """The engine event's own fields, as the model records them, in the model's order; the
    id leads, as it always has in this schema."""
    fields: dict[str, Any] = {"id": (int | None, None)}
    fields.update(
        (field.name, (_python_type(field), ...))
        for field in EventRecord._meta.concrete_fields
        if field.name not in EventRecord.RECORD_FIELDS
    )
    return fields


_EventFields = create_model("_EventFields", __base__=Schema, **_event_fields())


# A recorded engine event: the fields of models.EventRecord (those of the engine's
# ReductionEvent), its id, and where and when it was recorded. (No docstring: it would
# become the schema's description in the OpenAPI document.)
class EventOut(_EventFields):  # type: ignore[misc,valid-type]  # a base built at run time
    conversation_id: str | None = None
    config_id: int | None = None
    config_version: int | None = None
    created_at: datetime | None = None

    @staticmethod
    def resolve_conversation_id(obj: Any) -> str | None:
        return obj.conversation.client_id if obj.conversation_id else None

    @staticmethod
    def resolve_config_id(obj: Any) -> int | None:
        return obj.config_version.profile_id if obj.config_version_id else None

    @staticmethod
    def resolve_config_version(obj: Any) -> int | None:
        return obj.config_version.number if obj.config_version_id else None


class FileOut(Schema):
    path: str
    size_chars: int
    tokens: int
    sha256: str
    phase: str
    tool_name: str
    call_id: str
    conversation_id: str | None
    created_at: datetime
    read_count: int
    last_read_at: datetime | None

    @staticmethod
    def resolve_conversation_id(obj: Any) -> str | None:
        return obj.conversation.client_id if obj.conversation_id else None


class FileReadOut(Schema):
    path: str
    offset: int
    limit: int
    total_lines: int
    content: str = Field(..., description="The lines, each as '<line number>\\t<text>'.")
