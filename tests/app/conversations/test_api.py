"""Conversations over HTTP: create or replace, read with counts, delete with their
events and files, list and search."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.test.html import parse_html

from reduction_app.models import Conversation
from tests.app.support import ApiClient, documented, error, follow, offload
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db

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
        "source": "",
        "imported_from": "",
        "omits": None,
        "messages": CHAT,
        "system": None,
        "tools": [],
        "event_count": 0,
        "file_count": 0,
        "provider_usage": None,
    }
    got = api.get("/conversations/run-1")
    assert got.status_code == HTTPStatus.OK
    assert got.json() == {**body, "created_at": created, "updated_at": updated}


def test_conversation_keeps_undecodable_tool_output_exactly(api: ApiClient) -> None:
    """A tool's bytes that were not UTF-8 arrive as lone surrogates (``\\udcff`` in the
    JSON); the transcript gives them back as sent, on PostgreSQL too (whose ``jsonb``
    refuses them), with the rest of the message as it was, key order included."""
    messages = [
        {"role": "user", "content": "cat data.bin"},
        {"content": "PK\x03\x04 \udcff\udcfe naïve 🌍", "role": "user", "name": "tool"},
    ]
    response = api.post("/conversations", {"conversation_id": "bytes", "messages": messages})
    assert response.status_code == HTTPStatus.CREATED
    got = api.get("/conversations/bytes").json()["messages"]
    assert got == messages
    assert [list(m) for m in got] == [["role", "content"], ["content", "role", "name"]]


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


def test_conversation_create_at_the_message_limit_is_taken(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_MESSAGES = len(CHAT)
    response = api.post("/conversations", {"conversation_id": "run-1", "messages": CHAT})
    assert response.status_code == HTTPStatus.CREATED
    assert response.json()["message_count"] == len(CHAT)


def test_conversation_create_over_the_message_limit_is_422_and_keeps_the_conversation(
    api: ApiClient, settings: Any
) -> None:
    settings.REDUCTION_MAX_MESSAGES = len(CHAT)
    created = api.post("/conversations", {"conversation_id": "run-1", "messages": CHAT})
    assert created.status_code == HTTPStatus.CREATED
    before = api.get("/conversations/run-1").json()
    messages = [*CHAT, {"role": "user", "content": "and more"}]
    for conversation_id in ("run-1", "run-2"):
        body = {"conversation_id": conversation_id, "messages": messages}
        response = api.post("/conversations", body)
        assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
        assert response.json() == error(
            "3 messages is over the limit of 2 messages per request (REDUCTION_MAX_MESSAGES)",
            "messages",
        )
    assert api.get("/conversations/run-1").json() == before
    assert list(Conversation.objects.values_list("client_id", flat=True)) == ["run-1"]


def test_conversation_unknown_is_404(api: ApiClient) -> None:
    for response in (api.get("/conversations/nope"), api.delete("/conversations/nope")):
        assert response.status_code == HTTPStatus.NOT_FOUND
        assert response.json() == error("conversation 'nope' not found", "conversation_id")


def test_conversation_delete_removes_its_events_files_and_content(
    api: ApiClient, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    gone = offload(api, "a" * 20, call_id="c1", conversation="run-1")
    kept = offload(api, "b" * 20, call_id="c2", conversation="run-2")
    assert len(offloads.names()) == 2
    # The content goes once the deletion is committed.
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete("/conversations/run-1")
    assert response.status_code == HTTPStatus.NO_CONTENT
    assert response.content == b""
    assert api.get("/conversations/run-1").status_code == HTTPStatus.NOT_FOUND
    assert api.get("/files/raw", {"path": gone}).status_code == HTTPStatus.NOT_FOUND
    assert [e["conversation_id"] for e in api.get("/events").json()["results"]] == ["run-2"]
    assert [f["path"] for f in api.get("/files").json()["results"]] == [kept]
    [left] = offloads.names()
    assert offloads.read_bytes(left) == b"b" * 20


def test_conversation_delete_keeps_content_another_conversation_names(
    api: ApiClient, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    """The same output offloaded in two conversations is stored once: deleting one keeps
    it for the other, deleting both removes it."""
    offload(api, "same output", call_id="c1", conversation="run-1")
    kept = offload(api, "same output", call_id="c2", conversation="run-2")
    [stored] = offloads.names()
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete("/conversations/run-1").status_code == HTTPStatus.NO_CONTENT
    assert offloads.names() == [stored]
    assert api.get("/files/raw", {"path": kept}).content == b"same output"
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete("/conversations/run-2").status_code == HTTPStatus.NO_CONTENT
    assert offloads.names() == []


def _cleared_call_1(api: ApiClient, conversation: str) -> None:
    """Clear ``call_1`` of a chat whose two results of 200 characters (51 tokens each, 115
    in all) go over a clear threshold of 100: the older one is offloaded."""
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        *_call_and_result("call_1", "same output " * 20),
        *_call_and_result("call_2", "B" * 200),
    ]
    body = {"config": {"max_tokens_for_clear": 100}, "conversation_id": conversation}
    response = api.post("/clear", {**body, "messages": messages})
    assert response.status_code == HTTPStatus.OK, response.json()
    offloaded = [e["offload_path"] for e in response.json()["events"] if e["offload_path"]]
    assert offloaded == ["/tmp/clear/call_1"]


def _call_and_result(call_id: str, content: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": content},
    ]


def test_conversation_delete_keeps_the_file_another_conversation_offloaded_to_the_same_path(
    api: ApiClient, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    """Two conversations clearing the same call with the same output name the same path
    and the same stored content: each lists and reads it, on the API and the dashboard;
    deleting one leaves it to the other, and deleting both removes it and gives its bytes
    back to the workspace's offload usage once."""
    path, content = "/tmp/clear/call_1", b"same output " * 20
    _cleared_call_1(api, "run-x")
    _cleared_call_1(api, "run-y")
    [stored] = offloads.names()
    api.workspace.refresh_from_db()
    assert api.workspace.offload_bytes == len(content) == 240
    for conversation in ("run-x", "run-y"):
        listed = api.get("/files", {"conversation_id": conversation}).json()["results"]
        assert [(f["path"], f["conversation_id"]) for f in listed] == [(path, conversation)]
        assert api.get("/conversations/" + conversation).json()["file_count"] == 1

    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete("/conversations/run-x").status_code == HTTPStatus.NO_CONTENT
    assert offloads.names() == [stored]
    api.workspace.refresh_from_db()
    assert api.workspace.offload_bytes == 240
    listed = api.get("/files", {"conversation_id": "run-y"}).json()["results"]
    assert [(f["path"], f["conversation_id"]) for f in listed] == [(path, "run-y")]
    assert api.get("/files", {"conversation_id": "run-x"}).json()["results"] == []
    params = {"path": path, "conversation_id": "run-y"}
    read = api.get("/files/read", {**params, "limit": 1})
    assert read.status_code == HTTPStatus.OK
    assert read.json()["content"] == "1\t" + content.decode() + "\n"
    assert api.get("/files/raw", params).content == content
    assert api.get("/files/raw", {"path": path}).content == content
    member = User.objects.create_user("ada")
    api.workspace.members.add(member)
    page = Client()
    page.force_login(member)
    link = parse_html(
        f'<a href="/files/view/?path={path}&amp;conversation=run-y">'
        f"<code><bdi>{path}</bdi></code></a>"
    )
    for address in ("/files/?conversation=run-y", "/conversations/run-y/"):
        shown = page.get(address)
        assert shown.status_code == HTTPStatus.OK
        assert link in parse_html(shown.content.decode()), address
    viewed = page.get("/files/view/", {"path": path, "conversation": "run-y"})
    assert viewed.status_code == HTTPStatus.OK
    assert viewed.context["file"].conversation.client_id == "run-y"
    assert page.get("/files/raw/", {"path": path, "conversation": "run-y"}).getvalue() == content

    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete("/conversations/run-y").status_code == HTTPStatus.NO_CONTENT
    assert offloads.names() == []
    api.workspace.refresh_from_db()
    assert api.workspace.offload_bytes == 0
    assert api.get("/files/raw", {"path": path}).status_code == HTTPStatus.NOT_FOUND


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
        "source",
        "imported_from",
        "omits",
        "created_at",
        "updated_at",
    }


