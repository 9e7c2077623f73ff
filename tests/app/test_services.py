"""Writes: workspaces, keys, configs with versions, conversations, and recording an
engine session in one transaction (or not at all)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reduction_app import engine
from reduction_app.configs.services import config_create, config_delete, config_update
from reduction_app.conversations.services import conversation_delete, conversation_upsert
from reduction_app.errors import ServiceError
from reduction_app.models import ConfigVersion, Conversation, EventRecord, OffloadedFile, Workspace
from reduction_app.records.services import file_mark_read
from reduction_app.reductions.services import engine_session_record
from reduction_app.workspaces.services import (
    api_key_create,
    api_key_revoke,
    workspace_get_or_create,
)
from tests.app.support import session_for, stored_files, truncate_in

pytestmark = pytest.mark.django_db


def test_workspace_get_or_create_slugs_and_reuses(
    workspace: Workspace, django_user_model: Any
) -> None:
    assert (workspace.slug, workspace.name) == ("alpha-team", "Alpha Team")
    user = django_user_model.objects.create_user("ada")
    again = workspace_get_or_create(name="alpha team", user=user)
    assert again.pk == workspace.pk
    assert list(again.members.all()) == [user]
    assert workspace_get_or_create(name="!!!").slug == "workspace"


def test_api_key_create_and_revoke(workspace: Workspace) -> None:
    key, raw = api_key_create(workspace=workspace, name="ci")
    assert raw.startswith("rl_") and len(raw) == 46
    assert key.revoked_at is None
    revoked = api_key_revoke(key=key).revoked_at
    assert revoked is not None
    assert api_key_revoke(key=key).revoked_at == revoked  # revoking twice keeps the first time


def test_config_versions(workspace: Workspace) -> None:
    first = config_create(workspace=workspace, name="c", data={"max_length_for_trunc": 5})
    second = config_update(profile=first.profile, data={"trunc_exclude_tools": ["b", "a"]})
    assert (first.number, second.number) == (1, 2)
    assert first.data["max_length_for_trunc"] == 5
    # Each version is a whole config: what is not given is the default.
    assert (second.data["max_length_for_trunc"], second.data["trunc_exclude_tools"]) == (
        50000,
        ["a", "b"],
    )
    assert list(ConfigVersion.objects.values_list("number", flat=True)) == [2, 1]


def test_config_create_refuses_bad_data_and_duplicates(workspace: Workspace) -> None:
    with pytest.raises(engine.ConfigError, match="max_tokens_for_clear must be at least 0, got -1"):
        config_create(workspace=workspace, name="c", data={"max_tokens_for_clear": -1})
    config_create(workspace=workspace, name="c", data={})
    with pytest.raises(ServiceError, match="a config named 'c' already exists"):
        config_create(workspace=workspace, name="c", data={})
    # Another workspace may use the name.
    config_create(workspace=workspace_get_or_create(name="beta"), name="c", data={})


def test_config_delete_frees_the_name(workspace: Workspace) -> None:
    version = config_create(workspace=workspace, name="c", data={})
    config_delete(profile=version.profile)
    assert config_create(workspace=workspace, name="c", data={}).profile.pk != version.profile.pk


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


def test_engine_session_record_writes_files_events_and_conversation(
    workspace: Workspace, offload_dir: Path
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
    assert [p.read_bytes() for p in stored_files(offload_dir)] == [b"abcdefgh"]


def test_engine_session_failure_in_the_block_removes_staged_content(
    workspace: Workspace, offload_dir: Path
) -> None:
    with (
        pytest.raises(RuntimeError, match="agent crashed"),
        session_for(workspace, max_length_for_trunc=4) as session,
    ):
        truncate_in(session, "abcdefgh")
        assert len(stored_files(offload_dir)) == 1
        raise RuntimeError("agent crashed")
    assert stored_files(offload_dir) == []
    assert OffloadedFile.objects.count() == 0


def test_engine_session_record_never_overwrites_a_recorded_offload(
    workspace: Workspace, offload_dir: Path
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
    assert [p.read_bytes() for p in stored_files(offload_dir)] == [b"other content"]
    assert EventRecord.objects.count() == 1
    assert list(Conversation.objects.values_list("client_id", flat=True)) == ["run-2"]


def test_engine_session_record_same_content_keeps_the_first_record(workspace: Workspace) -> None:
    for conversation in ("run-1", "run-2"):
        with session_for(workspace, max_length_for_trunc=4) as session:
            truncate_in(session, "abcdefgh")
            engine_session_record(session=session, conversation_id=conversation)
    row = OffloadedFile.objects.get()
    assert row.conversation is not None and row.conversation.client_id == "run-1"
    assert EventRecord.objects.count() == 2


def test_conversation_delete_removes_content_on_commit(
    workspace: Workspace, offload_dir: Path, django_capture_on_commit_callbacks: Any
) -> None:
    with session_for(workspace, max_length_for_trunc=4) as session:
        truncate_in(session, "abcdefgh")
        engine_session_record(session=session, conversation_id="run-1")
    conversation = Conversation.objects.get()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        conversation_delete(conversation=conversation)
    assert OffloadedFile.objects.count() == EventRecord.objects.count() == 0
    assert len(stored_files(offload_dir)) == 1  # not before the commit
    for callback in callbacks:
        callback()
    assert stored_files(offload_dir) == []


def test_file_mark_read_counts(workspace: Workspace) -> None:
    with session_for(workspace, max_length_for_trunc=4) as session:
        truncate_in(session, "abcdefgh")
        engine_session_record(session=session, conversation_id=None)
    row = OffloadedFile.objects.get()
    file_mark_read(file=row)
    file_mark_read(file=row)
    row.refresh_from_db()
    assert row.read_count == 2
    assert row.last_read_at is not None
