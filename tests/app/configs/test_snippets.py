"""A config as snippets: each one run as a user would run what they copied (the Python
executed, the REST body posted to the real API, each adapter constructed), and the
versions page showing them, escaped."""

from __future__ import annotations

import json
import pkgutil
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from reduction_app import engine, integrations
from reduction_app.configs.services import config_create
from reduction_app.configs.snippets import (
    ADAPTERS,
    config_snippets,
    non_default_fields,
    shown_snippets,
)
from reduction_app.engine.config import filled
from tests.app.pages_support import elements, member_client, parsed, text
from tests.app.support import ApiClient, grep_rounds

# Every JSON kind away from its default: names, a folder, ints, tool names (one with a
# quote), limits by name, a choice and an optional choice, switches.
STORED: dict[str, Any] = {
    "read_file_tool_name": 'cat"file',
    "root_dir": "/var/offloads",
    "max_length_for_trunc": 2_000,
    "trunc_tool_limits": {"grep": 500},
    "trunc_command_limits": {"running": 3_000},
    "trunc_exclude_tools": ["todo_write", "ask"],
    "token_counter": "cl100k_base",
    "max_tokens_for_clear": 300,
    "clear_retention_suffix_limit": 2,
    "clear_exclude_tools": ["plan"],
    "clear_superseded": True,
    "language": "zh",
}


def _snippet(data: dict[str, Any], key: str) -> str:
    (snippet,) = [s for s in config_snippets(data) if s.key == key]
    return snippet.text


def _run(code: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The snippet executed as a module would be, in ``folder`` (where ``offload`` goes)."""
    monkeypatch.chdir(folder)
    namespace: dict[str, Any] = {}
    exec(compile(code, "<snippet>", "exec"), namespace)
    return namespace


def _stored(data: dict[str, Any]) -> dict[str, Any]:
    return engine.config_to_dict(engine.check_config(data))


def test_config_snippets_offer_json_python_rest_and_every_adapter() -> None:
    keys = [s.key for s in config_snippets(STORED)]
    assert keys == ["json", "python", "rest", "langchain", "pydantic_ai", "openai_agents"]


def test_adapters_are_the_modules_of_the_integrations_package() -> None:
    modules = {m.name for m in pkgutil.iter_modules(integrations.__path__)}
    assert {a.key for a in ADAPTERS} == modules


def test_json_snippet_is_every_field_with_the_defaults() -> None:
    shown = json.loads(_snippet({"max_tokens_for_clear": 300}, "json"))
    assert list(shown) == list(engine.JSON_FIELDS)
    assert shown == _stored({"max_tokens_for_clear": 300})


def test_python_snippet_names_only_what_differs_from_the_defaults() -> None:
    assert _snippet({"max_tokens_for_clear": 300, "skip_clear": False}, "python") == (
        "from reduction_app.engine import LocalFileBackend, ReductionConfig\n"
        "\n"
        "config = ReductionConfig(\n"
        '    backend=LocalFileBackend("offload"),\n'
        "    max_tokens_for_clear=300,\n"
        ")\n"
    )


@pytest.mark.parametrize("data", [STORED, {}, {"skip_truncation": True, "skip_clear": True}])
def test_python_snippet_run_makes_the_stored_config(
    data: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _run(_snippet(data, "python"), tmp_path, monkeypatch)["config"]
    assert isinstance(config, engine.ReductionConfig)
    engine.validate(config)
    assert engine.config_to_dict(config) == _stored(data)
    assert isinstance(config.backend, engine.LocalFileBackend)


@pytest.mark.parametrize("adapter", ADAPTERS, ids=lambda a: a.key)
def test_adapter_snippet_constructs_the_adapter_with_the_stored_config(
    adapter: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = _run(_snippet(STORED, adapter.key), tmp_path, monkeypatch)
    reduction = namespace["reduction"]
    assert type(reduction).__module__ == adapter.module
    assert type(reduction).__name__ == adapter.name
    # The adapter's config is the one in force: the stored one, defaults filled in.
    in_force = filled(engine.check_config(STORED))
    assert engine.config_to_dict(reduction.config) == engine.config_to_dict(in_force)
    assert isinstance(reduction.config.backend, engine.LocalFileBackend)


def test_non_default_fields_refuse_what_is_not_a_config() -> None:
    with pytest.raises(engine.ConfigError) as caught:
        non_default_fields({"max_tokens_for_clear": -1})
    assert str(caught.value) == "max_tokens_for_clear must be at least 0, got -1"
    assert shown_snippets({"no_such_field": 1}) == []
    assert shown_snippets(None) == []


@pytest.mark.django_db
def test_rest_snippet_is_accepted_by_clear_and_applies_the_config(api: ApiClient) -> None:
    body = json.loads(_snippet(STORED, "rest"))
    assert body == {"config": non_default_fields(STORED), "messages": []}
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["messages"] == []
    # With a conversation in it, the clear pass runs with the config sent: over 300
    # tokens it clears, keeping the last two tool rounds (clear_retention_suffix_limit).
    body["messages"] = grep_rounds(4, lambda n: f"match {n} " * 200)
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK, response.content
    answer = response.json()
    assert answer["applied"] is True
    (summary,) = [e for e in answer["events"] if e["kind"] == "summary"]
    assert summary["threshold"] == STORED["max_tokens_for_clear"]
    kept = [m["content"] for m in answer["messages"] if m["role"] == "tool"]
    assert kept[2:] == ["match 2 " * 200, "match 3 " * 200]
    assert all(c != "match 0 " * 200 for c in kept[:2])


@pytest.mark.django_db
def test_versions_page_shows_each_versions_snippets_escaped() -> None:
    client, workspace = member_client()
    data = {**STORED, "read_file_tool_name": "<script>alert(1)</script>"}
    profile = config_create(workspace=workspace, name="tight", data=data).profile
    response = client.get(f"/configs/{profile.pk}/versions/")
    assert b"<script>alert(1)</script>" not in response.content
    page = parsed(response)
    (details,) = elements(page, "details", class_="copy-as", id="v1-copy-as")
    figures = elements(details, "figure", class_="snippet")
    snippets = config_snippets(data)
    assert [dict(f.attributes)["data-snippet"] for f in figures] == [s.key for s in snippets]
    for figure, snippet in zip(figures, snippets, strict=True):
        (code,) = elements(figure, "code", id=f"v1-snippet-{snippet.key}")
        # The parsed tree normalises whitespace: compare the text the same way.
        assert text(code) == " ".join(snippet.text.split())
        (button,) = elements(figure, "button", class_="copy")
        assert dict(button.attributes)["data-copy"] == f"v1-snippet-{snippet.key}"