def test_conversations_list_search(api: ApiClient) -> None:
    api.post("/conversations", {"conversation_id": "run-1", "title": "Refactor parser"})
    api.post("/conversations", {"conversation_id": "run-2", "title": "Fix tests"})
    found = api.get("/conversations", {"search": "PARSER"}).json()["results"]
    assert [c["conversation_id"] for c in found] == ["run-1"]


def test_conversation_body_that_is_no_json_is_a_documented_400(api: ApiClient) -> None:
    """Found by schemathesis: POST /conversations answered an undocumented 400."""
    response = api.post_raw("/conversations", b"\x00")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json() == error("Cannot parse request body")
    assert {HTTPStatus.BAD_REQUEST, HTTPStatus.REQUEST_ENTITY_TOO_LARGE} <= documented(
        api, "post", "/conversations"
    )


@pytest.mark.parametrize("address", ["team/run-1", "team%2Frun-1"])
def test_conversation_with_a_slash_in_its_id_is_read_and_deleted(
    api: ApiClient, address: str
) -> None:
    """Found by schemathesis: an id with a "/" could be recorded but not read or deleted
    (the address matched no operation, and a DELETE was answered with the HTML 403 of
    CSRF)."""
    api.post("/conversations", {"conversation_id": "team/run-1", "messages": CHAT})
    got = api.get(f"/conversations/{address}")
    assert got.status_code == HTTPStatus.OK
    assert got.json()["conversation_id"] == "team/run-1"
    assert api.delete(f"/conversations/{address}").status_code == HTTPStatus.NO_CONTENT
    missing = api.get(f"/conversations/{address}")
    assert missing.status_code == HTTPStatus.NOT_FOUND
    assert missing.json() == error("conversation 'team/run-1' not found", "conversation_id")


@pytest.mark.parametrize("method", ["get", "delete"])
def test_conversation_id_with_a_nul_is_a_documented_422(api: ApiClient, method: str) -> None:
    """PostgreSQL cannot hold a NUL in text: both databases refuse it alike, before a query."""
    response = getattr(api, method)("/conversations/a%00b")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    # The request-address guard answers before the path parameter's own check.
    assert response.json() == error("the address must not contain NUL characters")
    assert HTTPStatus.UNPROCESSABLE_ENTITY in documented(
        api, method, "/conversations/{conversation_id}"
    )


def test_conversation_keeps_the_key_order_last_sent_through_clear(api: ApiClient) -> None:
    """The same conversation sent again to ``/clear`` with one message's keys in another
    order: the transcript gives back the order of the last call, not the first."""
    first = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    second = [first[0], {"content": "hello", "role": "assistant"}]
    for messages in (first, second):
        response = api.post("/clear", {"conversation_id": "order", "messages": messages})
        assert response.status_code == HTTPStatus.OK
    got = api.get("/conversations/order").json()["messages"]
    assert [list(m) for m in got] == [["role", "content"], ["content", "role"]]
