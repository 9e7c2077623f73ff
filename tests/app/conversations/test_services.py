"""Writes of conversations: upserts keep the longest transcript; a delete removes
content once committed."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reduction_app.conversations.selectors import conversation_transcript
from reduction_app.conversations.services import (
    conversation_create,
    conversation_delete,
    conversation_upsert,
    message_digest,
)
from reduction_app.models import (
    Conversation,
    EventRecord,
    OffloadedFile,
    TranscriptMessage,
    Workspace,
)
from reduction_app.reductions.services import engine_session_record
from tests.app.support import session_for, truncate_in
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db


def transcript(conversation: Conversation) -> list[Any]:
    return conversation_transcript(conversation=conversation)


def test_conversation_upsert_keeps_the_longest_transcript(workspace: Workspace) -> None:
    long = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    created = conversation_upsert(
        workspace=workspace, client_id="c", message_format="openai_chat", transcript=long
    )
    shorter = conversation_upsert(
        workspace=workspace,
        client_id="c",
        message_format="openai_chat",
        transcript=long[:1],
        title="T",
    )
    assert shorter.pk == created.pk
    assert (transcript(shorter), shorter.message_count, shorter.title) == (long, 2, "T")
    # Without a transcript (a truncate call), the stored one stays.
    same = conversation_upsert(workspace=workspace, client_id="c", message_format="openai_chat")
    assert (transcript(same), same.title) == (long, "T")


def stored_rows(conversation: Conversation) -> list[tuple[int, int, str]]:
    return list(
        TranscriptMessage.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("position", "pk", "digest")
    )


def test_conversation_upsert_writes_only_new_and_changed_messages(workspace: Workspace) -> None:
    """The next call repeats the last one's messages, one of them reduced, and adds two:
    the repeated rows stay as they were, the changed one and the new ones are written."""
    first = [
        {"role": "user", "content": "find the bug"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 5000},
    ]
    created = conversation_upsert(
        workspace=workspace, client_id="c", message_format="openai_chat", transcript=first
    )
    before = stored_rows(created)
    second = [
        first[0],
        first[1],
        {"role": "tool", "tool_call_id": "c1", "content": "<cleared: /tmp/clear/c1>"},
        {"role": "assistant", "content": "Found it."},
        {"role": "user", "content": "thanks, naïve 🌍 \udcff"},
    ]
    with CaptureQueriesContext(connection) as queries:
        updated = conversation_upsert(
            workspace=workspace, client_id="c", message_format="openai_chat", transcript=second
        )
    after = stored_rows(updated)
    assert after[:2] == before[:2]
    assert [(p, d) for p, _, d in after[2:]] == [(i, message_digest(second[i])) for i in (2, 3, 4)]
    assert after[2][1] != before[2][1]
    writes = [q["sql"].split()[0] for q in queries if q["sql"].startswith(("INSERT", "DELETE"))]
    assert writes == ["DELETE", "INSERT"]
    assert (transcript(updated), updated.message_count) == (second, 5)


def test_conversation_upsert_repeating_a_transcript_writes_no_message(
    workspace: Workspace,
) -> None:
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    conversation_upsert(
        workspace=workspace, client_id="c", message_format="openai_chat", transcript=messages
    )
    with CaptureQueriesContext(connection) as queries:
        conversation_upsert(
            workspace=workspace, client_id="c", message_format="openai_chat", transcript=messages
        )
    written = [q["sql"] for q in queries if q["sql"].startswith(("INSERT", "DELETE"))]
    assert written == []
    assert transcript(Conversation.objects.get()) == messages


def test_message_digest_tags_every_value_in_key_order() -> None:
    """Keys count in the order sent: the same message with its keys reordered is a
    changed message, since the transcript gives back the order last sent."""
    message = {"content": "é\udcff", "n": [1, 1.0, True, None], "role": "tool"}
    expected = hashlib.sha256(
        b"d3:s7:contents5:\xc3\xa9\xed\xb3\xbfs1:nl4:v1:1v3:1.0v4:Truev4:Nones4:roles4:tool"
    )
    assert message_digest(message) == expected.hexdigest()
    assert message_digest(dict(reversed(message.items()))) != expected.hexdigest()
    # Lengths keep values apart that would join alike.
    assert message_digest(["ab", "c"]) != message_digest(["a", "bc"])
    assert message_digest({"n": 1}) != message_digest({"n": "1"})


def test_conversation_upsert_does_not_read_back_what_it_replaces(workspace: Workspace) -> None:
    """A client sends its whole context on every call: the stored messages, tools and
    system are written, never loaded to be overwritten (only the messages' digests are)."""
    first = [{"role": "user", "content": "a" * 1000}]
    conversation_upsert(
        workspace=workspace, client_id="c", message_format="openai_chat", transcript=first
    )
    with CaptureQueriesContext(connection) as queries:
        conversation_upsert(
            workspace=workspace,
            client_id="c",
            message_format="openai_chat",
            transcript=[*first, {"role": "assistant", "content": "b"}],
            tools=[{"type": "function"}],
        )
    conversation_select, digests_select = [
        q["sql"] for q in queries if q["sql"].startswith("SELECT")
    ]
    for column in ("tools", "system"):
        assert f'"{column}"' not in conversation_select
    assert '"data"' not in digests_select
    stored = Conversation.objects.get()
    assert (stored.message_count, transcript(stored)[1], stored.tools) == (
        2,
        {"role": "assistant", "content": "b"},
        [{"type": "function"}],
    )


def test_conversation_delete_removes_content_on_commit(
    workspace: Workspace, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    with session_for(workspace, max_length_for_trunc=4) as session:
        truncate_in(session, "abcdefgh")
        engine_session_record(session=session, conversation_id="run-1")
    conversation = Conversation.objects.get()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        conversation_delete(conversation=conversation)
    assert OffloadedFile.objects.count() == EventRecord.objects.count() == 0
    assert len(offloads.names()) == 1  # not before the commit
    for callback in callbacks:
        callback()
    assert offloads.names() == []


def test_conversation_upsert_that_loses_a_create_race_updates_the_winner(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another request creates the conversation between this one's look and its insert:
    the insert's IntegrityError is caught in its savepoint, and the winner is updated in
    the same transaction."""
    from reduction_app.conversations import services

    conversation_upsert(
        workspace=workspace, client_id="c", message_format="openai_chat", transcript=[{"a": 1}]
    )
    looks = iter([None])
    real = services._locked
    monkeypatch.setattr(services, "_locked", lambda ws, cid: next(looks, real(ws, cid)))
    won = conversation_upsert(
        workspace=workspace,
        client_id="c",
        message_format="openai_chat",
        transcript=[{"a": 1}, {"b": 2}],
    )
    assert Conversation.objects.get() == won
    assert transcript(won) == [{"a": 1}, {"b": 2}]


def test_conversation_upsert_of_an_existing_conversation_makes_no_savepoint(
    workspace: Workspace,
) -> None:
    """The common case runs no savepoint statements (each is a round trip on PostgreSQL)."""
    conversation_upsert(workspace=workspace, client_id="c", message_format="openai_chat")
    with CaptureQueriesContext(connection) as queries:
        conversation_upsert(
            workspace=workspace, client_id="c", message_format="openai_chat", transcript=[{}]
        )
    assert not [q for q in queries if "SAVEPOINT" in q["sql"]]


def test_conversation_create_never_merges_into_an_existing_conversation(
    workspace: Workspace,
) -> None:
    """An import that finds its id taken meanwhile gets ``None``; the conversation there
    keeps its transcript, title and source."""
    first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    made = conversation_create(
        workspace=workspace,
        client_id="run-1",
        message_format="openai_chat",
        transcript=first,
        tools=[],
        title="first",
        source="swe_agent",
        imported_from="run-1.traj",
    )
    assert made is not None
    longer = [*first, {"role": "user", "content": "c"}]
    again = conversation_create(
        workspace=workspace,
        client_id="run-1",
        message_format="openai_chat",
        transcript=longer,
        tools=[],
        title="second",
        source="openhands",
    )
    assert again is None
    row = Conversation.objects.get(workspace=workspace, client_id="run-1")
    assert (row.title, row.source, row.imported_from, row.message_count) == (
        "first",
        "swe_agent",
        "run-1.traj",
        2,
    )
    assert transcript(row) == first
