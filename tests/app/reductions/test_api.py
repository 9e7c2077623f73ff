"""The engine over HTTP: ``/truncate``, ``/clear`` and ``/tools/read_file``, through the
real URLs, the real database and the real storage on a temporary folder (and, for the
tests that take ``offloads``, on S3 too).

Token figures use the default ``approx`` counter: a chat message is
``role\\nreasoning\\ncontent\\n`` (plus ``name\\narguments`` per tool call) floored to
characters // 4, so every expected number below can be worked out by hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from hashlib import sha256
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError
from django.core.files.storage import FileSystemStorage
from django.db import IntegrityError, OperationalError, connection
from django.test.utils import CaptureQueriesContext
from storages.backends.s3 import S3Storage

from reduction_app.conversations.selectors import conversation_transcript
from reduction_app.engine.inspect import wire_pairing_problems
from reduction_app.models import (
    ConfigProfile,
    ConfigVersion,
    Conversation,
    EventRecord,
    OffloadedFile,
)
from reduction_app.records.s3 import OffloadS3Storage
from reduction_app.records.schemas import EventOut
from tests.app.support import (
    ApiClient,
    bare,
    clear_placeholder,
    documented,
    error,
    event,
    stored_files,
    trunc_notice,
)
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db

SMALL = {"max_length_for_trunc": 20}


def truncate(api: ApiClient, result: Any, **fields: Any) -> Any:
    body = {"config": SMALL, "tool_name": "grep", "tool_call_id": "call_1", "result": result}
    return api.post("/truncate", {**body, **fields})


def raw(api: ApiClient, path: str) -> bytes:
    response = api.get("/files/raw", {"path": path})
    assert response.status_code == HTTPStatus.OK
    return bytes(response.content)


# /truncate ------------------------------------------------------------------------------


@pytest.mark.usefixtures("offloads")
def test_truncate_string_result_is_offloaded_and_recorded(api: ApiClient) -> None:
    text = "0123456789abcdefghijKLMNO"
    response = truncate(api, text, conversation_id="run-1")
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    notice = trunc_notice(
        size=25, path="/tmp/trunc/call_1", preview=10, first="0123456789", last="fghijKLMNO"
    )
    assert body["truncated"] is True
    assert body["result"] == notice
    assert body["offload_path"] == "/tmp/trunc/call_1"
    assert bare(body["events"]) == [
        event(
            phase="truncation",
            kind="tool",
            tool_name="grep",
            call_id="call_1",
            chars_before=25,
            chars_after=len(notice),
            tokens_before=6,
            tokens_after=len(notice) // 4,
            tokens_saved=6 - len(notice) // 4,
            offload_path="/tmp/trunc/call_1",
            conversation_id="run-1",
        )
    ]
    assert raw(api, "/tmp/trunc/call_1") == text.encode()
    row = OffloadedFile.objects.get()
    assert (row.path, row.size_chars, row.tokens, row.phase, row.tool_name, row.call_id) == (
        "/tmp/trunc/call_1",
        25,
        6,
        "truncation",
        "grep",
        "call_1",
    )
    assert row.conversation is not None and row.conversation.client_id == "run-1"


def test_truncate_short_result_passes_untouched(api: ApiClient, offload_dir: Path) -> None:
    response = truncate(api, "short", conversation_id="run-1")
    assert response.status_code == HTTPStatus.OK
    assert response.json() == {
        "truncated": False,
        "result": "short",
        "offload_path": None,
        "events": [],
    }
    assert stored_files(offload_dir) == []
    assert OffloadedFile.objects.count() == 0


@pytest.mark.usefixtures("offloads")
def test_truncate_parts_result_comes_back_as_parts(api: ApiClient) -> None:
    image = {
        "type": "image",
        "image": {"url": "https://example.com/plot.png", "mime_type": "image/png"},
    }
    text = "x" * 30
    response = truncate(api, {"parts": [{"type": "text", "text": text}, image]})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    notice = trunc_notice(
        size=30, path="/tmp/trunc/call_1", preview=10, first="x" * 10, last="x" * 10
    )
    assert body["result"] == {"parts": [{"type": "text", "text": notice}, image]}
    assert body["truncated"] is True
    assert body["offload_path"] == "/tmp/trunc/call_1"
    # A result with media is offloaded whole, as indented JSON parts.
    original = [{"type": "text", "text": text}, image]
    assert raw(api, "/tmp/trunc/call_1") == json.dumps(original, indent=2).encode()


def test_truncate_short_parts_result_is_returned_as_sent(api: ApiClient) -> None:
    parts = [{"type": "text", "text": "short"}, {"type": "text", "text": "also", "extra": {"k": 1}}]
    response = truncate(api, {"parts": parts})
    assert response.status_code == HTTPStatus.OK
    assert response.json() == {
        "truncated": False,
        "result": {"parts": parts},
        "offload_path": None,
        "events": [],
    }


def test_truncate_again_in_a_conversation_answers_the_same_and_records_nothing_new(
    api: ApiClient,
) -> None:
    """The same result of the same call truncated again: the same notice and path, no
    event row; another conversation records its own."""
    text = "0123456789abcdefghijKLMNO"
    first = truncate(api, text, conversation_id="run-1").json()
    again = truncate(api, text, conversation_id="run-1").json()
    other = truncate(api, text, conversation_id="run-2").json()
    assert {k: v for k, v in again.items() if k != "events"} == {
        k: v for k, v in first.items() if k != "events"
    }
    assert (again["truncated"], again["offload_path"]) == (True, "/tmp/trunc/call_1")
    assert [len(first["events"]), len(again["events"]), len(other["events"])] == [1, 0, 1]
    assert len(api.get("/events", {"conversation_id": "run-1"}).json()["results"]) == 1


@pytest.mark.usefixtures("offloads")
def test_truncate_reused_call_id_with_other_content_gets_a_new_file(api: ApiClient) -> None:
    first, second = "a" * 30, "b" * 30
    other = f"/tmp/trunc/call_1-{sha256(second.encode()).hexdigest()[:12]}"
    assert truncate(api, first).json()["offload_path"] == "/tmp/trunc/call_1"
    assert truncate(api, second).json()["offload_path"] == other
    # Identical content reuses its path and its stored content; the conversation that
    # names it too gets a file row of its own.
    assert (
        truncate(api, first, conversation_id="later").json()["offload_path"] == "/tmp/trunc/call_1"
    )
    assert raw(api, "/tmp/trunc/call_1") == first.encode()
    assert raw(api, other) == second.encode()
    rows = OffloadedFile.objects.filter(path="/tmp/trunc/call_1").order_by("id")
    assert [(r.conversation and r.conversation.client_id, r.sha256) for r in rows] == [
        (None, sha256(first.encode()).hexdigest()),
        ("later", sha256(first.encode()).hexdigest()),
    ]
    assert len({r.storage_name for r in rows}) == 1


def test_truncate_with_a_stored_config(api: ApiClient) -> None:
    created = api.post("/configs", {"name": "tight", "config": {"max_length_for_trunc": 4}}).json()
    body = {
        "config_id": created["id"],
        "tool_name": "ls",
        "tool_call_id": "c9",
        "result": "abcdefgh",
    }
    response = api.post("/truncate", body)
    assert response.status_code == HTTPStatus.OK
    out = response.json()
    assert out["result"] == trunc_notice(
        size=8, path="/tmp/trunc/c9", preview=2, first="ab", last="gh"
    )
    assert (out["events"][0]["config_id"], out["events"][0]["config_version"]) == (created["id"], 1)


def test_truncate_excluded_tool_is_untouched(api: ApiClient) -> None:
    config = {**SMALL, "trunc_exclude_tools": ["grep"]}
    response = truncate(api, "z" * 50, config=config)
    assert response.json() == {
        "truncated": False,
        "result": "z" * 50,
        "offload_path": None,
        "events": [],
    }


@pytest.mark.parametrize(
    ("body", "detail", "field"),
    [
        ({}, "tool_name: Field required", "tool_name"),
        ({"tool_name": "t"}, "result: Field required", "result"),
        (
            {"tool_name": "", "result": "x"},
            "tool_name: String should have at least 1 character",
            "tool_name",
        ),
        ({"tool_name": 5, "result": "x"}, "tool_name: Input should be a valid string", "tool_name"),
        ({"tool_name": "t", "result": 5}, "result: Input should be a valid string", "result"),
        (
            {"tool_name": "t", "result": {"parts": "x"}},
            "result.parts: Input should be a valid list",
            "result.parts",
        ),
        ({"tool_name": "t", "result": {}}, "result.parts: Field required", "result.parts"),
        (
            {"tool_name": "t", "result": {"parts": [], "text": "x"}},
            "result.text: Extra inputs are not permitted",
            "result.text",
        ),
        (
            {"tool_name": "t", "result": {"parts": [{"type": "bogus"}]}},
            "result.parts[0].type: unknown part type 'bogus'",
            "result.parts[0].type",
        ),
        (
            {"tool_name": "t", "result": {"parts": [{"type": "text", "text": 3}]}},
            "result.parts[0].text: expected a string, got 3",
            "result.parts[0].text",
        ),
        (
            {"tool_name": "t", "result": {"parts": [{"type": "image"}]}},
            "result.parts[0]: a image part needs a 'image' object",
            "result.parts[0]",
        ),
        (
            {"tool_name": "t", "result": "x", "extra": 1},
            "extra: Extra inputs are not permitted",
            "extra",
        ),
        (
            {"tool_name": "t", "result": "x", "config": []},
            "config: Input should be a valid dictionary",
            "config",
        ),
        (
            {"tool_name": "t", "result": "x", "config": {"nope": 1}},
            "config.nope is not a config field",
            "config.nope",
        ),
        (
            {"tool_name": "t", "result": "x", "config": {"backend": "x"}},
            "config.backend cannot be set from JSON",
            "config.backend",
        ),
        (
            {"tool_name": "t", "result": "x", "config": {"max_length_for_trunc": -1}},
            "config.max_length_for_trunc must be at least 0, got -1",
            "config.max_length_for_trunc",
        ),
        (
            {"tool_name": "t", "result": "x", "config": {"max_length_for_trunc": "10"}},
            "config.max_length_for_trunc must be an integer, got '10'",
            "config.max_length_for_trunc",
        ),
        (
            {"tool_name": "t", "result": "x", "config": {"token_counter": "nope"}},
            "config.token_counter must be one of ['approx', 'cl100k_base', 'o200k_base'] "
            "or a callable, got 'nope'",
            "config.token_counter",
        ),
        (
            {"tool_name": "t", "result": "x", "config": {}, "config_id": 1},
            "give either config or config_id, not both",
            "config_id",
        ),
        (
            {"tool_name": "t", "result": "x", "conversation_id": "a\x00b"},
            "conversation_id: Value error, must not contain NUL characters",
            "conversation_id",
        ),
        (
            {"tool_name": "t", "result": "x", "tool_call_id": "c" * 201},
            "tool_call_id: String should have at most 200 characters",
            "tool_call_id",
        ),
        (
            {"tool_name": "t", "result": "x", "config_id": "one"},
            "config_id: Input should be a valid integer, unable to parse string as an integer",
            "config_id",
        ),
    ],
)
def test_truncate_invalid_input_is_422_naming_the_field(
    api: ApiClient, body: dict[str, Any], detail: str, field: str
) -> None:
    response = api.post("/truncate", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(detail, field)
    assert EventRecord.objects.count() == 0


def test_truncate_unknown_config_id_is_404(api: ApiClient) -> None:
    response = api.post("/truncate", {"tool_name": "t", "result": "x", "config_id": 999})
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == error("config 999 not found", "config_id")


def test_truncate_config_id_beyond_any_row_is_404(api: ApiClient) -> None:
    response = api.post("/truncate", {"tool_name": "t", "result": "x", "config_id": 10**30})
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == error(f"config {10**30} not found", "config_id")


NOT_OBJECT = "Input should be a valid dictionary or object to extract fields from"


@pytest.mark.parametrize(
    ("data", "status", "body"),
    [
        (b"not json", HTTPStatus.BAD_REQUEST, error("Cannot parse request body")),
        (b"\xff\xfe\x00", HTTPStatus.BAD_REQUEST, error("Cannot parse request body")),
        (b"[1, 2]", HTTPStatus.UNPROCESSABLE_ENTITY, error(f"request body: {NOT_OBJECT}")),
        (b'"text"', HTTPStatus.UNPROCESSABLE_ENTITY, error(f"request body: {NOT_OBJECT}")),
        (b"null", HTTPStatus.UNPROCESSABLE_ENTITY, error(f"request body: {NOT_OBJECT}")),
        (b"", HTTPStatus.UNPROCESSABLE_ENTITY, error("request body: Field required")),
        (
            b'{"tool_name": ["a"], "result": {"parts": [[]]}}',
            HTTPStatus.UNPROCESSABLE_ENTITY,
            error("tool_name: Input should be a valid string", "tool_name"),
        ),
    ],
)
def test_truncate_garbage_bodies_answer_json_errors(
    api: ApiClient, data: bytes, status: HTTPStatus, body: dict[str, Any]
) -> None:
    response = api.post_raw("/truncate", data)
    assert response.status_code == status
    assert response.json() == body


@pytest.mark.parametrize("path", ["/truncate", "/clear"])
def test_engine_body_that_is_no_json_is_a_documented_400(api: ApiClient, path: str) -> None:
    """Found by schemathesis: /truncate and /clear answered an undocumented 400."""
    response = api.post_raw(path, b"\x00")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json() == error("Cannot parse request body")
    assert HTTPStatus.BAD_REQUEST in documented(api, "post", path)


def test_truncate_form_body_is_refused(api: ApiClient) -> None:
    response = api.post_raw(
        "/truncate", b"tool_name=t&result=x", "application/x-www-form-urlencoded"
    )
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json() == error("Cannot parse request body")


# /clear, OpenAI chat ---------------------------------------------------------------------


def chat_call(call_id: str, name: str = "grep", arguments: str = "{}") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def chat_result(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


CHAT = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": "hi"},
    chat_call("call_a"),
    chat_result("call_a", "A" * 200),
    chat_call("call_b"),
    chat_result("call_b", "B" * 200),
]
"""Tokens: system 12 chars → 3, user 9 → 2, each call 19 → 4, each result 207 → 51: 115."""

CLEAR_AT_100 = {"max_tokens_for_clear": 100}
GREP_TOOL = {
    "type": "function",
    "function": {
        "name": "grep",
        "description": "Search.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def test_clear_openai_chat_gives_exactly_what_the_api_accepts(api: ApiClient) -> None:
    response = api.post(
        "/clear", {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": CHAT}
    )
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "grep", "arguments": "{}"},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "content": clear_placeholder("/tmp/clear/call_a"),
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "grep", "arguments": "{}"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_b", "content": "B" * 200},
    ]
    # The placeholder is 98 characters: the result becomes 105 → 26 tokens.
    assert (body["applied"], body["tokens_before"], body["tokens_after"], body["system"]) == (
        True,
        115,
        90,
        None,
    )
    assert bare(body["events"]) == [
        event(
            phase="clear",
            kind="tool",
            tool_name="grep",
            call_id="call_a",
            chars_before=200,
            chars_after=98,
            tokens_before=51,
            tokens_after=26,
            tokens_saved=25,
            offload_path="/tmp/clear/call_a",
            conversation_id="run-1",
        ),
        event(
            phase="clear",
            kind="summary",
            tokens_before=115,
            tokens_after=90,
            tokens_saved=25,
            applied=True,
            calls_cleared=1,
            reason="applied",
            threshold=100,
            conversation_id="run-1",
        ),
    ]
    assert raw(api, "/tmp/clear/call_a") == b"A" * 200
    conversation = Conversation.objects.get()
    assert (
        conversation.client_id,
        conversation.message_format,
        conversation_transcript(conversation=conversation),
    ) == (
        "run-1",
        "openai_chat",
        CHAT,
    )


@pytest.mark.usefixtures("offloads")
def test_clear_with_a_digest_keeps_it_in_the_placeholder(api: ApiClient) -> None:
    """``clear_digest_tokens`` (opt-in) works over HTTP like every config field."""
    config = {**CLEAR_AT_100, "clear_digest_tokens": 10}
    response = api.post("/clear", {"config": config, "conversation_id": "run-1", "messages": CHAT})
    assert response.status_code == HTTPStatus.OK
    assert response.json()["messages"][3]["content"] == (
        "<persisted-output>Tool result saved to: /tmp/clear/call_a\n"
        "Use read_file to view\n"
        "Digest: 1 line, 200 characters</persisted-output>"
    )
    read = api.get("/files/raw", {"path": "/tmp/clear/call_a"})
    assert read.content.decode() == "A" * 200


def test_clear_below_threshold_changes_nothing(api: ApiClient, offload_dir: Path) -> None:
    response = api.post("/clear", {"messages": CHAT, "tools": [GREP_TOOL]})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["messages"] == CHAT
    # The tool schema renders as 94 characters of JSON: 23 more tokens.
    assert (body["applied"], body["tokens_before"], body["tokens_after"]) == (False, 138, 138)
    assert bare(body["events"]) == [
        event(
            phase="clear",
            kind="summary",
            tokens_before=138,
            tokens_after=138,
            reason="below_threshold",
            threshold=160000,
        )
    ]
    assert stored_files(offload_dir) == []


def test_clear_with_clear_skipped_still_counts_tokens(api: ApiClient) -> None:
    response = api.post(
        "/clear", {"config": {**CLEAR_AT_100, "skip_clear": True}, "messages": CHAT}
    )
    assert response.json() == {
        "messages": CHAT,
        "system": None,
        "revision": None,
        "from_index": 0,
        "applied": False,
        "tokens_before": 115,
        "tokens_after": 115,
        "events": [],
    }


def test_clear_twice_over_http_loses_nothing(api: ApiClient) -> None:
    """A cleared conversation sent back with new messages (and no markers: the
    placeholders are what mark it) is not cleared twice, every earlier offload stays
    byte for byte, and a reused call id with other content gets its own file."""
    body = {"config": CLEAR_AT_100, "conversation_id": "run-1"}
    first = api.post("/clear", {**body, "messages": CHAT}).json()["messages"]
    follow_up = [
        {"role": "user", "content": "more"},
        chat_call("call_a"),  # the model reused an id
        chat_result("call_a", "D" * 200),
        chat_call("call_c"),
        chat_result("call_c", "C" * 200),
    ]
    second = api.post("/clear", {**body, "messages": first + follow_up}).json()
    reused = f"/tmp/clear/call_a-{sha256(b'D' * 200).hexdigest()[:12]}"
    assert second["applied"] is True
    assert (
        second["messages"]
        == [
            *first[:4],  # the earlier placeholder, untouched
            first[4],
            chat_result("call_b", clear_placeholder("/tmp/clear/call_b")),
            follow_up[0],
            follow_up[1],
            chat_result("call_a", clear_placeholder(reused)),
            *follow_up[3:],  # the latest round is kept
        ]
    )
    assert [(e["kind"], e["call_id"], e["offload_path"]) for e in second["events"]] == [
        ("tool", "call_b", "/tmp/clear/call_b"),
        ("tool", "call_a", reused),
        ("summary", "", ""),
    ]
    assert second["events"][-1]["calls_cleared"] == 2
    assert raw(api, "/tmp/clear/call_a") == b"A" * 200
    assert raw(api, "/tmp/clear/call_b") == b"B" * 200
    assert raw(api, reused) == b"D" * 200

    third = api.post("/clear", {**body, "messages": second["messages"]}).json()
    assert third["messages"] == second["messages"]
    assert third["applied"] is False
    assert third["events"][-1]["reason"] == "nothing_cleared"
    assert sorted(OffloadedFile.objects.values_list("path", flat=True)) == sorted(
        ["/tmp/clear/call_a", reused, "/tmp/clear/call_b"]
    )
    assert conversation_transcript(conversation=Conversation.objects.get()) == second["messages"]


def test_event_out_has_one_root_validator() -> None:
    """EventOut's dict path replaces django-ninja's validator by taking its name; were
    ninja to rename it, both would run and a dict would lose its resolved fields."""
    assert list(EventOut.__pydantic_decorators__.model_validators) == ["_run_root_validator"]
    assert EventOut.__pydantic_decorators__.model_validators["_run_root_validator"].cls_ref == (
        f"{EventOut.__module__}.{EventOut.__qualname__}:{id(EventOut)}"
    )


@pytest.mark.parametrize("conversation_id", [None, "run-1"])
def test_engine_answers_events_as_the_event_list_does(
    api: ApiClient, conversation_id: str | None
) -> None:
    """/clear and /truncate answer the events they recorded field for field as
    GET /events answers the same rows (the engine endpoints hand the schema dicts, the
    list hands it rows): ids, conversation, stored config and version, times."""
    config = api.post("/configs", {"name": "c", "config": {**CLEAR_AT_100, **SMALL}}).json()
    body: dict[str, Any] = {"config_id": config["id"]}
    if conversation_id is not None:
        body["conversation_id"] = conversation_id
    cleared = api.post("/clear", {**body, "messages": CHAT}).json()["events"]
    truncated = truncate(api, "x" * 500, config=None, **body).json()["events"]
    assert [e["kind"] for e in cleared] == ["tool", "summary"]
    assert len(truncated) == 1
    listed = api.get("/events", {"limit": 10}).json()["results"]
    assert [*cleared, *truncated] == sorted(listed, key=lambda e: e["id"])
    assert {(e["conversation_id"], e["config_id"], e["config_version"]) for e in listed} == {
        (conversation_id, config["id"], 1)
    }


@pytest.mark.parametrize("conversation_id", [None, "run-1"])
def test_clear_queries_do_not_grow_with_the_results(
    api: ApiClient, conversation_id: str | None
) -> None:
    """The offload paths a pass checks are looked up together, with a conversation id or
    without: clearing 12 results takes as many queries as clearing 2, the first time
    (every path free) and again (every path holding the same content)."""
    counts: dict[tuple[int, int], int] = {}
    api.get("/tools/read_file")  # the key's last use is written now, not in a count below
    for results in (2, 12):
        messages = [{"role": "user", "content": "hi"}]
        for n in range(results + 1):  # the last round is kept
            call_id = f"call_{results}_{n}"
            messages += [chat_call(call_id), chat_result(call_id, f"{n}" * 400)]
        body: dict[str, Any] = {"config": CLEAR_AT_100, "messages": messages}
        if conversation_id is not None:
            body["conversation_id"] = f"{conversation_id}-{results}"
        for attempt in (1, 2):
            with CaptureQueriesContext(connection) as queries:
                answer = api.post("/clear", body).json()
            assert answer["events"][-1]["calls_cleared"] == results
            counts[results, attempt] = len(queries)
    assert counts[2, 1] == counts[12, 1]
    assert counts[2, 2] == counts[12, 2]


@pytest.mark.usefixtures("offloads")
def test_clear_again_reads_no_offloaded_content(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client sending its originals again has the same results cleared to the same
    paths, told apart by their recorded digests: nothing is downloaded to compare."""
    body = {"config": CLEAR_AT_100, "messages": CHAT}
    first = api.post("/clear", body).json()

    def refuse(*args: object) -> str:
        raise AssertionError("offloaded content was read back")

    monkeypatch.setattr("reduction_app.records.storage.read_stored", refuse)
    again = api.post("/clear", body).json()
    assert again["messages"] == first["messages"]
    assert [e["offload_path"] for e in again["events"]] == [
        e["offload_path"] for e in first["events"]
    ]


