"""reduction_app.client against a live server: answers, and errors as ReductionAPIError."""

from __future__ import annotations

import hashlib
from http import HTTPStatus
from typing import Any

import pytest

from reduction_app.client import LabBackend, ReductionAPIError, ReductionClient
from reduction_app.engine import (
    OffloadError,
    ReductionConfig,
    ToolContext,
    WriteRequest,
    new,
    truncate_output,
)
from reduction_app.models import Workspace
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


def _round(n: int) -> list[dict[str, Any]]:
    call = {
        "id": f"call_{n}",
        "type": "function",
        "function": {"name": "grep", "arguments": "{}"},
    }
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": f"output {n}\n" * (20 + n)},
    ]


CLEARING = {"max_tokens_for_clear": 200, "clear_retention_suffix_limit": 1}


def test_client_clear_sends_only_new_messages_and_gives_the_whole_context(
    client: ReductionClient, live_server: Any
) -> None:
    """Each call after the first continues the last answer (the server answers from an
    index past 0 only then), and the whole context it gives equals what a client sending
    its whole context every time gets."""
    _, raw = api_key_create(workspace=workspace_get_or_create(name="client"), name="whole")
    whole = ReductionClient(live_server.url, api_key=raw)
    whole.contexts_kept = 0  # keeps no context: sends the whole one every time
    mine = theirs = [{"role": "user", "content": "go"}]
    continued = 0
    for n in range(12):
        out = client.clear(mine, conversation_id="stateful", config=CLEARING)
        reference = whole.clear(theirs, conversation_id="whole", config=CLEARING)
        assert out["messages"] == reference["messages"]
        assert reference["from_index"] == 0
        continued += out["from_index"] > 0
        mine = out["messages"] + _round(n)
        theirs = reference["messages"] + _round(n)
    assert continued == 11


def test_client_clear_sends_the_whole_context_when_its_revision_is_stale(
    client: ReductionClient, live_server: Any
) -> None:
    _, raw = api_key_create(workspace=workspace_get_or_create(name="client"), name="other")
    other = ReductionClient(live_server.url, api_key=raw)
    first = client.clear([{"role": "user", "content": "go"}], conversation_id="shared")
    # Another client answers the conversation meanwhile: this one's revision is stale.
    other.clear(first["messages"] + _round(1), conversation_id="shared")
    out = client.clear(first["messages"] + _round(2), conversation_id="shared")
    assert out["messages"] == first["messages"] + _round(2)
    assert out["from_index"] == 0  # sent whole
    again = client.clear(out["messages"] + _round(3), conversation_id="shared")
    assert again["from_index"] == len(out["messages"])  # continued
    assert again["messages"] == out["messages"] + _round(3)


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


# LabBackend: the engine in this process, its offloads stored in the Lab ---------------

NON_ASCII = "".join(f'ligne {n}: café ✓ 漢字 🚀 \\ "q"\r\n' for n in range(400)) + "\udcff end"


def _lab_engine(client: ReductionClient, conversation_id: str = "lab-1") -> Any:
    backend = LabBackend(client, conversation_id=conversation_id)
    return new(ReductionConfig(backend=backend, max_length_for_trunc=100))


def test_lab_backend_stores_a_truncation_in_the_lab(client: ReductionClient) -> None:
    """A truncation of the engine run here offloads into the Lab: listed, read back whole."""
    out = truncate_output(
        _lab_engine(client), NON_ASCII, ToolContext(name="grep", call_id="call_9")
    )
    assert "/tmp/trunc/call_9" in out
    [row] = client.files(conversation_id="lab-1")["results"]
    data = NON_ASCII.encode("utf-8", "surrogatepass")
    assert (row["path"], row["size_chars"], row["sha256"], row["phase"]) == (
        "/tmp/trunc/call_9",
        len(NON_ASCII),
        hashlib.sha256(data).hexdigest(),
        "",
    )
    assert client.raw_file("/tmp/trunc/call_9") == NON_ASCII
    backend = LabBackend(client, conversation_id="lab-1")
    assert backend.read("/tmp/trunc/call_9") == NON_ASCII
    with pytest.raises(FileNotFoundError, match=r"^file not found: /tmp/trunc/none$"):
        backend.read("/tmp/trunc/none")


