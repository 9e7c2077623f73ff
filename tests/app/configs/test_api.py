"""Config profiles over HTTP: every field filled in, versions, delete, errors."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from tests.app.support import API, ApiClient, documented, error, follow

pytestmark = pytest.mark.django_db

DEFAULT_CONFIG = {
    "skip_truncation": False,
    "skip_clear": False,
    "read_file_tool_name": "read_file",
    "root_dir": "/tmp",
    "max_length_for_trunc": 50000,
    "trunc_tool_limits": {},
    "trunc_command_limits": {},
    "trunc_exclude_tools": [],
    "trunc_only_when_shorter": False,
    "trunc_stream_text_raw": False,
    "token_counter": "approx",
    "max_tokens_for_clear": 160000,
    "clear_retention_suffix_limit": 1,
    "clear_at_least_tokens": 0,
    "clear_cache_aware": False,
    "clear_cache_read_percent": 10,
    "clear_cache_write_percent": 125,
    "clear_cache_ceiling_tokens": 0,
    "clear_exclude_tools": [],
    "clear_digest_tokens": 0,
    "clear_superseded": False,
    "clear_offload_manifest": False,
    "language": None,
}


def test_config_create_fills_every_field(api: ApiClient) -> None:
    response = api.post("/configs", {"name": "tight", "config": {"max_tokens_for_clear": 1000}})
    assert response.status_code == HTTPStatus.CREATED
    body = response.json()
    assert {k: body[k] for k in ("name", "version", "config")} == {
        "name": "tight",
        "version": 1,
        "config": {**DEFAULT_CONFIG, "max_tokens_for_clear": 1000},
    }
    assert api.get(f"/configs/{body['id']}").json() == body


def test_config_update_makes_a_new_version_and_events_keep_theirs(api: ApiClient) -> None:
    config_id = api.post(
        "/configs", {"name": "tight", "config": {"max_length_for_trunc": 10}}
    ).json()["id"]
    body = {"config_id": config_id, "tool_name": "grep", "result": "x" * 30}
    first = api.post("/truncate", {**body, "tool_call_id": "c1"}).json()["events"]
    response = api.put(
        f"/configs/{config_id}", {"name": "tighter", "config": {"max_length_for_trunc": 20}}
    )
    assert response.status_code == HTTPStatus.OK
    updated = response.json()
    assert (updated["id"], updated["name"], updated["version"]) == (config_id, "tighter", 2)
    assert updated["config"]["max_length_for_trunc"] == 20
    second = api.post("/truncate", {**body, "tool_call_id": "c2"}).json()
    # The new version is in force: 30 characters over 20, previews of 10.
    assert second["result"].splitlines()[2:4] == ["Preview (first 10):", "x" * 10]
    assert [(e["config_id"], e["config_version"]) for e in first] == [(config_id, 1)]
    assert [(e["config_id"], e["config_version"]) for e in second["events"]] == [(config_id, 2)]
    listed = api.get("/events").json()["results"]
    assert [(e["call_id"], e["config_version"]) for e in listed] == [("c2", 2), ("c1", 1)]


def test_config_limits_round_trip_and_apply_to_truncate(api: ApiClient) -> None:
    limits = {
        "trunc_tool_limits": {"Read": 40, "Bash": 30},
        "trunc_command_limits": {"running": 10},
    }
    created = api.post("/configs", {"name": "limits", "config": limits}).json()
    assert created["config"] == {**DEFAULT_CONFIG, **limits}
    assert api.get(f"/configs/{created['id']}").json()["config"] == created["config"]
    body = {"config_id": created["id"], "result": "x" * 35}
    # 35 characters: over Bash's 30 for a reading command, previews of 15 ...
    read = api.post("/truncate", {**body, "tool_name": "Bash", "arguments": '{"command": "cat a"}'})
    assert read.json()["result"].splitlines()[2:4] == ["Preview (first 15):", "x" * 15]
    # ... over the running kind's 10 for a test run, previews of 5 ...
    run = api.post("/truncate", {**body, "tool_name": "Bash", "arguments": '{"command": "make"}'})
    assert run.json()["result"].splitlines()[2:4] == ["Preview (first 5):", "x" * 5]
    # ... and within Read's 40.
    whole = api.post("/truncate", {**body, "tool_name": "Read"}).json()
    assert (whole["truncated"], whole["result"]) == (False, "x" * 35)


def test_config_limits_are_in_the_api_document(api: ApiClient) -> None:
    document = api.client.get(API + "/openapi.json").json()
    fields = document["components"]["schemas"]["ReductionConfigIn"]["properties"]
    assert fields["trunc_command_limits"]["propertyNames"] == {
        "enum": ["running", "reading", "searching", "editing", "other"]
    }
    assert fields["trunc_tool_limits"]["additionalProperties"]["minimum"] == 1
    assert fields["trunc_tool_limits"]["default"] == {}


def test_config_delete_hides_it_and_events_keep_it(api: ApiClient) -> None:
    config_id = api.post(
        "/configs", {"name": "gone", "config": {"max_length_for_trunc": 10}}
    ).json()["id"]
    api.post("/truncate", {"config_id": config_id, "tool_name": "grep", "result": "x" * 30})
    response = api.delete(f"/configs/{config_id}")
    assert response.status_code == HTTPStatus.NO_CONTENT
    assert api.get(f"/configs/{config_id}").json() == error(
        f"config {config_id} not found", "config_id"
    )
    assert api.get("/configs").json()["results"] == []
    used = api.post("/truncate", {"config_id": config_id, "tool_name": "grep", "result": "x"})
    assert used.status_code == HTTPStatus.NOT_FOUND
    assert [e["config_version"] for e in api.get("/events").json()["results"]] == [1]
    # The name is free again.
    assert api.post("/configs", {"name": "gone"}).status_code == HTTPStatus.CREATED


def test_config_unknown_is_404(api: ApiClient) -> None:
    for response in (
        api.get("/configs/999"),
        api.put("/configs/999", {"config": {}}),
        api.delete("/configs/999"),
    ):
        assert response.status_code == HTTPStatus.NOT_FOUND
        assert response.json() == error("config 999 not found", "config_id")


def test_config_duplicate_name_is_409(api: ApiClient) -> None:
    api.post("/configs", {"name": "a"})
    other = api.post("/configs", {"name": "b"}).json()["id"]
    response = api.post("/configs", {"name": "a"})
    assert response.status_code == HTTPStatus.CONFLICT
    assert response.json() == error("a config named 'a' already exists")
    renamed = api.put(f"/configs/{other}", {"name": "a", "config": {}})
    assert renamed.status_code == HTTPStatus.CONFLICT
    assert api.get(f"/configs/{other}").json()["version"] == 1


@pytest.mark.parametrize(
    ("body", "detail", "field"),
    [
        ({}, "name: Field required", "name"),
        ({"name": ""}, "name: String should have at least 1 character", "name"),
        (
            {"name": "n", "config": {"max_tokens_for_clear": -1}},
            "config.max_tokens_for_clear must be at least 0, got -1",
            "config.max_tokens_for_clear",
        ),
        (
            {"name": "n", "config": {"trunc_command_limits": {"bogus": 5}}},
            "config.trunc_command_limits.bogus is not a command kind: expected one of "
            "['running', 'reading', 'searching', 'editing', 'other']",
            "config.trunc_command_limits.bogus",
        ),
        (
            {"name": "n", "config": {"trunc_tool_limits": {"Read": 0}}},
            "config.trunc_tool_limits.Read must be at least 1, got 0",
            "config.trunc_tool_limits.Read",
        ),
        (
            {"name": "n", "config": {"token_counter": "nope"}},
            "config.token_counter must be one of ['approx', 'cl100k_base', 'o200k_base'] "
            "or a callable, got 'nope'",
            "config.token_counter",
        ),
        (
            {"name": "n", "config": {"clear_message_rewriter": None}},
            "config.clear_message_rewriter cannot be set from JSON",
            "config.clear_message_rewriter",
        ),
        (
            {"name": "n", "config": {"skip_clear": "yes"}},
            "config.skip_clear must be true or false, got 'yes'",
            "config.skip_clear",
        ),
        ({"name": "n", "version": 3}, "version: Extra inputs are not permitted", "version"),
        (
            {"name": "n", "config": {"root_dir": "/" + "r" * 499}},
            "config.root_dir must be at most 299 characters, so that the offload paths under "
            "it (201 more) stay within the storage's limit of 500; got 500 characters",
            "config.root_dir",
        ),
        # What neither database stores (PostgreSQL's jsonb refused it with no field named).
        (
            {"name": "n", "config": {"root_dir": "/tmp/\ud800"}},
            "config.root_dir must not contain a lone surrogate ('\\ud800' at 5)",
            "config.root_dir",
        ),
        (
            {"name": "n", "config": {"root_dir": "/tmp/\x00"}},
            "config.root_dir must not contain NUL characters",
            "config.root_dir",
        ),
        (
            {"name": "n", "config": {"trunc_exclude_tools": ["grep\udc80"]}},
            "config.trunc_exclude_tools must not contain a lone surrogate ('\\udc80' at 4)",
            "config.trunc_exclude_tools",
        ),
        (
            {"name": "n", "config": {"clear_retention_suffix_limit": -(2**70)}},
            "config.clear_retention_suffix_limit must be at least -9223372036854775808, "
            "got -1180591620717411303424",
            "config.clear_retention_suffix_limit",
        ),
    ],
)
def test_config_create_invalid_is_422(
    api: ApiClient, body: dict[str, Any], detail: str, field: str
) -> None:
    response = api.post("/configs", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(detail, field)


def test_config_update_invalid_is_422_and_keeps_the_version(api: ApiClient) -> None:
    config_id = api.post("/configs", {"name": "a"}).json()["id"]
    response = api.put(f"/configs/{config_id}", {"config": {"root_dir": "has space"}})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "config.root_dir must be a non-empty string without whitespace, got 'has space'",
        "config.root_dir",
    )
    surrogate = api.put(f"/configs/{config_id}", {"config": {"root_dir": "/tmp/\ud800"}})
    assert surrogate.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert surrogate.json() == error(
        "config.root_dir must not contain a lone surrogate ('\\ud800' at 5)", "config.root_dir"
    )
    missing = api.put(f"/configs/{config_id}", {"name": "b"})
    assert missing.json() == error("config: Field required", "config")
    assert api.get(f"/configs/{config_id}").json()["version"] == 1


def test_configs_list_pages_with_cursors(api: ApiClient) -> None:
    for n in range(5):
        api.post("/configs", {"name": f"cfg-{n}"})
    pages = follow(api, "/configs")
    assert [[c["name"] for c in page] for page in pages] == [
        ["cfg-4", "cfg-3"],
        ["cfg-2", "cfg-1"],
        ["cfg-0"],
    ]


@pytest.mark.parametrize("method", ["get", "put", "delete"])
def test_config_id_that_is_no_integer_is_a_documented_422(api: ApiClient, method: str) -> None:
    """Found by schemathesis: GET and DELETE answered an undocumented 422."""
    response = api.client.generic(
        method.upper(),
        "/api/v1/configs/null,null",
        '{"config": {}}',
        content_type="application/json",
        headers=api.headers,
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "config_id: Input should be a valid integer, unable to parse string as an integer",
        "config_id",
    )
    assert HTTPStatus.UNPROCESSABLE_ENTITY in documented(api, method, "/configs/{config_id}")


@pytest.mark.parametrize(("method", "path"), [("post", "/configs"), ("put", "/configs/1")])
def test_config_body_that_is_no_json_is_a_documented_400(
    api: ApiClient, method: str, path: str
) -> None:
    """Found by schemathesis: POST and PUT answered an undocumented 400."""
    response = api.client.generic(
        method.upper(), "/api/v1" + path, b"\x00", "application/json", headers=api.headers
    )
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json() == error("Cannot parse request body")
    documented_path = "/configs" if method == "post" else "/configs/{config_id}"
    assert {HTTPStatus.BAD_REQUEST, HTTPStatus.REQUEST_ENTITY_TOO_LARGE} <= documented(
        api, method, documented_path
    )