def _agent_round(n: int) -> list[dict[str, Any]]:
    """Round ``n`` of an agent that numbers its calls from 0 in sevens (ids repeat, with
    other output each time)."""
    call_id = f"call_{n % 7}"
    return [chat_call(call_id), chat_result(call_id, f"output {n} " * 40)]


def _tool_events(conversation_id: str) -> list[tuple[Any, ...]]:
    rows = EventRecord.objects.filter(conversation__client_id=conversation_id, kind="tool")
    return list(
        rows.order_by("id").values_list(
            "phase", "call_id", "offload_path", "tokens_before", "tokens_after"
        )
    )


def test_clear_originals_sent_again_record_each_reduction_once(api: ApiClient) -> None:
    """60 calls of a client that sends its unreduced history each time record the same
    tool events as 60 calls of one that sends back what /clear answered, one per cleared
    result, and as many summaries; each answer's events are the rows it recorded."""
    calls = 60
    config = {"max_tokens_for_clear": 10}
    originals: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    answered: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for n in range(calls):
        originals += _agent_round(n)
        answered += _agent_round(n)
        again = api.post(
            "/clear", {"config": config, "conversation_id": "resend", "messages": originals}
        ).json()
        back = api.post(
            "/clear", {"config": config, "conversation_id": "answers", "messages": answered}
        ).json()
        answered = back["messages"]
        # The reduced messages are the same either way; of the events, the resent
        # originals' answer holds only the reduction new to the conversation, and its
        # summary (which counts every call the pass cleared, earlier ones again).
        assert again["messages"] == back["messages"], n
        *tools, summary = bare(again["events"])
        assert tools == [{**e, "conversation_id": "resend"} for e in bare(back["events"])[:-1]], n
        assert (summary["kind"], summary["calls_cleared"]) == ("summary", n), n
        assert summary["tokens_after"] == back["tokens_after"], n
    resent, sent_back = _tool_events("resend"), _tool_events("answers")
    # Every round but the latest is cleared, once: 59 tool events.
    assert len(resent) == calls - 1
    assert resent == sent_back
    assert len({path for _, _, path, _, _ in resent}) == calls - 1
    summaries = EventRecord.objects.filter(kind="summary")
    assert summaries.filter(conversation__client_id="resend").count() == calls
    assert summaries.filter(conversation__client_id="answers").count() == calls


