"""reduction_app.client against a live server: answers, and errors as ReductionAPIError."""

from __future__ import annotations

import hashlib
from http import HTTPStatus
from typing import Any

import pytest

from reduction_app.client import ReductionAPIError, ReductionClient
from reduction_app.workspaces.services import (
    api_key_create,
    api_key_revoke,
    workspace_get_or_create,
)

BIG = "".join(f"line {n}\n" for n in range(1, 2001))
CONFIG = {"max_length_for_trunc": 100}


@pytest.fixture
def client(live_server: Any, transactional_db: None) -> ReductionClient:
    _, raw = api_key_create(workspace=workspace_get_or_create(name="client"), name="client test")
    return ReductionClient(live_server.url, api_key=raw)


def _error(call: Any) -> ReductionAPIError:
    with pytest.raises(ReductionAPIError) as caught:
        call()
    return caught.value


def test_client_truncate_then_read_file_and_raw_file(client: ReductionClient) -> None:
    out = client.truncate(
        tool_name="grep",
        tool_call_id="call_1",
        result=BIG,
        conversation_id="client-1",
        config=CONFIG,
    )
    assert (out["truncated"], out["offload_path"]) == (True, "/tmp/trunc/call_1")
    assert client.raw_file("/tmp/trunc/call_1") == BIG
    read = client.read_file("/tmp/trunc/call_1", offset=2, limit=2)
    assert read == {
        "path": "/tmp/trunc/call_1",
        "offset": 2,
        "limit": 2,
        "total_lines": 2000,
        "content": "3\tline 3\n4\tline 4\n",
    }
    [row] = client.files(conversation_id="client-1")["results"]
    assert (row["path"], row["read_count"]) == ("/tmp/trunc/call_1", 2)
    assert row["sha256"] == hashlib.sha256(BIG.encode()).hexdigest()
    [event] = client.events(conversation_id="client-1", phase="truncation")["results"]
    assert (event["call_id"], event["chars_before"]) == ("call_1", len(BIG))


def test_client_clear_returns_messages_to_send(client: ReductionClient) -> None:
    messages = [{"role": "user", "content": "hi"}]
    out = client.clear(messages, conversation_id="client-2")
    assert (out["messages"], out["applied"]) == (messages, False)


def test_client_read_file_tool_definitions(client: ReductionClient) -> None:
    tools = client.read_file_tool()
    assert tools["openai"]["function"]["name"] == "read_file"
    assert tools["anthropic"]["name"] == "read_file"
    assert tools["responses"]["name"] == "read_file"


def test_client_error_bad_key_is_401(live_server: Any, transactional_db: None) -> None:
    error = _error(ReductionClient(live_server.url, api_key="rl_nope").read_file_tool)
    assert (error.status, error.detail, error.field) == (
        HTTPStatus.UNAUTHORIZED,
        "missing or invalid API key",
        None,
    )
    assert str(error) == "HTTP 401: missing or invalid API key"


def test_client_error_revoked_key_is_401(live_server: Any, transactional_db: None) -> None:
    key, raw = api_key_create(workspace=workspace_get_or_create(name="client"), name="old")
    api_key_revoke(key=key)
    error = _error(ReductionClient(live_server.url, api_key=raw).read_file_tool)
    assert error.status == HTTPStatus.UNAUTHORIZED


def test_client_error_unknown_config_field_is_422_naming_it(client: ReductionClient) -> None:
    error = _error(lambda: client.truncate(tool_name="t", result="x", config={"nope": 1}))
    assert (error.status, error.detail, error.field) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "config.nope is not a config field",
        "config.nope",
    )


def test_client_error_bad_config_value_is_422_naming_it(client: ReductionClient) -> None:
    error = _error(lambda: client.clear([], config={"max_tokens_for_clear": -1}))
    assert (error.status, error.field) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "config.max_tokens_for_clear",
    )
    assert error.detail == "config.max_tokens_for_clear must be at least 0, got -1"


def test_client_error_bad_message_is_422_naming_it(client: ReductionClient) -> None:
    error = _error(lambda: client.clear([{"role": "wizard", "content": "x"}]))
    assert (error.status, error.detail, error.field) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        "messages[0].role: unknown role 'wizard'",
        "messages[0].role",
    )


def test_client_error_missing_file_is_404(client: ReductionClient) -> None:
    error = _error(lambda: client.read_file("/tmp/trunc/none"))
    assert (error.status, error.detail) == (HTTPStatus.NOT_FOUND, "file not found: /tmp/trunc/none")
    assert _error(lambda: client.raw_file("/tmp/trunc/none")).status == HTTPStatus.NOT_FOUND


def test_client_error_other_workspace_file_is_404(
    client: ReductionClient, live_server: Any
) -> None:
    client.truncate(tool_name="grep", tool_call_id="call_9", result=BIG, config=CONFIG)
    _, raw = api_key_create(workspace=workspace_get_or_create(name="other"), name="other")
    other = ReductionClient(live_server.url, api_key=raw)
    error = _error(lambda: other.read_file("/tmp/trunc/call_9"))
    assert (error.status, error.detail) == (
        HTTPStatus.NOT_FOUND,
        "file not found: /tmp/trunc/call_9",
    )


def test_client_error_request_too_large_is_413(client: ReductionClient, settings: Any) -> None:
    settings.REDUCTION_MAX_REQUEST_BYTES = 1000
    error = _error(lambda: client.truncate(tool_name="t", result="x" * 2000))
    assert error.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert error.detail.startswith("request body of ")
    assert error.detail.endswith(" bytes is over the limit of 1000 bytes")


def test_client_error_without_json_body_keeps_the_text(
    live_server: Any, transactional_db: None
) -> None:
    """A page that is not the API (a wrong base URL) still raises, with the page as detail."""
    client = ReductionClient(live_server.url + "/nowhere", api_key="rl_x")
    error = _error(client.read_file_tool)
    assert (error.status, error.field) == (HTTPStatus.NOT_FOUND, None)
    assert "Not Found" in error.detail


def test_client_raw_file_round_trips_lone_surrogates(client: ReductionClient) -> None:
    """A tool's undecodable bytes (decoded with surrogateescape) are stored as they came;
    ``/files/raw`` sends them as UTF-8 writes any code point, and the client reads them
    back exactly."""
    text = "binary tail: \udcff\udcfe " + "x" * 200
    out = client.truncate(
        tool_name="cat", tool_call_id="call_s", result=text, conversation_id="c", config=CONFIG
    )
    assert out["truncated"] is True
    assert client.raw_file(out["offload_path"]) == text
