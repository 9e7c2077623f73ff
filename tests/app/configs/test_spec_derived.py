"""Everything that lists config fields is built from the engine's spec: the JSON fields, the
dashboard form and its help, the Tune knobs, the sweep grid, the API's config model and
the table of docs/engine.md. A field injected into the spec shows up in each of them."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from reduction_app import engine
from reduction_app.configs.forms import FIELD_HELP, ConfigForm
from reduction_app.configs.schemas import ReductionConfigIn, reduction_config_model
from reduction_app.simulations.views import tune
from simulator.compare import GRID_KNOBS
from tests.app.support import ApiClient
from tests.engine.config_support import EXTRA, inject_extra_field
from tests.test_manual import ENGINE_PAGE, config_table, config_table_expected

CONFIG_BODIES = ("TruncateIn", "ClearIn", "ConfigIn", "ConfigUpdateIn", "SimulationConfigIn")
"""The request bodies that carry an engine config."""


def _refs(schema: Any) -> set[str]:
    """Every ``$ref`` inside a JSON schema."""
    if isinstance(schema, dict):
        found = {schema["$ref"]} if "$ref" in schema else set()
        return found.union(*(_refs(v) for v in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_refs(v) for v in schema))
    return set()


@pytest.fixture
def extra_field(monkeypatch: pytest.MonkeyPatch) -> engine.ConfigField:
    return inject_extra_field(monkeypatch)


def test_every_artefact_names_the_spec_fields() -> None:
    names = [spec.name for spec in engine.json_config_fields()]
    assert list(engine.JSON_FIELDS) == names
    assert list(FIELD_HELP) == names
    assert [b.name for b in ConfigForm().config_fields()] == names
    assert list(ReductionConfigIn.model_fields) == names
    knobs = [spec.name for spec in engine.config_knobs()]
    switches = [spec.name for spec in engine.config_switches()]
    assert switches == [
        "trunc_only_when_shorter",
        "clear_cache_aware",
        "clear_superseded",
        "clear_offload_manifest",
    ]
    assert list(GRID_KNOBS) == knobs + switches


def test_help_is_the_spec_help_everywhere() -> None:
    form = ConfigForm()
    for spec in engine.json_config_fields():
        assert FIELD_HELP[spec.name] == spec.help
        assert form.fields[spec.name].help_text == spec.help
        assert ReductionConfigIn.model_fields[spec.name].description == spec.help


@pytest.mark.django_db
def test_openapi_document_lists_every_config_field(api: ApiClient) -> None:
    document = api.client.get("/api/v1/openapi.json").json()
    schemas = document["components"]["schemas"]
    model = schemas["ReductionConfigIn"]
    assert list(model["properties"]) == list(engine.JSON_FIELDS)
    assert model["additionalProperties"] is False
    for spec in engine.json_config_fields():
        shown = model["properties"][spec.name]
        assert shown["description"] == spec.help
        # django-ninja leaves out null defaults; a tuple default is a JSON list.
        if spec.default is not None:
            assert shown["default"] == (
                list(spec.default) if isinstance(spec.default, tuple) else spec.default
            )
    assert model["properties"]["max_tokens_for_clear"]["type"] == "integer"
    assert model["properties"]["max_tokens_for_clear"]["minimum"] == 0
    assert model["properties"]["token_counter"]["enum"] == ["approx", "cl100k_base", "o200k_base"]
    assert model["properties"]["trunc_exclude_tools"]["items"] == {"type": "string"}
    for body in CONFIG_BODIES:
        assert "#/components/schemas/ReductionConfigIn" in _refs(schemas[body]["properties"]), body


def test_injected_field_reaches_the_form(extra_field: engine.ConfigField) -> None:
    form = ConfigForm()
    assert form.config_fields()[-1].name == EXTRA.name
    field = form.fields[EXTRA.name]
    assert field.help_text == EXTRA.help
    assert field.default_text == "3"  # type: ignore[attr-defined]
    posted = ConfigForm(
        {
            "name": "extra",
            "read_file_tool_name": "read_file",
            "root_dir": "/tmp",
            "max_length_for_trunc": "50000",
            "token_counter": "approx",
            "max_tokens_for_clear": "160000",
            "clear_retention_suffix_limit": "1",
            "clear_at_least_tokens": "0",
            "clear_cache_read_percent": "10",
            "clear_cache_write_percent": "125",
            "clear_cache_ceiling_tokens": "0",
            EXTRA.name: "-2",
        }
    )
    assert not posted.is_valid()
    assert posted.errors[EXTRA.name] == ["clear_extra_rounds must be at least 0, got -2"]


def test_injected_field_reaches_the_api_model(extra_field: engine.ConfigField) -> None:
    model = reduction_config_model()
    assert list(model.model_fields)[-1] == EXTRA.name
    schema = model.model_json_schema()["properties"][EXTRA.name]
    assert schema == {
        "default": 3,
        "description": EXTRA.help,
        "minimum": 0,
        "maximum": 2**63 - 1,
        "title": "Clear Extra Rounds",
        "type": "integer",
    }


@pytest.mark.django_db
def test_injected_field_is_taken_by_the_api(
    extra_field: engine.ConfigField, api: ApiClient
) -> None:
    response = api.post("/configs", {"name": "extra", "config": {EXTRA.name: 5}})
    assert response.status_code == HTTPStatus.CREATED
    assert response.json()["config"][EXTRA.name] == 5


def test_injected_knob_reaches_the_tune_sliders(extra_field: engine.ConfigField) -> None:
    values = {spec.name: spec.in_force(spec.default) for spec in engine.config_knobs()}
    sliders = tune._sliders(values, total_tokens=10_000, longest=2_000)
    assert sliders[-1] == {
        "name": EXTRA.name,
        "value": 3,
        "min": 0,
        "max": 10,
        "step": 1,
        "help": EXTRA.help,
    }


def test_injected_field_needs_a_readme_row(extra_field: engine.ConfigField) -> None:
    expected = config_table_expected()
    assert expected[-1] == (EXTRA.name, 3, EXTRA.help)
    assert config_table(ENGINE_PAGE.read_text(encoding="utf-8")) != expected