def test_clear_without_a_conversation_records_every_event(api: ApiClient) -> None:
    """With no conversation to hold them, nothing is taken as sent before: the same body
    twice records its events twice."""
    body = {"config": CLEAR_AT_100, "messages": CHAT}
    first, again = (api.post("/clear", body).json()["events"] for _ in range(2))
    assert [e["kind"] for e in first] == [e["kind"] for e in again] == ["tool", "summary"]
    assert EventRecord.objects.filter(kind="tool").count() == 2


def test_clear_two_equal_results_of_one_id_in_one_request_are_two_events(
    api: ApiClient,
) -> None:
    """A model that repeats an id with the same output has two results cleared to one file:
    two events, the first time and (none new) the next."""
    messages = [
        {"role": "user", "content": "go"},
        chat_call("dup"),
        chat_result("dup", "same " * 100),
        chat_call("dup"),
        chat_result("dup", "same " * 100),
        chat_call("last"),
        chat_result("last", "kept"),
    ]
    body = {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": messages}
    first = api.post("/clear", body).json()["events"]
    again = api.post("/clear", body).json()["events"]
    assert [(e["kind"], e["offload_path"]) for e in first] == [
        ("tool", "/tmp/clear/dup"),
        ("tool", "/tmp/clear/dup"),
        ("summary", ""),
    ]
    assert [e["kind"] for e in again] == ["summary"]
    assert EventRecord.objects.filter(kind="tool").count() == 2


def test_clear_superseded_clears_only_the_repeated_call(api: ApiClient) -> None:
    """``clear_superseded``: call_a is asked again as call_c (kept), so its result goes first;
    that alone brings 174 tokens to 149, under 150, and call_b stays whole."""
    messages = [
        *CHAT[:2],
        chat_call("call_a", arguments='{"q": "x"}'),
        chat_result("call_a", "A" * 200),
        chat_call("call_b"),
        chat_result("call_b", "B" * 200),
        chat_call("call_c", arguments='{"q":"x"}'),
        chat_result("call_c", "C" * 200),
    ]
    # Calls with '{"q": "x"}' render as 27 characters → 6 tokens: 3 + 2 + 6 + 51 + 4 + 51 + 6 + 51.
    config = {"max_tokens_for_clear": 150, "clear_superseded": True}
    response = api.post("/clear", {"config": config, "messages": messages})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["messages"] == [
        *messages[:3],
        chat_result("call_a", clear_placeholder("/tmp/clear/call_a")),
        *messages[4:],
    ]
    assert (body["applied"], body["tokens_before"], body["tokens_after"]) == (True, 174, 149)
    assert bare(body["events"]) == [
        event(
            phase="clear",
            kind="tool",
            tool_name="grep",
            call_id="call_a",
            chars_before=200,
            chars_after=98,
            tokens_before=51,
            tokens_after=26,
            tokens_saved=25,
            offload_path="/tmp/clear/call_a",
            strategy="superseded",
        ),
        event(
            phase="clear",
            kind="summary",
            tokens_before=174,
            tokens_after=149,
            tokens_saved=25,
            applied=True,
            calls_cleared=1,
            reason="applied",
            threshold=150,
        ),
    ]
    assert raw(api, "/tmp/clear/call_a") == b"A" * 200
    assert EventRecord.objects.get(kind="tool").strategy == "superseded"

    without = api.post(
        "/clear", {"config": {**config, "clear_superseded": False}, "messages": messages}
    )
    assert [(e["call_id"], e["strategy"]) for e in without.json()["events"]] == [
        ("call_a", ""),
        ("call_b", ""),
        ("", ""),
    ]


@pytest.mark.usefixtures("offloads")
def test_clear_points_a_truncated_result_at_its_truncation_file(api: ApiClient) -> None:
    text = "T" * 300
    notice = api.post(
        "/truncate",
        {
            "config": {"max_length_for_trunc": 100},
            "tool_name": "grep",
            "tool_call_id": "call_a",
            "result": text,
        },
    ).json()["result"]
    messages = [*CHAT[:3], chat_result("call_a", notice), *CHAT[4:]]
    response = api.post(
        "/clear", {"config": {"max_tokens_for_clear": 50}, "messages": messages}
    ).json()
    assert response["messages"][3] == chat_result("call_a", clear_placeholder("/tmp/trunc/call_a"))
    assert OffloadedFile.objects.count() == 1
    assert raw(api, "/tmp/trunc/call_a") == text.encode()


@pytest.mark.usefixtures("offloads")
def test_clear_offloads_non_ascii_content_byte_for_byte(api: ApiClient) -> None:
    """A cleared result in several scripts, with an emoji and CRLF endings, reads back
    exactly: raw, and as numbered lines."""
    text = "Résumé — 世界\r\n🌍 naïve\n" * 20
    messages = [*CHAT[:3], chat_result("call_a", text), *CHAT[4:]]
    response = api.post("/clear", {"config": CLEAR_AT_100, "messages": messages})
    assert response.status_code == HTTPStatus.OK
    assert response.json()["messages"][3] == chat_result(
        "call_a", clear_placeholder("/tmp/clear/call_a")
    )
    assert raw(api, "/tmp/clear/call_a") == text.encode()
    body = api.get("/files/read", {"path": "/tmp/clear/call_a", "limit": 2}).json()
    assert (body["content"], body["total_lines"]) == ("1\tRésumé — 世界\n2\t🌍 naïve\n", 40)


@pytest.mark.parametrize(
    ("body", "detail", "field"),
    [
        ({}, "messages: Field required", "messages"),
        ({"messages": "x"}, "messages: Input should be a valid list", "messages"),
        ({"messages": [1]}, "messages[0]: expected an object, got 1", "messages[0]"),
        (
            {"messages": [{"role": "wizard", "content": "x"}]},
            "messages[0].role: unknown role 'wizard'",
            "messages[0].role",
        ),
        (
            {"messages": [{"role": "assistant", "tool_calls": "x"}]},
            "messages[0].tool_calls: expected a list, got 'x'",
            "messages[0].tool_calls",
        ),
        (
            {"messages": [], "format": "gemini"},
            "format: Input should be 'openai_chat', 'anthropic' or 'openai_responses'",
            "format",
        ),
        (
            {"messages": [], "tools": [1]},
            "tools[0]: Input should be a valid dictionary",
            "tools[0]",
        ),
        ({"messages": [], "tools": [{"x": 1}]}, "tools[0]: missing field 'type'", "tools[0]"),
        ({"messages": [], "system": "s"}, "system is only taken with format 'anthropic'", "system"),
        (
            {"messages": [], "format": "anthropic", "system": 5},
            "system: Input should be a valid string",
            "system",
        ),
        (
            {"messages": [{"role": "user"}], "format": "openai_responses"},
            "input[0]: missing field 'content'",
            "input[0]",
        ),
        (
            {"messages": [], "config": {"max_tokens_for_clear": -1}},
            "config.max_tokens_for_clear must be at least 0, got -1",
            "config.max_tokens_for_clear",
        ),
        (
            {"messages": [], "config": {"language": "fr"}},
            "config.language must be one of ['en', 'zh'] or None, got 'fr'",
            "config.language",
        ),
        (
            {"messages": [], "config": {"clear_exclude_tools": "grep"}},
            "config.clear_exclude_tools must be a list of tool names, got 'grep'",
            "config.clear_exclude_tools",
        ),
        (
            {"messages": [], "config": {"nope": True}, "config_id": 3},
            "give either config or config_id, not both",
            "config_id",
        ),
    ],
)
def test_clear_invalid_input_is_422_naming_the_field(
    api: ApiClient, body: dict[str, Any], detail: str, field: str
) -> None:
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(detail, field)
    assert Conversation.objects.count() == 0


def test_clear_keeps_the_manifest_off_a_call_waiting_for_its_result(
    api: ApiClient, offload_dir: Path
) -> None:
    """With no round retained, the conversation ends on the call the model just made: the
    offload manifest goes before that call, never between it and the result the agent will
    add, so the answer is one a provider takes (64 tokens, over the 50 of the threshold)."""
    body = {
        "config": {
            "max_tokens_for_clear": 50,
            "clear_retention_suffix_limit": -1,
            "clear_offload_manifest": True,
        },
        "conversation_id": "run-1",
        "messages": CHAT[:5],
    }
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK
    out = response.json()["messages"]
    assert [m["role"] for m in out] == ["system", "user", "assistant", "tool", "user", "assistant"]
    assert out[4]["content"].startswith("<offload-manifest>")
    assert out[5] == CHAT[4]
    assert wire_pairing_problems("openai_chat", out) == []


def test_clear_unknown_config_id_is_404(api: ApiClient) -> None:
    response = api.post("/clear", {"messages": [], "config_id": 7})
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == error("config 7 not found", "config_id")


# /clear, Anthropic and OpenAI Responses ---------------------------------------------------

ANTHROPIC = [
    {"role": "user", "content": "find it"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "tu_1", "name": "grep", "input": {"q": "a"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "A" * 200}],
    },
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "tu_2", "name": "grep", "input": {"q": "b"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "tu_2", "content": "B" * 200}],
    },
]
SYSTEM = [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]


