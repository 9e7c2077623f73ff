"""What was recorded, over HTTP: files (listing, reading back), events, conversations and
configs; cursor pagination, filters, and isolation between workspaces."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from reduction_app.models import Conversation, EventRecord, OffloadedFile
from tests.app.support import SMALL, ApiClient, error, follow, offload, stored_files

pytestmark = pytest.mark.django_db

DEFAULT_CONFIG = {
    "skip_truncation": False,
    "skip_clear": False,
    "read_file_tool_name": "read_file",
    "root_dir": "/tmp",
    "max_length_for_trunc": 50000,
    "trunc_exclude_tools": [],
    "token_counter": "approx",
    "max_tokens_for_clear": 160000,
    "clear_retention_suffix_limit": 1,
    "clear_at_least_tokens": 0,
    "clear_exclude_tools": [],
    "language": None,
}


# Files -----------------------------------------------------------------------------------


def test_files_list_shows_each_offload(api: ApiClient) -> None:
    text = "0123456789abcdef"
    path = offload(api, text)
    response = api.get("/files")
    assert response.status_code == HTTPStatus.OK
    [row] = response.json()["results"]
    created_at = row.pop("created_at")
    assert created_at.endswith("Z")
    assert row == {
        "path": path,
        "size_chars": 16,
        "tokens": 4,
        "sha256": hashlib.sha256(text.encode()).hexdigest(),
        "phase": "truncation",
        "tool_name": "grep",
        "call_id": "call_1",
        "conversation_id": "run-1",
        "read_count": 0,
        "last_read_at": None,
    }
    assert response.json()["next"] is None


def test_files_list_filters(api: ApiClient) -> None:
    offload(api, "a" * 20, call_id="c1", tool="grep", conversation="run-1")
    offload(api, "b" * 20, call_id="c2", tool="ls", conversation="run-2")
    offload(
        api,
        "c" * 20,
        call_id="c3",
        tool="grep",
        conversation="run-2",
        config={**SMALL, "root_dir": "/work"},
    )
    clear_body = {
        "config": {"max_tokens_for_clear": 1},
        "conversation_id": "run-2",
        "messages": [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c4",
                        "type": "function",
                        "function": {"name": "grep", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c4", "content": "d" * 20},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c5",
                        "type": "function",
                        "function": {"name": "grep", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c5", "content": "e"},
        ],
    }
    assert api.post("/clear", clear_body).status_code == HTTPStatus.OK

    def paths(**params: Any) -> list[str]:
        return [row["path"] for row in api.get("/files", params).json()["results"]]

    assert paths() == ["/tmp/clear/c4", "/work/trunc/c3", "/tmp/trunc/c2", "/tmp/trunc/c1"]
    assert paths(conversation_id="run-2") == ["/tmp/clear/c4", "/work/trunc/c3", "/tmp/trunc/c2"]
    assert paths(tool="grep") == ["/tmp/clear/c4", "/work/trunc/c3", "/tmp/trunc/c1"]
    assert paths(phase="clear") == ["/tmp/clear/c4"]
    assert paths(path_prefix="/tmp/trunc/") == ["/tmp/trunc/c2", "/tmp/trunc/c1"]
    assert paths(path_prefix="/work/", tool="grep", phase="truncation") == ["/work/trunc/c3"]
    assert paths(conversation_id="nope") == []


def test_files_list_pages_with_cursors(api: ApiClient) -> None:
    for n in range(5):
        offload(api, f"{n}" * 20, call_id=f"c{n}")
    pages = follow(api, "/files")
    assert [[row["call_id"] for row in page] for page in pages] == [
        ["c4", "c3"],
        ["c2", "c1"],
        ["c0"],
    ]


LINES = "alpha\nbeta\ngamma\ndelta\nepsilon\n"


def test_files_read_gives_numbered_lines(api: ApiClient) -> None:
    path = offload(api, LINES)
    response = api.get("/files/read", {"path": path, "offset": 1, "limit": 2})
    assert response.status_code == HTTPStatus.OK
    assert response.json() == {
        "path": path,
        "offset": 1,
        "limit": 2,
        "total_lines": 5,
        "content": "2\tbeta\n3\tgamma\n",
    }


@pytest.mark.parametrize(
    ("params", "content"),
    [
        ({}, "1\talpha\n2\tbeta\n3\tgamma\n4\tdelta\n5\tepsilon\n"),
        ({"offset": 0, "limit": 1}, "1\talpha\n"),
        ({"offset": 4}, "5\tepsilon\n"),
        ({"offset": 3, "limit": 100}, "4\tdelta\n5\tepsilon\n"),
        ({"offset": 5}, ""),
        ({"offset": 10**12}, ""),
    ],
)
def test_files_read_offset_and_limit_are_lines(
    api: ApiClient, params: dict[str, Any], content: str
) -> None:
    path = offload(api, LINES)
    body = api.get("/files/read", {"path": path, **params}).json()
    assert (body["content"], body["total_lines"]) == (content, 5)


def test_files_read_counts_a_last_line_without_newline(api: ApiClient) -> None:
    path = offload(api, "one\ntwo\n\nfour")
    body = api.get("/files/read", {"path": path}).json()
    assert (body["content"], body["total_lines"]) == ("1\tone\n2\ttwo\n3\t\n4\tfour\n", 4)


def test_files_read_shows_crlf_lines_without_the_cr(api: ApiClient) -> None:
    path = offload(api, "first line\r\nsecond line\r\n")
    body = api.get("/files/read", {"path": path}).json()
    assert (body["content"], body["total_lines"]) == ("1\tfirst line\n2\tsecond line\n", 2)


def test_files_raw_is_the_exact_original(api: ApiClient) -> None:
    text = "héllo wörld — 世界 🌍\r\nsecond\rline\r\n\ttabbed\n\n"
    path = offload(api, text)
    response = api.get("/files/raw", {"path": path})
    assert response.status_code == HTTPStatus.OK
    assert response.content == text.encode("utf-8")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-SHA256"] == hashlib.sha256(text.encode()).hexdigest()


def test_files_reads_are_counted(api: ApiClient) -> None:
    path = offload(api, LINES)
    api.get("/files/read", {"path": path})
    api.get("/files/raw", {"path": path})
    api.get("/files/read", {"path": path, "offset": 2})
    row = OffloadedFile.objects.get(path=path)
    assert row.read_count == 3
    assert row.last_read_at is not None
    [listed] = api.get("/files").json()["results"]
    assert listed["read_count"] == 3


@pytest.mark.parametrize("endpoint", ["/files/read", "/files/raw"])
def test_files_unknown_path_is_404(api: ApiClient, endpoint: str) -> None:
    response = api.get(endpoint, {"path": "/tmp/trunc/nope"})
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == error("file not found: /tmp/trunc/nope", "path")


@pytest.mark.parametrize(
    ("params", "detail", "field"),
    [
        ({}, "path: Field required", "path"),
        (
            {"path": "p", "offset": -1},
            "offset: Input should be greater than or equal to 0",
            "offset",
        ),
        (
            {"path": "p", "offset": "two"},
            "offset: Input should be a valid integer, unable to parse string as an integer",
            "offset",
        ),
        ({"path": "p", "limit": 0}, "limit: Input should be greater than or equal to 1", "limit"),
        (
            {"path": "p", "limit": 10001},
            "limit: Input should be less than or equal to 10000",
            "limit",
        ),
    ],
)
def test_files_read_bad_parameters_are_422(
    api: ApiClient, params: dict[str, Any], detail: str, field: str
) -> None:
    response = api.get("/files/read", params)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(detail, field)


@pytest.mark.parametrize("endpoint", ["/files/read", "/files/raw"])
def test_files_lost_content_is_503_without_server_paths(
    api: ApiClient, offload_dir: Path, endpoint: str
) -> None:
    path = offload(api, LINES)
    [stored] = stored_files(offload_dir)
    stored.unlink()
    response = api.get(endpoint, {"path": path})
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == error("the offload storage failed (FileNotFoundError)")
    assert OffloadedFile.objects.get().read_count == 0


def test_files_raw_without_path_is_422(api: ApiClient) -> None:
    response = api.get("/files/raw")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error("path: Field required", "path")


# Events ----------------------------------------------------------------------------------


def test_events_list_and_filters(api: ApiClient) -> None:
    offload(api, "a" * 20, call_id="c1", tool="grep", conversation="run-1")
    offload(api, "b" * 20, call_id="c2", tool="ls", conversation="run-2")
    api.post(
        "/clear", {"conversation_id": "run-2", "messages": [{"role": "user", "content": "hi"}]}
    )

    def calls(**params: Any) -> list[tuple[str, str, str]]:
        response = api.get("/events", params)
        assert response.status_code == HTTPStatus.OK
        return [(e["phase"], e["kind"], e["call_id"]) for e in response.json()["results"]]

    assert calls() == [
        ("clear", "summary", ""),
        ("truncation", "tool", "c2"),
        ("truncation", "tool", "c1"),
    ]
    assert calls(conversation_id="run-2") == [
        ("clear", "summary", ""),
        ("truncation", "tool", "c2"),
    ]
    assert calls(phase="truncation") == [("truncation", "tool", "c2"), ("truncation", "tool", "c1")]
    assert calls(tool="ls") == [("truncation", "tool", "c2")]
    assert calls(phase="clear", conversation_id="run-1") == []


def test_events_time_range(api: ApiClient) -> None:
    for n in range(3):
        offload(api, f"{n}" * 20, call_id=f"c{n}")
    for n, day in enumerate((1, 2, 3)):
        EventRecord.objects.filter(call_id=f"c{n}").update(
            created_at=datetime(2025, 1, day, 12, tzinfo=UTC)
        )

    def calls(**params: Any) -> list[str]:
        response = api.get("/events", params)
        assert response.status_code == HTTPStatus.OK, response.json()
        return [e["call_id"] for e in response.json()["results"]]

    assert calls(since="2025-01-02T12:00:00Z") == ["c2", "c1"]  # since is inclusive
    assert calls(until="2025-01-02T12:00:00Z") == ["c0"]  # until is exclusive
    assert calls(since="2025-01-02T00:00:00+00:00", until="2025-01-03T00:00:00+00:00") == ["c1"]
    assert calls(since="2025-01-02T13:00:00+02:00") == ["c2", "c1"]
    assert calls(since="2025-01-03T00:00:00") == ["c2"]  # a time without a zone is UTC
    assert calls(until="2025-01-01") == []


def test_events_bad_time_is_422(api: ApiClient) -> None:
    response = api.get("/events", {"since": "yesterday"})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "since: Input should be a valid datetime or date, input is too short", "since"
    )


def test_events_pages_with_cursors(api: ApiClient) -> None:
    for n in range(7):
        offload(api, f"{n}" * 20, call_id=f"c{n}")
    pages = follow(api, "/events")
    ids = [e["id"] for page in pages for e in page]
    assert [len(page) for page in pages] == [2, 2, 2, 1]
    assert ids == sorted(ids, reverse=True)
    assert len(set(ids)) == 7
    assert [e["call_id"] for page in pages for e in page] == [f"c{n}" for n in range(6, -1, -1)]


def test_events_pages_keep_their_filters(api: ApiClient) -> None:
    for n in range(4):
        offload(api, f"{n}" * 20, call_id=f"g{n}", tool="grep")
        offload(api, f"{n}" * 20, call_id=f"l{n}", tool="ls")
    pages = follow(api, "/events", tool="ls")
    assert [[e["call_id"] for e in page] for page in pages] == [["l3", "l2"], ["l1", "l0"]]


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!",
        base64.b64encode(b"o=-1").decode(),
        base64.b64encode(b"p=abc").decode(),
        base64.b64encode(b"r=maybe").decode(),
        base64.b64encode(b"p=99999999999999999999999999").decode(),
        base64.b64encode("p=١٢".encode()).decode(),
    ],
)
@pytest.mark.parametrize("endpoint", ["/events", "/files", "/conversations", "/configs"])
def test_lists_refuse_a_cursor_they_did_not_make(
    api: ApiClient, endpoint: str, cursor: str
) -> None:
    response = api.get(endpoint, {"cursor": cursor})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "cursor: not a cursor from this API; follow the next and previous links", "cursor"
    )


# Conversations ---------------------------------------------------------------------------

CHAT = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": "hello"},
]


def test_conversation_create_and_get(api: ApiClient) -> None:
    response = api.post(
        "/conversations", {"conversation_id": "run-1", "title": "First", "messages": CHAT}
    )
    assert response.status_code == HTTPStatus.CREATED
    body = response.json()
    created, updated = body.pop("created_at"), body.pop("updated_at")
    assert body == {
        "conversation_id": "run-1",
        "title": "First",
        "format": "openai_chat",
        "message_count": 2,
        "messages": CHAT,
        "system": None,
        "tools": [],
        "event_count": 0,
        "file_count": 0,
    }
    got = api.get("/conversations/run-1")
    assert got.status_code == HTTPStatus.OK
    assert got.json() == {**body, "created_at": created, "updated_at": updated}


def test_conversation_create_anthropic_with_system(api: ApiClient) -> None:
    body = {"conversation_id": "c", "format": "anthropic", "system": "Be brief.", "messages": CHAT}
    response = api.post("/conversations", body)
    assert response.status_code == HTTPStatus.CREATED
    assert (response.json()["system"], response.json()["format"]) == ("Be brief.", "anthropic")


def test_conversation_get_counts_events_and_files(api: ApiClient) -> None:
    offload(api, "a" * 20, call_id="c1")
    offload(api, "b" * 20, call_id="c2")
    body = api.get("/conversations/run-1").json()
    assert (body["event_count"], body["file_count"], body["message_count"]) == (2, 2, 0)


@pytest.mark.parametrize(
    ("body", "detail", "field"),
    [
        ({}, "conversation_id: Field required", "conversation_id"),
        (
            {"conversation_id": ""},
            "conversation_id: String should have at least 1 character",
            "conversation_id",
        ),
        (
            {"conversation_id": "c", "messages": [{"role": "robot"}]},
            "messages[0].role: unknown role 'robot'",
            "messages[0].role",
        ),
        (
            {"conversation_id": "c", "system": "s"},
            "system is only taken with format 'anthropic'",
            "system",
        ),
        (
            {"conversation_id": "c", "format": "xml"},
            "format: Input should be 'openai_chat', 'anthropic' or 'openai_responses'",
            "format",
        ),
        ({"conversation_id": "c", "id": 1}, "id: Extra inputs are not permitted", "id"),
    ],
)
def test_conversation_create_invalid_is_422(
    api: ApiClient, body: dict[str, Any], detail: str, field: str
) -> None:
    response = api.post("/conversations", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(detail, field)
    assert Conversation.objects.count() == 0


def test_conversation_unknown_is_404(api: ApiClient) -> None:
    for response in (api.get("/conversations/nope"), api.delete("/conversations/nope")):
        assert response.status_code == HTTPStatus.NOT_FOUND
        assert response.json() == error("conversation 'nope' not found", "conversation_id")


def test_conversation_delete_removes_its_events_files_and_content(
    api: ApiClient, offload_dir: Path, django_capture_on_commit_callbacks: Any
) -> None:
    gone = offload(api, "a" * 20, call_id="c1", conversation="run-1")
    kept = offload(api, "b" * 20, call_id="c2", conversation="run-2")
    assert len(stored_files(offload_dir)) == 2
    # The content goes once the deletion is committed.
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete("/conversations/run-1")
    assert response.status_code == HTTPStatus.NO_CONTENT
    assert response.content == b""
    assert api.get("/conversations/run-1").status_code == HTTPStatus.NOT_FOUND
    assert api.get("/files/raw", {"path": gone}).status_code == HTTPStatus.NOT_FOUND
    assert [e["conversation_id"] for e in api.get("/events").json()["results"]] == ["run-2"]
    assert [f["path"] for f in api.get("/files").json()["results"]] == [kept]
    [left] = stored_files(offload_dir)
    assert left.read_bytes() == b"b" * 20


def test_conversation_delete_is_done_even_when_the_storage_fails_to_remove_content(
    api: ApiClient, offload_dir: Path, django_capture_on_commit_callbacks: Any, monkeypatch: Any
) -> None:
    """The rows are gone: leftover bytes must not turn a done delete into an error."""
    from django.core.files.storage import FileSystemStorage

    def refuse(self: Any, name: str) -> None:
        raise PermissionError(name)

    offload(api, "a" * 20, call_id="c1", conversation="run-1")
    monkeypatch.setattr(FileSystemStorage, "delete", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete("/conversations/run-1")
    assert response.status_code == HTTPStatus.NO_CONTENT
    assert api.get("/conversations/run-1").status_code == HTTPStatus.NOT_FOUND


def test_conversations_list_pages_with_cursors(api: ApiClient) -> None:
    for n in range(5):
        api.post("/conversations", {"conversation_id": f"run-{n}"})
    pages = follow(api, "/conversations")
    assert [[c["conversation_id"] for c in page] for page in pages] == [
        ["run-4", "run-3"],
        ["run-2", "run-1"],
        ["run-0"],
    ]
    assert set(pages[0][0]) == {
        "conversation_id",
        "title",
        "format",
        "message_count",
        "created_at",
        "updated_at",
    }


def test_conversations_list_search(api: ApiClient) -> None:
    api.post("/conversations", {"conversation_id": "run-1", "title": "Refactor parser"})
    api.post("/conversations", {"conversation_id": "run-2", "title": "Fix tests"})
    found = api.get("/conversations", {"search": "PARSER"}).json()["results"]
    assert [c["conversation_id"] for c in found] == ["run-1"]


# Configs ---------------------------------------------------------------------------------


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


# Isolation -------------------------------------------------------------------------------


def test_other_workspace_gets_404_for_everything(api: ApiClient, other_api: ApiClient) -> None:
    path = offload(api, "secret" * 5, conversation="run-1")
    config_id = api.post("/configs", {"name": "mine"}).json()["id"]
    responses = {
        "conversation": other_api.get("/conversations/run-1"),
        "conversation delete": other_api.delete("/conversations/run-1"),
        "file read": other_api.get("/files/read", {"path": path}),
        "file raw": other_api.get("/files/raw", {"path": path}),
        "config": other_api.get(f"/configs/{config_id}"),
        "config update": other_api.put(f"/configs/{config_id}", {"config": {}}),
        "config delete": other_api.delete(f"/configs/{config_id}"),
        "truncate with config": other_api.post(
            "/truncate", {"config_id": config_id, "tool_name": "t", "result": "x"}
        ),
        "clear with config": other_api.post("/clear", {"config_id": config_id, "messages": []}),
    }
    assert {name: r.status_code for name, r in responses.items()} == dict.fromkeys(
        responses, HTTPStatus.NOT_FOUND
    )
    assert responses["file raw"].json() == error(f"file not found: {path}", "path")
    for endpoint in ("/events", "/files", "/conversations", "/configs"):
        assert other_api.get(endpoint).json()["results"] == [], endpoint
    # Nothing of A's was changed by B's attempts.
    assert api.get(f"/configs/{config_id}").json()["version"] == 1
    assert api.get("/conversations/run-1").status_code == HTTPStatus.OK
    assert api.get("/files/raw", {"path": path}).content == b"secret" * 5
    assert OffloadedFile.objects.get(path=path).read_count == 1


def test_workspaces_use_the_same_ids_and_paths_apart(api: ApiClient, other_api: ApiClient) -> None:
    mine = offload(api, "mine" * 5, conversation="run-1")
    theirs = offload(other_api, "theirs" * 5, conversation="run-1")
    assert mine == theirs == "/tmp/trunc/call_1"
    assert api.get("/files/raw", {"path": mine}).content == b"mine" * 5
    assert other_api.get("/files/raw", {"path": theirs}).content == b"theirs" * 5
    assert other_api.delete("/conversations/run-1").status_code == HTTPStatus.NO_CONTENT
    assert api.get("/files/raw", {"path": mine}).content == b"mine" * 5
    assert [e["conversation_id"] for e in api.get("/events").json()["results"]] == ["run-1"]


# OpenAPI ---------------------------------------------------------------------------------


def test_openapi_document_generates(api: ApiClient) -> None:
    response = api.client.get("/api/v1/openapi.json")
    assert response.status_code == HTTPStatus.OK
    document = response.json()
    assert document["info"]["title"] == "Reduction Lab API"
    paths = document["paths"]
    for path in (
        "/api/v1/truncate",
        "/api/v1/clear",
        "/api/v1/files",
        "/api/v1/files/read",
        "/api/v1/files/raw",
        "/api/v1/events",
        "/api/v1/conversations",
        "/api/v1/conversations/{conversation_id}",
        "/api/v1/configs",
        "/api/v1/configs/{config_id}",
        "/api/v1/tools/read_file",
    ):
        assert path in paths, path
    assert set(paths["/api/v1/truncate"]["post"]["responses"]) == {
        "200",
        "401",
        "404",
        "413",
        "422",
        "503",
    }
    assert set(paths["/api/v1/events"]["get"]["responses"]) == {"200", "401", "422"}
    assert paths["/api/v1/events"]["get"]["tags"] == ["events"]
    assert paths["/api/v1/clear"]["post"]["tags"] == ["engine"]


def test_docs_page_answers(api: ApiClient) -> None:
    response = api.client.get("/api/v1/docs")
    assert response.status_code == HTTPStatus.OK
    assert b"Reduction Lab API" in response.content


def test_conversation_ids_with_dot_segments_are_refused(api: Any) -> None:
    """Browsers resolve "." and ".." in a page address away; such ids would open another page."""
    for bad in (".", "..", "a/../b", "./x"):
        response = api.post("/conversations", {"conversation_id": bad, "messages": []})
        assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, bad
        assert response.json()["field"] == "conversation_id"
    assert (
        api.post("/conversations", {"conversation_id": "a.b/c..d", "messages": []}).status_code
        == 201
    )
