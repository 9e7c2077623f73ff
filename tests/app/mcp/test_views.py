"""The MCP endpoint's HTTP and JSON-RPC answers, through Django's test client: the
handshake, errors of the protocol, the key, the Origin, the body limit, a failing
database. The tools' answers through the mcp package's own client: test_live.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from reduction_app.mcp.tools import TOOLS
from tests.app.support import ApiClient, offload

pytestmark = pytest.mark.django_db

VERSION = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


def post(
    api: ApiClient | None, message: Any, *, version: str | None = VERSION, **headers: str
) -> Any:
    """POST one JSON-RPC message (or any JSON) to /mcp, with the key of ``api``."""
    sent = {"Accept": ACCEPT, **headers}
    if api is not None:
        sent.setdefault("Authorization", f"Bearer {api.raw_key}")
    if version is not None:
        sent["MCP-Protocol-Version"] = version
    return Client().post("/mcp", json.dumps(message), content_type="application/json", headers=sent)


def request(method: str, params: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(version: str) -> dict[str, Any]:
    return request(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    )


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return request("tools/call", {"name": name, "arguments": arguments})


def no_id_error(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


@pytest.mark.parametrize(
    ("asked", "answered"),
    [(VERSION, VERSION), ("2024-11-05", "2024-11-05"), ("1999-01-01", LATEST_HANDSHAKE_VERSION)],
)
def test_initialize_negotiates_the_protocol_version(
    api: ApiClient, asked: str, answered: str
) -> None:
    response = post(api, initialize(asked), version=None)
    assert response.status_code == HTTPStatus.OK
    assert response["Content-Type"] == "application/json"
    result = response.json()["result"]
    assert result["protocolVersion"] == answered
    assert result["serverInfo"]["name"] == "reduction-lab"
    assert result["capabilities"]["tools"] == {"listChanged": False}


def test_initialized_notification_is_accepted(api: ApiClient) -> None:
    response = post(api, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (response.status_code, response.content) == (HTTPStatus.ACCEPTED, b"")


def test_ping_answers_an_empty_result(api: ApiClient) -> None:
    assert post(api, request("ping", id=7)).json() == {"jsonrpc": "2.0", "id": 7, "result": {}}


def test_tools_list_declares_each_tool_with_its_schema(api: ApiClient) -> None:
    tools = post(api, request("tools/list")).json()["result"]["tools"]
    assert [t["name"] for t in tools] == ["read_file", "search_files", "list_files"]
    for listed, tool in zip(tools, TOOLS, strict=True):
        assert listed["description"] == tool.description
        assert listed["inputSchema"] == tool.arguments.model_json_schema()
        assert listed["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    read = tools[0]["inputSchema"]
    assert read["required"] == ["path"]
    assert read["properties"]["offset"]["description"] == "First line to read, from 0."


def test_unknown_method_is_method_not_found(api: ApiClient) -> None:
    body = post(api, request("files/delete", id=3)).json()
    assert body["id"] == 3
    assert body["error"]["code"] == METHOD_NOT_FOUND


def test_unknown_tool_is_invalid_params(api: ApiClient) -> None:
    body = post(api, call("write_file", {"path": "x"})).json()
    assert body["error"] == {"code": INVALID_PARAMS, "message": "unknown tool: write_file"}


def test_bad_arguments_are_a_tool_error_naming_each(api: ApiClient) -> None:
    """The model can correct its call: a tool error, not a protocol error."""
    body = post(api, call("read_file", {"path": "p", "offset": -1, "limit": 0})).json()
    result = body["result"]
    assert result["isError"] is True
    assert result["content"] == [
        {
            "type": "text",
            "text": "invalid arguments: offset: Input should be greater than or equal to 0; "
            "limit: Input should be greater than or equal to 1",
        }
    ]
    body = post(api, call("read_file", {"path": "p", "lines": 3})).json()
    assert body["result"]["content"][0]["text"] == (
        "invalid arguments: lines: Extra inputs are not permitted"
    )


def test_malformed_params_are_invalid_params(api: ApiClient) -> None:
    body = post(api, request("tools/call", {"arguments": {}})).json()
    assert body["error"]["code"] == INVALID_PARAMS


def test_batch_is_refused(api: ApiClient) -> None:
    """No protocol version this transport negotiates takes batches (2025-06-18 removed
    them): an array is answered 400, as the mcp package's transport answers it."""
    response = post(api, [request("ping", id=1), request("ping", id=2)])
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json()["error"]["code"] == INVALID_PARAMS


