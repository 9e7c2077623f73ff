"""Every list of the REST API and of the dashboard answers in as many queries with 20 rows
as with one: no query per row. The rows carry everything a list shows of them (each event
and file a conversation and a config version, each config several versions, each
simulation its results)."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from reduction_app.api import api as ninja_api
from reduction_app.configs.services import config_create, config_update
from reduction_app.models import (
    ConfigProfile,
    Conversation,
    Simulation,
    TelemetryGroup,
    Workspace,
)
from reduction_app.workspaces.services import api_key_create
from tests.app.dashboard_data import member_client
from tests.app.support import API, ApiClient

pytestmark = pytest.mark.django_db

FEW, MANY = 1, 20

API_QUERIES = {
    # The key with its workspace, then one page.
    "/files": 2,
    "/events": 2,
    "/conversations": 2,
    "/simulations": 2,
    "/otel/sessions": 2,
    # ... and the page's versions, in one query.
    "/configs": 3,
}
"""Queries of each list operation, whatever the page holds."""

DASHBOARD_LISTS = {
    "/": "<code><bdi>call_19</bdi></code>",
    "/conversations/": ">run-19<",
    "/conversations/?sort=-cost&pricing=gpt-4.1": ">run-19<",
    "/conversations/?sort=saved": ">run-19<",
    "/events/": "<code><bdi>call_19</bdi></code>",
    "/events/?sort=-saved": "<code><bdi>call_19</bdi></code>",
    "/events/?sort=tool&phase=truncation": "<code><bdi>call_19</bdi></code>",
    "/files/": "<code><bdi>/tmp/trunc/call_19</bdi></code>",
    "/files/?sort=path": "<code><bdi>/tmp/trunc/call_19</bdi></code>",
    "/simulations/": ">run-19<",
    "/simulations/?sort=-done&kind=replay": ">run-19<",
    "/configs/": "config 19",
    "/configs/?sort=-version&q=config": "config 19",
    "/configs/{profile}/versions/": 'id="v20"',
    "/traces/": "<code><bdi>session:run-19</bdi></code>",
}
"""Each page's lists, and what the page shows of its 20th row."""


def fill(client: ApiClient, start: int, count: int) -> int:
    """``count`` more of everything, numbered from ``start``: per number a config with two
    versions, a truncation under it (a file and an event of their own conversation) and a
    finished simulation of that conversation. The id of the first config."""
    first = 0
    for i in range(start, start + count):
        version = config_create(
            workspace=client.workspace, name=f"config {i}", data={"max_length_for_trunc": 10}
        )
        config_update(profile=version.profile, data={"max_length_for_trunc": 12})
        first = first or version.profile_id
        body = {
            "config_id": version.profile_id,
            "tool_name": "grep",
            "tool_call_id": f"call_{i}",
            "result": f"match {i} " * 10,
            "conversation_id": f"run-{i}",
        }
        response = client.post("/truncate", body)
        assert response.status_code == HTTPStatus.OK, response.json()
        Simulation.objects.create(
            workspace=client.workspace,
            conversation=Conversation.objects.get(client_id=f"run-{i}"),
            configs=[{"name": "defaults", "config": {}}],
            status="done",
            results={"runs": [{"name": "defaults", "billed_tokens": i}]},
        )
        TelemetryGroup.objects.create(
            workspace=client.workspace, key=f"session:run-{i}", conversations=[f"run-{i}"]
        )
    return first


def queries(request: Callable[[], Any]) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = request()
    assert response.status_code == HTTPStatus.OK
    return len(captured)


@pytest.mark.parametrize("path", sorted(API_QUERIES))
def test_api_list_query_count_is_constant(
    api: ApiClient, path: str, django_assert_num_queries: Any
) -> None:
    fill(api, 0, FEW)
    # The key's last use is written at most once a minute: not by the counted requests.
    api.get(path)
    assert queries(lambda: api.get(path)) == API_QUERIES[path]
    fill(api, FEW, MANY - FEW)
    with django_assert_num_queries(API_QUERIES[path]):
        response = api.get(path)
    assert len(response.json()["results"]) == MANY


def _is_list(operation: dict[str, Any], schemas: dict[str, Any]) -> bool:
    # The document holds status codes as numbers until it is serialised.
    # A list answers JSON; /files/raw answers text/plain.
    answer = (
        operation["responses"].get(HTTPStatus.OK, {}).get("content", {}).get("application/json")
    )
    if answer is None:
        return False
    schema = answer["schema"]
    if "$ref" in schema:
        schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
    # A page of a list: {"previous", "next", "results"}.
    return schema.get("type") == "array" or {"previous", "next", "results"} <= set(
        schema.get("properties", {})
    )


def test_api_list_query_tests_cover_every_list_operation() -> None:
    document = ninja_api.get_openapi_schema()
    schemas = document["components"]["schemas"]
    lists = {
        path.removeprefix(API)
        for path, operations in document["paths"].items()
        if "get" in operations and _is_list(operations["get"], schemas)
    }
    assert lists == set(API_QUERIES)


def _member_api(workspace: Workspace) -> ApiClient:
    key, raw = api_key_create(workspace=workspace, name="filler")
    return ApiClient(Client(), raw, key, workspace)


@pytest.mark.parametrize("page", sorted(DASHBOARD_LISTS))
def test_dashboard_list_query_count_is_constant(page: str, django_assert_num_queries: Any) -> None:
    client, workspace = member_client()
    filler = _member_api(workspace)
    profile = ConfigProfile.objects.get(pk=fill(filler, 0, FEW))
    url = page.format(profile=profile.pk)
    client.get(url)
    few = queries(lambda: client.get(url))
    fill(filler, FEW, MANY - FEW)
    # The versions page lists one config's versions: the first config gets 20.
    for number in range(3, MANY + 1):
        config_update(profile=profile, data={"max_length_for_trunc": 10 + number})
    with django_assert_num_queries(few):
        response = client.get(url)
    assert DASHBOARD_LISTS[page] in response.content.decode()