def test_clear_anthropic_with_system_gives_exactly_what_the_api_accepts(api: ApiClient) -> None:
    response = api.post(
        "/clear",
        {
            "config": CLEAR_AT_100,
            "format": "anthropic",
            "system": SYSTEM,
            "messages": ANTHROPIC,
            "conversation_id": "claude-1",
        },
    )
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["system"] == SYSTEM
    assert body["messages"] == [
        {"role": "user", "content": "find it"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "tu_1", "name": "grep", "input": {"q": "a"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_1",
                    "content": clear_placeholder("/tmp/clear/tu_1"),
                }
            ],
        },
        ANTHROPIC[3],
        ANTHROPIC[4],
    ]
    # Blocks are measured one by one: the system 13 tokens, the user text 11, each call
    # 24, each result 79 (315 characters of rendering → 78, plus 1 for its role): 13 +
    # 11 + 2 × 24 + 2 × 79 = 230. The 96-character placeholder in place of the 200
    # characters makes a result (315 - 200 + 96) // 4 + 1 = 53: 230 - 79 + 53 = 204.
    assert (body["applied"], body["tokens_before"], body["tokens_after"]) == (True, 230, 204)
    assert [(e["kind"], e["call_id"], e["tokens_saved"]) for e in body["events"]] == [
        ("tool", "tu_1", 26),
        ("summary", "", 26),
    ]
    assert raw(api, "/tmp/clear/tu_1") == b"A" * 200
    conversation = Conversation.objects.get()
    assert (
        conversation.message_format,
        conversation.system,
        conversation_transcript(conversation=conversation),
    ) == (
        "anthropic",
        SYSTEM,
        ANTHROPIC,
    )


