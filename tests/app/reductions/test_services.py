"""Recording an engine session in one transaction, or not at all."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reduction_app.conversations.services import conversation_delete, conversation_upsert
from reduction_app.errors import ServiceError
from reduction_app.models import Conversation, EventRecord, OffloadedFile, StagedOffload, Workspace
from reduction_app.reductions.services import engine_session_record
from tests.app.support import session_for, truncate_in
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db


def test_engine_session_record_writes_files_events_and_conversation(
    workspace: Workspace, offloads: OffloadStore
) -> None:
    with session_for(workspace, max_length_for_trunc=4) as session:
        truncate_in(session, "abcdefgh")
        rows = engine_session_record(session=session, conversation_id="run-1")
    [event] = rows
    assert (event.phase, event.kind, event.offload_path, event.conversation.client_id) == (
        "truncation",
        "tool",
        "/tmp/trunc/call_1",
        "run-1",
    )
    row = OffloadedFile.objects.get()
    assert (row.path, row.size_chars, row.tokens, row.call_id) == (
        "/tmp/trunc/call_1",
        8,
        2,
        "call_1",
    )
    assert [offloads.read_bytes(name) for name in offloads.names()] == [b"abcdefgh"]


def test_engine_session_failure_in_the_block_removes_staged_content(
    workspace: Workspace, offloads: OffloadStore
) -> None:
    with (
        pytest.raises(RuntimeError, match="agent crashed"),
        session_for(workspace, max_length_for_trunc=4) as session,
    ):
        truncate_in(session, "abcdefgh")
        session.backend.store()
        assert len(offloads.names()) == 1
        raise RuntimeError("agent crashed")
    assert offloads.names() == []
    assert OffloadedFile.objects.count() == 0
    assert StagedOffload.objects.count() == 0


def test_engine_session_record_never_overwrites_a_recorded_offload(
    workspace: Workspace, offloads: OffloadStore
) -> None:
    """Two requests given the same free path: the second to record fails, and nothing of
    it is kept."""
    with session_for(workspace, max_length_for_trunc=4) as racing:
        truncate_in(racing, "first content")
        with session_for(workspace, max_length_for_trunc=4) as winner:
            truncate_in(winner, "other content")
            engine_session_record(session=winner, conversation_id="run-2")
        with pytest.raises(
            ServiceError, match="offload path /tmp/trunc/call_1 was taken by another request"
        ):
            engine_session_record(session=racing, conversation_id="run-1")
    row = OffloadedFile.objects.get()
    assert row.conversation is not None and row.conversation.client_id == "run-2"
    assert [offloads.read_bytes(name) for name in offloads.names()] == [b"other content"]
    assert EventRecord.objects.count() == 1
    assert list(Conversation.objects.values_list("client_id", flat=True)) == ["run-2"]


def test_engine_session_record_checks_a_path_many_conversations_share(
    workspace: Workspace,
) -> None:
    """A path 20 conversations recorded (after a request found it free) holds their one
    content: that request, with other content, is refused; one with the same content gets
    a row of its own; and each check reads one row of the path, not twenty."""
    with session_for(workspace, max_length_for_trunc=4) as racing:
        truncate_in(racing, "first content")
        for n in range(20):
            with session_for(workspace, max_length_for_trunc=4) as session:
                truncate_in(session, "abcdefgh")
                engine_session_record(session=session, conversation_id=f"run-{n}")
        with pytest.raises(ServiceError, match="offload path /tmp/trunc/call_1 was taken"):
            engine_session_record(session=racing, conversation_id="late")
    with session_for(workspace, max_length_for_trunc=4) as same:
        truncate_in(same, "abcdefgh")
        with CaptureQueriesContext(connection) as queries:
            engine_session_record(session=same, conversation_id="run-20")
    checks = [q["sql"] for q in queries.captured_queries if "IN ((SELECT" in q["sql"]]
    assert [sql.count("LIMIT 1") for sql in checks] == [1, 1]  # the path; the stored name
    assert OffloadedFile.objects.filter(path="/tmp/trunc/call_1").count() == 21


def test_engine_session_record_refuses_content_removed_since_it_looked(
    workspace: Workspace, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    """A request that found its content recorded does not store it again; if the last
    row naming it is deleted (and the content removed) before the request records, it
    fails rather than name content that is gone."""
    with session_for(workspace, max_length_for_trunc=4) as first:
        truncate_in(first, "abcdefgh")
        engine_session_record(session=first, conversation_id="run-1")
    with session_for(workspace, max_length_for_trunc=4) as late:
        truncate_in(late, "abcdefgh")  # the same path and content: found recorded
        with django_capture_on_commit_callbacks(execute=True):
            conversation_delete(conversation=Conversation.objects.get(client_id="run-1"))
        assert offloads.names() == []
        with pytest.raises(ServiceError, match="removed meanwhile; send this request again"):
            engine_session_record(session=late, conversation_id="run-2")
    assert OffloadedFile.objects.count() == 0
    assert StagedOffload.objects.count() == 0


def test_engine_session_record_same_content_keeps_the_first_record(workspace: Workspace) -> None:
    """The same call offloaded again in one conversation reuses its path, its file row
    and its event row: the second recording writes none."""
    written = []
    for call in ("call_1", "call_1"):
        with session_for(workspace, max_length_for_trunc=4) as session:
            truncate_in(session, "abcdefgh", call_id=call)
            written.append(engine_session_record(session=session, conversation_id="run-1"))
    row = OffloadedFile.objects.get()
    assert (row.path, row.conversation.client_id) == ("/tmp/trunc/call_1", "run-1")
    assert [len(rows) for rows in written] == [1, 0]
    assert EventRecord.objects.get().offload_path == "/tmp/trunc/call_1"


def test_engine_session_record_same_path_in_two_conversations_gives_each_a_row(
    workspace: Workspace,
) -> None:
    """Each conversation naming a path has a row of its own, both naming one content."""
    for conversation in ("run-1", "run-2"):
        with session_for(workspace, max_length_for_trunc=4) as session:
            truncate_in(session, "abcdefgh")
            engine_session_record(session=session, conversation_id=conversation)
    rows = OffloadedFile.objects.order_by("id")
    assert [(r.path, r.conversation.client_id) for r in rows] == [
        ("/tmp/trunc/call_1", "run-1"),
        ("/tmp/trunc/call_1", "run-2"),
    ]
    assert len({r.storage_name for r in rows}) == 1
    workspace.refresh_from_db()
    assert workspace.offload_bytes == len("abcdefgh")


def test_engine_session_record_queries_do_not_grow_with_the_offloads(
    workspace: Workspace,
) -> None:
    """The recorded paths are looked up at once and the new files and events inserted at
    once: recording 12 offloads takes as many queries as recording one."""
    conversation_upsert(workspace=workspace, client_id="run-1", message_format="openai_chat")
    counts = []
    for count, first in ((1, 0), (12, 100)):
        with session_for(workspace, max_length_for_trunc=4) as session:
            for n in range(first, first + count):
                truncate_in(session, f"output {n}", call_id=f"call_{n}")
            with CaptureQueriesContext(connection) as queries:
                rows = engine_session_record(session=session, conversation_id="run-1")
        assert len(rows) == count
        counts.append(len(queries))
    assert counts[0] == counts[1]
    assert OffloadedFile.objects.count() == 13
