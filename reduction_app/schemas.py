"""Request and response bodies of the REST API (``<Thing>In`` / ``<Thing>Out``).

An engine config in a body is taken as a JSON object and validated by the engine
(``config_from_dict``), so its errors are the engine's ``ConfigError``, mapped once in
``api``; the API document describes it with :data:`ReductionConfigIn`, a model built
from the engine's spec of the config fields.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

from django.db import models
from ninja import Field, Schema
from ninja.errors import HttpError
from pydantic import AfterValidator, BaseModel, ConfigDict, GetJsonSchemaHandler, create_model
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from reduction_app import engine
from reduction_app.engine.formats import FORMAT_NAMES
from reduction_app.models import EventRecord

if TYPE_CHECKING:
    # A Literal built at run time is opaque to mypy; it checks the name as a string.
    MessageFormat = str
else:
    MessageFormat = Literal[FORMAT_NAMES]
"""A wire format's name, one of the registry's (``engine.formats.FORMATS``): pydantic
refuses any other, and the OpenAPI document lists them."""


def _no_nul(value: str) -> str:
    # PostgreSQL cannot store NUL in text; refuse it here so both databases answer alike.
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    return value


Text = Annotated[str, AfterValidator(_no_nul)]
"""A string that goes into a text column."""


def _addressable(value: str) -> str:
    # The dashboard puts the id in a URL path: "." and ".." segments would be resolved away
    # by browsers and land on another page.
    if any(segment in (".", "..") for segment in value.split("/")):
        raise ValueError("must not contain '.' or '..' path segments")
    return value


ConversationId = Annotated[str, AfterValidator(_no_nul), AfterValidator(_addressable)]
"""A client's conversation id: stored, and used in dashboard addresses."""


class ErrorOut(Schema):
    detail: str
    field: str | None = None


class ApiError(HttpError):
    """An input the API refuses, answered as :class:`ErrorOut` naming ``field``."""

    def __init__(self, status_code: int, detail: str, field: str | None = None) -> None:
        super().__init__(status_code, detail)
        self.field = field


class _Strict(Schema):
    model_config = ConfigDict(extra="forbid")


def _config_field(spec: engine.ConfigField) -> tuple[Any, Any]:
    """The annotation and ``Field`` documenting one JSON config field."""
    constraints: dict[str, Any] = {}
    default = spec.default
    annotation: Any
    if spec.kind == "bool":
        annotation = bool
    elif spec.kind == "int":
        annotation = int
        if spec.minimum is not None:
            constraints["ge"] = spec.minimum
    elif spec.kind in ("name", "folder"):
        annotation = str
        constraints["pattern"] = r"^\S+$"
    elif spec.kind == "tool_names":
        annotation = list[str]
        default = list(default)
    elif spec.kind == "choice":
        annotation = Literal[spec.choices]
    elif spec.kind == "optional_choice":
        annotation = Literal[spec.choices] | None
    else:
        raise ValueError(f"{spec.name}: a {spec.kind} field has no JSON form")
    return annotation, Field(default, description=spec.help, **constraints)


def reduction_config_model() -> type[BaseModel]:
    """A model of the JSON fields of ``ReductionConfig``, built from the engine's spec:
    each field's type, default, minimum and help, for the API document."""
    fields = {spec.name: _config_field(spec) for spec in engine.json_config_fields()}
    return create_model(  # type: ignore[no-any-return, call-overload]
        "ReductionConfigIn",
        __config__=ConfigDict(extra="forbid"),
        __doc__="The JSON fields of the engine's ReductionConfig; any left out take the default.",
        **fields,
    )


ReductionConfigIn = reduction_config_model()
"""The engine config a body may carry, as the API document shows it."""