def test_lab_backend_same_output_again_reuses_its_file(client: ReductionClient) -> None:
    """The engine finds the path it would take holding this content, and writes it again:
    the Lab answers the same file, and lists it once."""
    engine = _lab_engine(client)
    for _ in range(2):
        truncate_output(engine, NON_ASCII, ToolContext(name="grep", call_id="call_1"))
    other = _lab_engine(client)
    truncate_output(other, NON_ASCII + "!", ToolContext(name="grep", call_id="call_1"))
    paths = sorted(row["path"] for row in client.files(conversation_id="lab-1")["results"])
    assert paths[0] == "/tmp/trunc/call_1"
    assert len(paths) == 2 and paths[1].startswith("/tmp/trunc/call_1-")
    assert client.raw_file(paths[1]) == NON_ASCII + "!"


def test_write_file_is_idempotent_and_never_overwrites(client: ReductionClient) -> None:
    first = client.write_file("/notes/a.txt", "é", conversation_id="w-1")
    again = client.write_file("/notes/a.txt", "é", conversation_id="w-1")
    assert first == again
    assert (first["path"], first["size_chars"], first["conversation_id"]) == (
        "/notes/a.txt",
        1,
        "w-1",
    )
    # Another conversation may name the path for the same content, never for other content.
    assert client.write_file("/notes/a.txt", "é", conversation_id="w-2")["conversation_id"] == "w-2"
    error = _error(lambda: client.write_file("/notes/a.txt", "e", conversation_id="w-3"))
    assert error.status == HTTPStatus.CONFLICT
    assert error.detail.startswith("/notes/a.txt already holds other content (SHA-256 ")
    assert client.raw_file("/notes/a.txt") == "é"
    assert [r["conversation_id"] for r in client.files(path_prefix="/notes/")["results"]] == [
        "w-2",
        "w-1",
    ]


def test_write_file_refuses_paths_that_would_leave_the_root(client: ReductionClient) -> None:
    for path in ("/tmp/../../etc/passwd", "a/..", "x\x00y"):
        error = _error(lambda path=path: client.write_file(path, "x"))
        assert error.status in (HTTPStatus.BAD_REQUEST, HTTPStatus.UNPROCESSABLE_ENTITY), path
    assert client.files()["results"] == []


def test_lab_backend_bad_key_is_a_401(live_server: Any, transactional_db: None) -> None:
    """The engine reads the path it would take first: that read is refused, as it is."""
    engine = _lab_engine(ReductionClient(live_server.url, api_key="rl_nope"))
    with pytest.raises(ReductionAPIError) as caught:
        truncate_output(engine, NON_ASCII, ToolContext(name="grep", call_id="c"))
    assert (caught.value.status, caught.value.detail) == (
        HTTPStatus.UNAUTHORIZED,
        "missing or invalid API key",
    )
    with pytest.raises(ReductionAPIError, match=r"^HTTP 401: missing or invalid API key$"):
        LabBackend(ReductionClient(live_server.url, api_key="rl_nope")).write(
            WriteRequest(file_path="/a", content="x")
        )


def test_lab_backend_over_quota_is_an_offload_error_caused_by_429(
    client: ReductionClient,
) -> None:
    Workspace.objects.filter(name="client").update(offload_quota_bytes=100)
    with pytest.raises(OffloadError) as caught:
        truncate_output(_lab_engine(client), NON_ASCII, ToolContext(name="grep", call_id="q"))
    cause = caught.value.__cause__
    assert isinstance(cause, ReductionAPIError)
    size = len(NON_ASCII.encode("utf-8", "surrogatepass"))
    assert (cause.status, cause.detail) == (
        HTTPStatus.TOO_MANY_REQUESTS,
        "offload quota exceeded: the workspace holds 0 bytes of offloaded content and this "
        f"request would add {size}, over its quota of 100 bytes; nothing was recorded",
    )
    assert client.files()["results"] == []
