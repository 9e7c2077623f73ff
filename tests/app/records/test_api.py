"""Events and offloaded files over HTTP: listing and filtering, reading files back
(numbered lines, raw bytes), cursor pagination."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

import pytest

from reduction_app.models import EventRecord, OffloadedFile
from tests.app.support import SMALL, ApiClient, documented, error, follow, grep_rounds, offload
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db


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


@pytest.mark.usefixtures("offloads")
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


@pytest.mark.usefixtures("offloads")
def test_files_raw_is_the_exact_original(api: ApiClient) -> None:
    text = "héllo wörld — 世界 🌍\r\nsecond\rline\r\n\ttabbed\n\n"
    path = offload(api, text)
    response = api.get("/files/raw", {"path": path})
    assert response.status_code == HTTPStatus.OK
    assert response.content == text.encode("utf-8")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-SHA256"] == hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.usefixtures("offloads")
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
def test_files_reads_of_a_shared_path_are_those_of_the_conversation_named(
    api: ApiClient, endpoint: str
) -> None:
    """Two conversations name one path: each has its file, read and counted on its own."""
    path = offload(api, LINES, conversation="run-1")
    assert offload(api, LINES, conversation="run-2") == path
    offload(api, "other output", call_id="call_9", conversation="run-3")
    for _ in range(2):
        assert (
            api.get(endpoint, {"path": path, "conversation_id": "run-2"}).status_code
            == HTTPStatus.OK
        )
    reads = {f["conversation_id"]: f["read_count"] for f in api.get("/files").json()["results"]}
    assert reads == {"run-1": 0, "run-2": 2, "run-3": 0}
    for conversation in ("run-3", "nobody"):
        response = api.get(endpoint, {"path": path, "conversation_id": conversation})
        assert response.status_code == HTTPStatus.NOT_FOUND
        assert response.json() == error(f"file not found: {path}", "path")


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
    api: ApiClient, offloads: OffloadStore, endpoint: str
) -> None:
    path = offload(api, LINES)
    [stored] = offloads.names()
    offloads.remove(stored)
    response = api.get(endpoint, {"path": path})
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == error("the offload storage failed (FileNotFoundError)")
    assert OffloadedFile.objects.get().read_count == 0


DAMAGED = (
    "the stored content of {} is damaged (it does not match its recorded SHA-256); it is not served"
)


@pytest.mark.parametrize("endpoint", ["/files/read", "/files/raw"])
@pytest.mark.parametrize("damage", [b"", LINES.encode()[:7], LINES.upper().encode()])
def test_files_damaged_content_is_503_naming_the_path(
    api: ApiClient, offloads: OffloadStore, endpoint: str, damage: bytes
) -> None:
    """Empty, truncated, or of the right size with other bytes: never served as the file."""
    path = offload(api, LINES)
    [stored] = offloads.names()
    offloads.put(stored, damage)
    response = api.get(endpoint, {"path": path})
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == error(DAMAGED.format(path), "path")
    assert OffloadedFile.objects.get().read_count == 0


@pytest.mark.parametrize("damage", [b"", LINES.encode()[:7]])
def test_files_content_left_damaged_at_its_name_is_stored_whole_again(
    api: ApiClient, offloads: OffloadStore, damage: bytes
) -> None:
    """A write that stopped half-way (an empty or truncated file at the content's name)
    does not pass for the content: the next request that offloads it writes it again."""
    digest = hashlib.sha256(LINES.encode()).hexdigest()
    name = f"ws{api.workspace.pk}/{digest[:2]}/{digest}.txt"
    offloads.put(name, damage)
    # Three rounds: all but the last are cleared, the first one's output is the content.
    messages = grep_rounds(3, lambda n: LINES if n == 0 else f"output {n} " * 8)
    body = {"config": {"max_tokens_for_clear": 1}, "conversation_id": "run-1", "messages": messages}
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK, response.json()
    row = OffloadedFile.objects.get(sha256=digest)
    assert row.storage_name == name
    assert OffloadedFile.objects.count() == 2
    assert offloads.read_bytes(name) == LINES.encode()
    raw = api.get("/files/raw", {"path": row.path})
    assert raw.status_code == HTTPStatus.OK
    assert raw.content == LINES.encode()
    assert raw["X-Content-SHA256"] == digest
    assert raw["Content-Length"] == str(len(LINES.encode()))


def test_files_raw_without_path_is_422(api: ApiClient) -> None:
    response = api.get("/files/raw")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error("path: Field required", "path")


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


def test_files_raw_without_a_path_is_a_documented_422(api: ApiClient) -> None:
    """Found by schemathesis: GET /files/raw answered an undocumented 422."""
    response = api.get("/files/raw")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error("path: Field required", "path")
    assert HTTPStatus.UNPROCESSABLE_ENTITY in documented(api, "get", "/files/raw")


@pytest.mark.parametrize("endpoint", ["/files/read", "/files/raw"])
def test_files_reads_document_the_storage_failing(api: ApiClient, endpoint: str) -> None:
    """A storage that fails is a 503 (tests/app/records/test_s3.py); the document says so."""
    assert HTTPStatus.SERVICE_UNAVAILABLE in documented(api, "get", endpoint)


def test_files_raw_documents_its_text_and_digest(api: ApiClient) -> None:
    """The 200 was documented with no content, so clients and schemathesis checked nothing."""
    document = api.client.get("/api/v1/openapi.json").json()
    ok = document["paths"]["/api/v1/files/raw"]["get"]["responses"]["200"]
    assert ok == {
        "description": "OK",
        "content": {"text/plain": {"schema": {"type": "string"}}},
        "headers": {
            "X-Content-SHA256": {
                "description": "The SHA-256 of the content, in hex.",
                "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                "required": True,
            }
        },
    }
