"""Bodies of the records' operations: events and offloaded files."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import models
from ninja import Field, Schema
from ninja.schema import DjangoGetter
from pydantic import ModelWrapValidatorHandler, ValidationInfo, create_model, model_validator

from reduction_app.models import OFFLOAD_PATH_CHARS, EventRecord
from reduction_app.schemas import ConversationId, StrictIn, Text


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

    # Replaces django-ninja's validator of the same name, which wraps every input, a dict
    # too, in a getter that runs the resolvers above field by field (some 40 µs an event).
    # A dict is taken as it is: it must hold the resolved fields (event_answers).
    @model_validator(mode="wrap")
    @classmethod
    def _run_root_validator(
        cls, values: Any, handler: ModelWrapValidatorHandler[Any], info: ValidationInfo
    ) -> Any:
        if isinstance(values, dict):
            return handler(values)
        return handler(DjangoGetter(values, cls, info.context))


_EVENT_FIELD_NAMES = tuple(name for name in _event_fields() if name != "id")


def event_answers(rows: Sequence[EventRecord]) -> list[dict[str, Any]]:
    """The :class:`EventOut` of rows just recorded, as dicts (which it validates as they
    are): what the list of events answers for them. The rows' conversation and config
    version must be loaded, as they are on rows made with those objects."""
    return [
        {
            "id": row.pk,
            **{name: getattr(row, name) for name in _EVENT_FIELD_NAMES},
            "conversation_id": EventOut.resolve_conversation_id(row),
            "config_id": EventOut.resolve_config_id(row),
            "config_version": EventOut.resolve_config_version(row),
            "created_at": row.created_at,
        }
        for row in rows
    ]


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


class FileWriteIn(StrictIn):
    path: Text = Field(
        ...,
        min_length=1,
        max_length=OFFLOAD_PATH_CHARS,
        description="Where the file is read back from; no '..' piece.",
    )
    content: str = Field(..., description="The whole file, as text.")
    conversation_id: ConversationId | None = Field(
        None, max_length=200, description="Your conversation id; the file is filed under it."
    )