class _DocumentedAs:
    """Validates as annotated, and is shown in the JSON schema as ``model`` (by reference)."""

    def __init__(self, model: type[BaseModel]) -> None:
        self.model = model

    def __get_pydantic_json_schema__(
        self, _: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = self.model.__pydantic_core_schema__
        ref = schema.get("ref")
        if ref is None:
            return handler(schema)
        return handler(
            core_schema.definitions_schema(core_schema.definition_reference_schema(ref), [schema])
        )


ConfigJson = Annotated[dict[str, Any], _DocumentedAs(ReductionConfigIn)]
"""An engine config in a body: a JSON object that the engine validates (its errors name
the field), documented as :data:`ReductionConfigIn`."""


class ConfigRef(_Strict):
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


class PartsIn(_Strict):
    parts: list[dict[str, Any]]


class TruncateIn(ConfigRef):
    tool_name: Text = Field(..., min_length=1, max_length=200)
    tool_call_id: Text = Field("", max_length=200)
    arguments: str = ""
    result: str | PartsIn


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


class ConversationIn(_Strict):
    conversation_id: ConversationId = Field(..., min_length=1, max_length=200)
    title: Text = Field("", max_length=300)
    format: MessageFormat = "openai_chat"
    messages: list[Any] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list)
    system: str | list[dict[str, Any]] | None = Field(
        None, description="Anthropic only: the conversation's top-level system parameter."
    )


class ConversationOut(Schema):
    conversation_id: str
    title: str
    format: str
    message_count: int
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def resolve_conversation_id(obj: Any) -> str:
        return str(obj.client_id)

    @staticmethod
    def resolve_format(obj: Any) -> str:
        return str(obj.message_format)


class ConversationDetailOut(ConversationOut):
    messages: list[Any]
    system: Any = None
    tools: list[Any]
    event_count: int
    file_count: int

    @staticmethod
    def resolve_messages(obj: Any) -> list[Any]:
        return list(obj.transcript)

    @staticmethod
    def resolve_event_count(obj: Any) -> int:
        return int(obj.events.count())

    @staticmethod
    def resolve_file_count(obj: Any) -> int:
        return int(obj.files.count())


class ConfigIn(_Strict):
    name: Text = Field(..., min_length=1, max_length=100)
    config: ConfigJson = Field(default_factory=dict)


class ConfigUpdateIn(_Strict):
    name: Text | None = Field(None, min_length=1, max_length=100)
    config: ConfigJson


class ConfigOut(Schema):
    id: int
    name: str
    version: int
    config: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @staticmethod
    def _latest(obj: Any) -> Any:
        # Lists prefetch versions newest first; a single profile asks for its latest.
        return obj.versions.all()[0]

    @staticmethod
    def resolve_version(obj: Any) -> int:
        return int(ConfigOut._latest(obj).number)

    @staticmethod
    def resolve_config(obj: Any) -> dict[str, Any]:
        return dict(ConfigOut._latest(obj).data)

    @staticmethod
    def resolve_updated_at(obj: Any) -> datetime:
        return ConfigOut._latest(obj).created_at  # type: ignore[no-any-return]


class ToolDefinitionOut(Schema):
    openai: dict[str, Any]
    anthropic: dict[str, Any]
    responses: dict[str, Any]


class SimulationConfigIn(_Strict):
    name: str = Field("", max_length=100)
    config: ConfigJson | None = Field(
        None, description="An inline config; leave out both this and config_id for no reduction."
    )
    config_id: int | None = None


class SimulationIn(_Strict):
    conversation_id: str = Field(..., min_length=1, max_length=200)
    configs: list[SimulationConfigIn] = Field(default_factory=list, max_length=16)
    grid: dict[str, Any] | None = Field(
        None, description="Sweep: knob -> list of values (max_tokens_for_clear, ...)."
    )
    baseline: Literal["first", "none"] = "first"
    pricing: str = "gpt-4o"
    min_cacheable_prefix: int = Field(1024, ge=0)


class ProgressOut(Schema):
    done: int
    total: int


class SimulationOut(Schema):
    id: int
    conversation_id: str
    kind: str
    status: str
    progress: ProgressOut
    configs: list[dict[str, Any]]
    grid: dict[str, Any] | None
    options: dict[str, Any]
    results: dict[str, Any] | None
    error: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_seconds: float | None

    @staticmethod
    def resolve_conversation_id(obj: Any) -> str:
        return str(obj.conversation.client_id)

    @staticmethod
    def resolve_progress(obj: Any) -> dict[str, int]:
        return {"done": obj.progress_done, "total": obj.progress_total}

    @staticmethod
    def resolve_duration_seconds(obj: Any) -> float | None:
        if obj.started_at is None or obj.finished_at is None:
            return None
        duration: timedelta = obj.finished_at - obj.started_at
        return round(duration.total_seconds(), 3)
