"""Bodies of the config profiles' operations, and ``ReductionConfigIn``: the engine's config
fields as the OpenAPI document shows them, built from the engine's field spec."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler, create_model
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, core_schema

from reduction_app import engine
from reduction_app.models import ConfigProfile, ConfigVersion
from reduction_app.schemas import StrictIn, Text


def _config_field(spec: engine.ConfigField) -> tuple[Any, Any]:
    """The annotation and ``Field`` documenting one JSON config field."""
    constraints: dict[str, Any] = {}
    default = spec.default
    annotation: Any
    if spec.kind == "bool":
        annotation = bool
    elif spec.kind == "int":
        annotation = int
        constraints["ge"], constraints["le"] = spec.bounds
    elif spec.kind in ("name", "folder"):
        annotation = str
        constraints["pattern"] = r"^\S+$"
    elif spec.kind == "tool_names":
        annotation = list[str]
        default = list(default)
    elif spec.kind == "limits_by_name":
        low, high = spec.bounds
        keys: Any = Literal[spec.choices] if spec.choices else str
        annotation = dict[keys, Annotated[int, Field(ge=low, le=high)]]
        default = dict(default)
    elif spec.kind == "choice":
        annotation = Literal[spec.choices]
    elif spec.kind == "optional_choice":
        annotation = Literal[spec.choices] | None
    else:
        raise ValueError(f"{spec.name}: a {spec.kind} field has no JSON form")
    return annotation, Field(default, description=spec.help, **constraints)


def reduction_config_model() -> type[BaseModel]:
    """A model of the JSON fields of ``ReductionConfig``, built from the engine's spec:
    each field's type, default, range and help, for the API document."""
    fields = {spec.name: _config_field(spec) for spec in engine.json_config_fields()}
    # pydantic types create_model's field arguments only loosely; the result is a model.
    model: type[BaseModel] = create_model(  # type: ignore[call-overload]
        "ReductionConfigIn",
        __config__=ConfigDict(extra="forbid"),
        __doc__="The JSON fields of the engine's ReductionConfig; any left out take the default.",
        **fields,
    )
    return model


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


class ConfigIn(StrictIn):
    name: Text = Field(..., min_length=1, max_length=100)
    config: ConfigJson = Field(default_factory=dict)


class ConfigUpdateIn(StrictIn):
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
    def _latest(obj: ConfigProfile) -> ConfigVersion:
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
        return ConfigOut._latest(obj).created_at
