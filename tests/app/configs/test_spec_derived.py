"""Everything that lists config fields is built from the engine's spec: the JSON fields, the
dashboard form and its help, the Tune knobs, the sweep grid, the API's config model and
the table of docs/engine.md. A field injected into the spec shows up in each of them."""

from __future__ import annotations

import dataclasses
from http import HTTPStatus
from typing import Any

import pytest

from reduction_app import engine
from reduction_app.configs.forms import FIELD_HELP, ConfigForm
from reduction_app.configs.schemas import ReductionConfigIn, reduction_config_model
from reduction_app.engine import config_spec
from reduction_app.simulations.views import tune
from simulator.compare import GRID_KNOBS
from simulator.corpus_sweep import SHORT_KNOBS
from simulator.members import CLEAR_ONLY
from simulator.pricing import DEFAULT_PRICING, DEFAULT_PRICING_NAME
from simulator.tool_limits import FIELDS as TOOL_LIMIT_FIELDS
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


def test_every_list_of_config_fields_covers_exactly_the_spec() -> None:
    """Each place that names config fields beside the spec holds only spec fields, and
    every field of the spec that it is about: a field added in one place only fails here
    (the form, the API model, the grid and the docs table are held above)."""
    json_fields = {spec.name for spec in engine.json_config_fields()}
    knobs = {spec.name for spec in engine.config_knobs()}
    # Sweep labels: a short form for every knob a grid sweeps, naming only spec fields.
    assert set(GRID_KNOBS) <= set(SHORT_KNOBS) <= json_fields
    # The Tune page reaches past the conversation exactly for the knobs whose spec sets
    # no top.
    topless = {spec.name for spec in engine.config_knobs() if spec.knob and spec.knob.high is None}
    assert set(tune.SLIDER_REACH) == topless
    assert topless <= knobs
    # Replays share their truncation across the fields the spec marks clear-only, and a
    # field named for the clear phase is marked so.
    assert {spec.name for spec in engine.json_config_fields() if spec.phase} == CLEAR_ONLY
    assert {n for n in json_fields if n.startswith("clear_")} <= CLEAR_ONLY
    # The limits a recommendation searches are the spec's maps of limits by name.
    limits = {spec.name for spec in engine.json_config_fields() if spec.kind == "limits_by_name"}
    assert set(TOOL_LIMIT_FIELDS) == limits


def test_injected_knob_without_a_top_needs_its_slider_reach(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A knob added to the spec with no fixed top has no slider until the Tune page says
    where it reaches."""
    assert EXTRA.knob is not None
    topless = dataclasses.replace(EXTRA, knob=dataclasses.replace(EXTRA.knob, high=None))
    monkeypatch.setattr(config_spec, "CONFIG_FIELDS", (*engine.CONFIG_FIELDS, topless))
    values = {spec.name: spec.in_force(spec.default) for spec in engine.config_knobs()}
    with pytest.raises(KeyError, match=EXTRA.name):
        tune._sliders(values, total_tokens=10_000, longest=2_000)
    monkeypatch.setitem(tune.SLIDER_REACH, EXTRA.name, "tokens")
    # A tenth past 10,000 tokens, rounded up to a thousand.
    assert tune._sliders(values, total_tokens=10_000, longest=2_000)[-1]["max"] == 11_000


def test_default_pricing_is_named_once() -> None:
    """Every default price preset (the API's, the pages', the commands') is the simulator's;
    the pages choose theirs in one place (``prices.choice``), and no page keeps a copy."""
    from reduction_app.simulations.schemas import SimulationIn
    from reduction_app.simulations.views import compare, points, sweep

    assert DEFAULT_PRICING.name == DEFAULT_PRICING_NAME
    assert SimulationIn.model_fields["pricing"].default == DEFAULT_PRICING_NAME
    for page in (tune, compare, sweep, points):
        assert not hasattr(page, "DEFAULT_PRICING")
        assert not hasattr(page, "DEFAULT_PRICING_NAME")


def test_check_config_is_the_engines_validation() -> None:
    with pytest.raises(engine.ConfigError) as caught:
        engine.check_config({"max_tokens_for_clear": -1})
    assert caught.value.field == "max_tokens_for_clear"
    with pytest.raises(engine.ConfigError) as caught:
        engine.check_config({"nope": 1})
    assert str(caught.value) == "nope is not a config field"
    assert engine.config_to_dict(engine.check_config({})) == engine.config_to_dict(
        engine.config_from_dict({}, backend=engine.InMemoryBackend())
    )