RESPONSES = [
    {"role": "user", "content": "find it"},
    {"type": "function_call", "call_id": "fc_1", "name": "grep", "arguments": '{"q":"a"}'},
    {"type": "function_call_output", "call_id": "fc_1", "output": "A" * 200},
    {"type": "function_call", "call_id": "fc_2", "name": "grep", "arguments": '{"q":"b"}'},
    {"type": "function_call_output", "call_id": "fc_2", "output": "B" * 200},
]


def test_clear_openai_responses_gives_exactly_what_the_api_accepts(api: ApiClient) -> None:
    response = api.post(
        "/clear", {"config": CLEAR_AT_100, "format": "openai_responses", "messages": RESPONSES}
    )
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["messages"] == [
        RESPONSES[0],
        RESPONSES[1],
        {
            "type": "function_call_output",
            "call_id": "fc_1",
            "output": clear_placeholder("/tmp/clear/fc_1"),
        },
        RESPONSES[3],
        RESPONSES[4],
    ]
    # The Anthropic conversation's figures without its 13-token system: 11 + 2 × 24 +
    # 2 × 79 = 217, and 217 - 79 + 53 = 191 once the first result is a placeholder.
    assert (body["applied"], body["tokens_before"], body["tokens_after"], body["system"]) == (
        True,
        217,
        191,
        None,
    )
    assert raw(api, "/tmp/clear/fc_1") == b"A" * 200