def test_unsupported_protocol_version_header_is_refused(api: ApiClient) -> None:
    response = post(api, request("tools/list"), version="1999-01-01")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert "error" in response.json()


@pytest.mark.parametrize("method", ["get", "delete", "put"])
def test_only_post_is_taken(api: ApiClient, method: str) -> None:
    headers = {"Authorization": f"Bearer {api.raw_key}", "Accept": ACCEPT}
    response = getattr(Client(), method)("/mcp", headers=headers)
    assert response.status_code == HTTPStatus.METHOD_NOT_ALLOWED
    assert response["Allow"] == "POST"
    assert response.json() == no_id_error(INVALID_REQUEST, "Method Not Allowed: POST messages")


@pytest.mark.parametrize(
    "authorization", [None, "Bearer not-a-key", "Basic dXNlcjpwYXNz", "Bearer ", "Bearer"]
)
def test_without_a_live_key_is_401(api: ApiClient, authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    response = post(None, request("tools/list"), **headers)
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json() == no_id_error(INVALID_REQUEST, "missing or invalid API key")


def test_revoked_key_is_401(api: ApiClient) -> None:
    from reduction_app.workspaces.services import api_key_revoke

    api_key_revoke(key=api.key)
    assert post(api, request("ping")).status_code == HTTPStatus.UNAUTHORIZED


@pytest.mark.parametrize(
    ("origin", "status"),
    [
        ("http://evil.example", HTTPStatus.FORBIDDEN),
        ("http://127.0.0.1.evil.example:8000", HTTPStatus.FORBIDDEN),
        ("null", HTTPStatus.FORBIDDEN),
        ("http://127.0.0.1:8000", HTTPStatus.OK),
        ("http://localhost:5173", HTTPStatus.OK),
        ("https://lab.example", HTTPStatus.OK),
    ],
)
def test_origin_must_be_a_served_host(
    api: ApiClient, settings: Any, origin: str, status: HTTPStatus
) -> None:
    """The spec's guard against DNS rebinding: an Origin whose host ALLOWED_HOSTS does
    not let in (nor one of CSRF_TRUSTED_ORIGINS) is 403, before the key is looked at."""
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://lab.example"]
    response = post(api, request("ping"), Origin=origin)
    assert response.status_code == status
    if status == HTTPStatus.FORBIDDEN:
        assert response.json() == no_id_error(
            INVALID_REQUEST, "Forbidden: this Origin is not served"
        )


def test_host_outside_allowed_hosts_is_400(api: ApiClient, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    response = post(api, request("ping"), Host="evil.example")
    assert response.status_code == HTTPStatus.BAD_REQUEST


def test_body_over_the_request_limit_is_413(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_REQUEST_BYTES = 1000
    message = call("search_files", {"pattern": "x" * 2000})
    size = len(json.dumps(message))
    response = post(api, message)
    assert response.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert response.json() == {
        "detail": f"request body of {size} bytes is over the limit of 1000 bytes",
        "field": None,
    }


def test_accept_without_json_is_406(api: ApiClient) -> None:
    response = post(api, request("ping"), Accept="text/html")
    assert response.status_code == HTTPStatus.NOT_ACCEPTABLE


@contextmanager
def database_fails_on(prefix: str) -> Iterator[list[str]]:
    """Every statement starting with ``prefix`` fails as a database that went away does."""
    refused: list[str] = []

    def fail(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.lstrip().startswith(prefix):
            refused.append(sql)
            raise OperationalError("database is locked: SELECT secret-value")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail):
        yield refused


def test_database_failure_in_a_tool_is_an_internal_error(
    api: ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    path = offload(api, "line\n" * 20)
    with database_fails_on('SELECT "reduction_app_offloadedfile"') as refused:
        body = post(api, call("read_file", {"path": path})).json()
    assert refused
    assert body["error"] == {
        "code": INTERNAL_ERROR,
        "message": "the database failed (OperationalError)",
    }
    assert "secret-value" not in caplog.text


def test_database_failure_looking_the_key_up_is_503(api: ApiClient) -> None:
    with database_fails_on('SELECT "reduction_app_apikey"') as refused:
        response = post(api, request("ping"))
    assert refused
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == no_id_error(INTERNAL_ERROR, "the database failed (OperationalError)")
