"""Writes of conversations: upserts keep the longest transcript; a delete removes
content once committed."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reduction_app.conversations.services import conversation_delete, conversation_upsert
from reduction_app.models import Conversation, EventRecord, OffloadedFile, Workspace
from reduction_app.reductions.services import engine_session_record
from tests.app.support import session_for, truncate_in
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db


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
    assert (shorter.transcript, shorter.message_count, shorter.title) == (long, 2, "T")
    # Without a transcript (a truncate call), the stored one stays.
    same = conversation_upsert(workspace=workspace, client_id="c", message_format="openai_chat")
    assert (same.transcript, same.title) == (long, "T")


def test_conversation_upsert_does_not_read_back_what_it_replaces(workspace: Workspace) -> None:
    """A client sends its whole context on every call: the stored transcript, tools and
    system are written, never loaded to be overwritten."""
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
    [select] = [q["sql"] for q in queries if q["sql"].startswith("SELECT")]
    for column in ("transcript", "tools", "system"):
        assert f'"{column}"' not in select
    stored = Conversation.objects.get()
    assert (stored.message_count, stored.transcript[1], stored.tools) == (
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