# /clear with clear_offload_manifest ------------------------------------------------------

MANIFEST_HEAD = (
    "<offload-manifest>\nThese tool results were moved out of the context. To see one again, "
    "read its file with read_file(path) instead of re-running the tool:"
)


def manifest(*lines: str) -> str:
    return "\n".join([MANIFEST_HEAD, *lines, "</offload-manifest>"])


def test_clear_offload_manifest_openai_chat_is_a_user_message(api: ApiClient) -> None:
    config = {**CLEAR_AT_100, "clear_offload_manifest": True}
    response = api.post("/clear", {"config": config, "messages": CHAT})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    text = manifest("- grep({}) -> /tmp/clear/call_a")
    assert body["messages"] == [
        *CHAT[:3],
        chat_result("call_a", clear_placeholder("/tmp/clear/call_a")),
        {"role": "user", "content": text},
        *CHAT[4:],
    ]
    # 115 - 51 + 26 for the placeholder, plus the manifest: "user\n\n" + 205 + "\n" → 53.
    assert len(text) == 205
    assert (body["applied"], body["tokens_before"], body["tokens_after"]) == (True, 115, 143)
    assert [(e["kind"], e["call_id"]) for e in body["events"]] == [
        ("tool", "call_a"),
        ("summary", ""),
    ]


def test_clear_offload_manifest_anthropic_is_a_user_message(api: ApiClient) -> None:
    config = {**CLEAR_AT_100, "clear_offload_manifest": True}
    body = {"config": config, "format": "anthropic", "system": SYSTEM, "messages": ANTHROPIC}
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK
    out = response.json()
    assert out["system"] == SYSTEM
    assert out["messages"][3] == {
        "role": "user",
        "content": [{"type": "text", "text": manifest('- grep({"q": "a"}) -> /tmp/clear/tu_1')}],
    }
    assert out["messages"][4:] == ANTHROPIC[3:]
    # After the results of tu_1 and before the retained call: two user turns in a row,
    # which the Messages API joins into one.
    roles = [m["role"] for m in out["messages"]]
    assert roles == ["user", "assistant", "user", "user", "assistant", "user"]
    # Sent back (the wire keeps no flags), the manifest is recognised: still only one.
    again = api.post("/clear", {**body, "messages": out["messages"]}).json()
    assert again["messages"] == out["messages"]


def test_clear_offload_manifest_openai_responses_is_a_user_message(api: ApiClient) -> None:
    config = {**CLEAR_AT_100, "clear_offload_manifest": True}
    body = {"config": config, "format": "openai_responses", "messages": RESPONSES}
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK
    out = response.json()
    assert out["messages"] == [
        *RESPONSES[:2],
        {
            "type": "function_call_output",
            "call_id": "fc_1",
            "output": clear_placeholder("/tmp/clear/fc_1"),
        },
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": manifest('- grep({"q":"a"}) -> /tmp/clear/fc_1')}
            ],
        },
        *RESPONSES[3:],
    ]
    again = api.post("/clear", {**body, "messages": out["messages"]}).json()
    assert again["messages"] == out["messages"]


# Atomicity -------------------------------------------------------------------------------


class WriteFailures:
    """When the offload storage's writes fail: from the ``fail_from``-th write on."""

    fail_from = 1
    saves = 0

    @classmethod
    def next_fails(cls) -> bool:
        cls.saves += 1
        return cls.saves >= cls.fail_from


class FailingStorage(FileSystemStorage):
    """A folder storage whose writes fail as a full disk does."""

    def _save(self, name: str, content: Any) -> str:
        if WriteFailures.next_fails():
            raise OSError(28, "No space left on device", name)
        return super()._save(name, content)


class _FailingS3Writes(S3Storage):
    def _save(self, name: str, content: Any) -> str:
        if WriteFailures.next_fails():
            raise ClientError(
                {
                    "Error": {"Code": "SlowDown", "Message": "Please reduce your request rate."},
                    "ResponseMetadata": {"HTTPStatusCode": 503},
                },
                "PutObject",
            )
        saved: str = super()._save(name, content)
        return saved


class FailingS3Storage(OffloadS3Storage, _FailingS3Writes):
    """A bucket whose writes fail as a busy S3 answers them (beneath the app's storage, so
    the failure is turned into an OSError as a real one would be)."""


FAILED_BECAUSE = {"local": "OSError", "s3": "S3StorageError"}
"""The type of a write failure, as the 503 names it."""


@pytest.fixture
def failing_storage(settings: Any, offloads: OffloadStore) -> type[WriteFailures]:
    WriteFailures.saves = 0
    WriteFailures.fail_from = 1
    backend = {"local": FailingStorage, "s3": FailingS3Storage}[offloads.kind]
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {**offloads.entry, "BACKEND": f"{__name__}.{backend.__name__}"},
    }
    return WriteFailures


def assert_nothing_recorded(offloads: OffloadStore) -> None:
    assert OffloadedFile.objects.count() == 0
    assert EventRecord.objects.count() == 0
    assert Conversation.objects.count() == 0
    assert offloads.names() == []


def test_truncate_storage_failure_records_nothing(
    api: ApiClient, failing_storage: type[WriteFailures], offloads: OffloadStore
) -> None:
    response = truncate(api, "q" * 30, conversation_id="run-1")
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == error(
        "truncation: failed to write /tmp/trunc/call_1: the offload storage failed "
        f"({FAILED_BECAUSE[offloads.kind]})"
    )
    assert_nothing_recorded(offloads)


def test_clear_storage_failure_part_way_records_nothing(
    api: ApiClient, failing_storage: type[WriteFailures], offloads: OffloadStore
) -> None:
    """The first offload is written, the second fails: the first is removed again."""
    failing_storage.fail_from = 2
    messages = [*CHAT, chat_call("call_c"), chat_result("call_c", "C" * 200)]
    response = api.post(
        "/clear", {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": messages}
    )
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == error(
        "clear: failed to write /tmp/clear/call_b: the offload storage failed "
        f"({FAILED_BECAUSE[offloads.kind]})"
    )
    assert failing_storage.saves == 2
    assert_nothing_recorded(offloads)


def test_truncate_storage_failure_keeps_earlier_records(
    api: ApiClient, failing_storage: type[WriteFailures], offloads: OffloadStore
) -> None:
    failing_storage.fail_from = 2
    assert truncate(api, "q" * 30, conversation_id="run-1").status_code == HTTPStatus.OK
    assert (
        truncate(api, "r" * 30, conversation_id="run-1").status_code
        == HTTPStatus.SERVICE_UNAVAILABLE
    )
    assert list(OffloadedFile.objects.values_list("path", flat=True)) == ["/tmp/trunc/call_1"]
    assert EventRecord.objects.count() == 1
    assert len(offloads.names()) == 1
    assert raw(api, "/tmp/trunc/call_1") == b"q" * 30


@contextmanager
def database_fails_on(statement: str, error: Exception | None = None) -> Iterator[list[str]]:
    """The database refuses the first statement that starts with ``statement``, as a full
    disk or a dropped connection would (Django's own hook around the real connection)."""
    refused: list[str] = []

    def fail(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not refused and sql.startswith(statement):
            refused.append(sql)
            raise error or OperationalError("disk I/O error")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(fail):
        yield refused


@pytest.mark.parametrize(
    "statement",
    [
        'INSERT INTO "reduction_app_conversation"',
        'INSERT INTO "reduction_app_transcriptmessage"',
        'INSERT INTO "reduction_app_offloadedfile"',
        'INSERT INTO "reduction_app_eventrecord"',
    ],
)
def test_clear_database_failure_mid_request_records_nothing(
    api: ApiClient, offloads: OffloadStore, statement: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The database fails at any write of the pass's record: a 503 naming the failure, no
    row, and the offloads the pass stored are removed again."""
    secret = "C" * 150 + " token=sk-not-for-logs"
    messages = [*CHAT, chat_call("call_c"), chat_result("call_c", secret)]
    body = {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": messages}
    with database_fails_on(statement) as refused:
        response = api.post("/clear", body)
    assert refused, f"no statement started with {statement}"
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == error("the database failed (OperationalError); nothing was recorded")
    assert_nothing_recorded(offloads)
    assert "sk-not-for-logs" not in caplog.text
    # Once the database is back, the same request goes through whole.
    assert api.post("/clear", body).status_code == HTTPStatus.OK
    assert raw(api, "/tmp/clear/call_a") == b"A" * 200


def test_clear_racing_write_is_a_conflict_to_send_again(
    api: ApiClient, offloads: OffloadStore
) -> None:
    """A unique row another request wrote first: 409, nothing recorded."""
    messages = [*CHAT, chat_call("call_c"), chat_result("call_c", "C" * 200)]
    body = {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": messages}
    clash = IntegrityError("UNIQUE constraint failed: reduction_app_offloadedfile.path")
    with database_fails_on('INSERT INTO "reduction_app_offloadedfile"', clash):
        response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.CONFLICT
    assert response.json() == error(
        "another request changed the same records at the same time; send this one again"
    )
    assert_nothing_recorded(offloads)


def test_truncate_database_failure_records_nothing(api: ApiClient, offloads: OffloadStore) -> None:
    with database_fails_on('INSERT INTO "reduction_app_eventrecord"'):
        response = truncate(api, "q" * 30, conversation_id="run-1")
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert_nothing_recorded(offloads)


# Request size ----------------------------------------------------------------------------


def test_request_over_the_size_limit_is_413(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_REQUEST_BYTES = 100
    body = {"tool_name": "t", "result": "x" * 100}
    size = len(json.dumps(body))
    response = api.post("/truncate", body)
    assert response.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert response.json() == error(f"request body of {size} bytes is over the limit of 100 bytes")
    assert EventRecord.objects.count() == 0


def test_request_at_the_size_limit_is_taken(api: ApiClient, settings: Any) -> None:
    body = {"tool_name": "t", "result": "x"}
    settings.REDUCTION_MAX_REQUEST_BYTES = len(json.dumps(body))
    assert api.post("/truncate", body).status_code == HTTPStatus.OK


# Work one request may ask for ------------------------------------------------------------

ROUNDS_3 = [*CHAT, chat_call("call_c"), chat_result("call_c", "C" * 200)]
"""8 messages; under CLEAR_AT_100 the last round is kept and 2 results are offloaded."""


def recorded(offloads: OffloadStore) -> tuple[Any, ...]:
    """Every row and stored object a request could have left behind, the transcripts too."""
    return (
        list(OffloadedFile.objects.order_by("pk").values_list("path", "storage_name")),
        list(EventRecord.objects.order_by("pk").values_list("pk", "kind", "offload_path")),
        [
            (c.client_id, c.updated_at, conversation_transcript(conversation=c))
            for c in Conversation.objects.order_by("pk")
        ],
        offloads.names(),
    )


def test_clear_at_the_message_limit_is_taken(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_MESSAGES = len(ROUNDS_3)
    response = api.post("/clear", {"config": CLEAR_AT_100, "messages": ROUNDS_3})
    assert response.status_code == HTTPStatus.OK, response.json()
    assert response.json()["events"][-1]["calls_cleared"] == 2


@pytest.mark.parametrize("conversation_id", [None, "run-1"])
def test_clear_over_the_message_limit_is_422_and_records_nothing(
    api: ApiClient, settings: Any, offloads: OffloadStore, conversation_id: str | None
) -> None:
    """Refused before the engine runs: the conversation stays as its last request left
    it, with its events and files, and nothing is stored."""
    settings.REDUCTION_MAX_MESSAGES = len(ROUNDS_3) - 1
    before_body = {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": CHAT}
    assert api.post("/clear", before_body).status_code == HTTPStatus.OK
    before = recorded(offloads)
    body = {"config": CLEAR_AT_100, "conversation_id": conversation_id, "messages": ROUNDS_3}
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "8 messages is over the limit of 7 messages per request (REDUCTION_MAX_MESSAGES)",
        "messages",
    )
    assert recorded(offloads) == before


def test_clear_with_no_message_limit_takes_any_count(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_MESSAGES = 0
    messages = [{"role": "user", "content": "hi"}] * 50
    assert api.post("/clear", {"messages": messages}).status_code == HTTPStatus.OK


def test_clear_at_the_offload_limit_is_taken(
    api: ApiClient, settings: Any, offloads: OffloadStore
) -> None:
    settings.REDUCTION_MAX_OFFLOADS = 2
    body = {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": ROUNDS_3}
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK, response.json()
    assert [e["offload_path"] for e in response.json()["events"]] == [
        "/tmp/clear/call_a",
        "/tmp/clear/call_b",
        "",
    ]
    assert OffloadedFile.objects.count() == 2
    assert len(offloads.names()) == 2


@pytest.mark.parametrize("conversation_id", [None, "run-1"])
def test_clear_over_the_offload_limit_is_422_and_records_nothing(
    api: ApiClient, settings: Any, offloads: OffloadStore, conversation_id: str | None
) -> None:
    """The first result is offloaded, the second refused: what the request stored is
    removed again, what an earlier request recorded stays, and the conversation stays as
    that request left it."""
    settings.REDUCTION_MAX_OFFLOADS = 1
    before_body = {"config": CLEAR_AT_100, "conversation_id": "run-1", "messages": CHAT}
    assert api.post("/clear", before_body).status_code == HTTPStatus.OK
    before = recorded(offloads)
    assert len(before[0]) == len(before[3]) == 1  # call_a's file
    # call_x's content is new, so the request stores it before call_b is refused.
    messages = [*CHAT[:2], chat_call("call_x"), chat_result("call_x", "X" * 200), *ROUNDS_3[4:]]
    body = {"config": CLEAR_AT_100, "conversation_id": conversation_id, "messages": messages}
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "this request would offload more than 1 results, over the limit of 1 offloads per "
        "request (REDUCTION_MAX_OFFLOADS); nothing was recorded"
    )
    assert recorded(offloads) == before


def test_truncate_with_an_offload_limit_offloads_its_result(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_OFFLOADS = 1
    response = truncate(api, "q" * 30, conversation_id="run-1")
    assert response.status_code == HTTPStatus.OK, response.json()
    assert response.json()["offload_path"] == "/tmp/trunc/call_1"


# /tools/read_file ------------------------------------------------------------------------

READ_FILE_PARAMETERS = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The path given in the notice."},
        "offset": {"type": "integer", "minimum": 0, "description": "First line to read, from 0."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read."},
    },
    "required": ["path"],
}


def test_read_file_tool_definitions(api: ApiClient) -> None:
    response = api.get("/tools/read_file")
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    description = body["openai"]["function"]["description"]
    assert description.startswith(
        "Read a file that holds tool output moved out of the conversation"
    )
    assert body == {
        "openai": {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": description,
                "parameters": READ_FILE_PARAMETERS,
            },
        },
        "anthropic": {
            "name": "read_file",
            "description": description,
            "input_schema": READ_FILE_PARAMETERS,
        },
        "responses": {
            "type": "function",
            "name": "read_file",
            "description": description,
            "parameters": READ_FILE_PARAMETERS,
        },
    }


def test_read_file_tool_definitions_parse_as_tools_of_each_format(api: ApiClient) -> None:
    """Each definition is accepted back as a tool of its own format."""
    body = api.get("/tools/read_file").json()
    for fmt, tool in (
        ("openai_chat", body["openai"]),
        ("anthropic", body["anthropic"]),
        ("openai_responses", body["responses"]),
    ):
        response = api.post("/clear", {"format": fmt, "messages": [], "tools": [tool]})
        assert response.status_code == HTTPStatus.OK, response.json()


def test_read_file_tool_needs_a_key(api: ApiClient) -> None:
    response = api.client.get("/api/v1/tools/read_file")
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert response.json() == error("missing or invalid API key")


def test_truncate_only_when_shorter_keeps_an_output_its_notice_would_lengthen(
    api: ApiClient, offload_dir: Path
) -> None:
    """``trunc_only_when_shorter`` over HTTP: 25 characters over a limit of 20 would become a
    notice several times longer, so the result comes back as sent, with nothing stored."""
    config = {**SMALL, "trunc_only_when_shorter": True}
    response = truncate(api, "0123456789abcdefghijKLMNO", config=config)
    assert response.status_code == HTTPStatus.OK
    assert response.json() == {
        "truncated": False,
        "result": "0123456789abcdefghijKLMNO",
        "offload_path": None,
        "events": [],
    }
    assert stored_files(offload_dir) == []
    assert OffloadedFile.objects.count() == 0


def test_clear_cache_aware_drops_a_pass_that_does_not_pay(
    api: ApiClient, offload_dir: Path
) -> None:
    """``clear_cache_aware`` over HTTP: with 2 calls so far, clearing call_a frees 25 tokens
    but rewrites 55 (its result and call_b) in the cache: 25 × 135 < 55 × 115."""
    config = {**CLEAR_AT_100, "clear_cache_aware": True}
    response = api.post("/clear", {"config": config, "conversation_id": "run-1", "messages": CHAT})
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    assert body["messages"] == CHAT
    assert (body["applied"], body["tokens_before"], body["tokens_after"]) == (False, 115, 115)
    assert [(e["kind"], e["reason"]) for e in body["events"]] == [
        ("summary", "below_cache_break_even")
    ]
    assert stored_files(offload_dir) == []
    priced_as_no_cache = {
        **config,
        "clear_cache_read_percent": 100,
        "clear_cache_write_percent": 100,
    }
    again = api.post("/clear", {"config": priced_as_no_cache, "messages": CHAT})
    assert again.json()["applied"] is True


# Hostile input: every refusal a 422 naming the field, on SQLite and PostgreSQL alike -----

# As JSON escapes: a body holds them so, and they decode to the characters.
ROOT_DIR_PROBLEMS = [
    pytest.param(
        b"/tmp/\\ud800", "must not contain a lone surrogate ('\\ud800' at 5)", id="surrogate"
    ),
    pytest.param(b"/tmp/\\u0000", "must not contain NUL characters", id="nul"),
]


def _clear_body(config: bytes, conversation_id: str | None) -> bytes:
    head = b'{"messages": [{"role": "user", "content": "hi"}], '
    if conversation_id is not None:
        head += b'"conversation_id": "' + conversation_id.encode() + b'", '
    return head + b'"config": ' + config + b"}"


@pytest.mark.parametrize("conversation_id", [None, "run-1"])
@pytest.mark.parametrize(("root_dir", "problem"), ROOT_DIR_PROBLEMS)
def test_clear_refuses_unstorable_text_in_root_dir(
    api: ApiClient, root_dir: bytes, problem: str, conversation_id: str | None
) -> None:
    body = _clear_body(b'{"root_dir": "' + root_dir + b'"}', conversation_id)
    response = api.post_raw("/clear", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(f"config.root_dir {problem}", "config.root_dir")
    assert not Conversation.objects.exists()
    assert not EventRecord.objects.exists()


@pytest.mark.parametrize(("root_dir", "problem"), ROOT_DIR_PROBLEMS)
def test_truncate_refuses_unstorable_text_in_root_dir(
    api: ApiClient, root_dir: bytes, problem: str
) -> None:
    body = (
        b'{"tool_name": "grep", "tool_call_id": "c1", "result": "' + b"x" * 100 + b'", '
        b'"conversation_id": "run-1", '
        b'"config": {"max_length_for_trunc": 20, "root_dir": "' + root_dir + b'"}}'
    )
    response = api.post_raw("/truncate", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(f"config.root_dir {problem}", "config.root_dir")
    assert not OffloadedFile.objects.exists()


def test_clear_refuses_a_stored_config_out_of_range(api: ApiClient) -> None:
    """A config stored before its range was checked is refused where it is used, naming
    the field (PostgreSQL's jsonb holds the number; neither database holds NUL there)."""
    profile = ConfigProfile.objects.create(workspace=api.workspace, name="old")
    ConfigVersion.objects.create(
        profile=profile, number=1, data={"clear_retention_suffix_limit": -(2**70)}
    )
    response = api.post(
        "/clear", {"config_id": profile.pk, "messages": [{"role": "user", "content": "hi"}]}
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "config.clear_retention_suffix_limit must be at least -9223372036854775808, "
        "got -1180591620717411303424",
        "config.clear_retention_suffix_limit",
    )


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("clear_retention_suffix_limit", -(2**70), "at least -9223372036854775808"),
        ("clear_retention_suffix_limit", 2**63, "at most 9223372036854775807"),
        ("clear_at_least_tokens", -1, "at least 0"),
        ("clear_cache_read_percent", 2**64, "at most 9223372036854775807"),
    ],
)
def test_clear_refuses_an_int_knob_out_of_range(
    api: ApiClient, name: str, value: int, problem: str
) -> None:
    response = api.post(
        "/clear", {"config": {name: value}, "messages": [{"role": "user", "content": "hi"}]}
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        f"config.{name} must be {problem}, got {value}", f"config.{name}"
    )


LONG_NAME = "f" * 10_000


@pytest.mark.parametrize(
    ("message_format", "tool", "field"),
    [
        (
            "openai_chat",
            {"type": "function", "function": {"name": LONG_NAME, "parameters": {}}},
            "tools[0].function.name",
        ),
        ("openai_responses", {"type": "function", "name": LONG_NAME}, "tools[0].name"),
        ("anthropic", {"name": LONG_NAME, "input_schema": {}}, "tools[0].name"),
    ],
)
def test_clear_refuses_a_tool_name_over_200_characters(
    api: ApiClient, message_format: str, tool: dict[str, Any], field: str
) -> None:
    response = api.post(
        "/clear",
        {
            "format": message_format,
            "conversation_id": "run-1",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [tool],
        },
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        f"{field}: longer than the limit of 200 characters (10000 characters)", field
    )
    assert not Conversation.objects.exists()
