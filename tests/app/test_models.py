"""The models: the recorded event against the engine's event value, the API's event schema
built from it, and the migrations that moved rows (the model renamed, transcripts a message
a row, a file row for each conversation naming a path)."""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import Any

import pytest
from django.db import connection, models
from django.db.migrations.executor import MigrationExecutor

from reduction_app.conversations.services import message_digest
from reduction_app.engine import ReductionEvent
from reduction_app.models import EventRecord
from reduction_app.records.schemas import EventOut

_TYPES = ((models.BooleanField, bool), (models.IntegerField, int), (models.CharField, str))


def _event_fields() -> list[models.Field[Any, Any]]:
    return [f for f in EventRecord._meta.concrete_fields if f.name not in EventRecord.RECORD_FIELDS]


def _python_type(field: models.Field[Any, Any]) -> type:
    return next(python for kind, python in _TYPES if isinstance(field, kind))


def test_event_record_has_the_engine_events_fields_name_by_name() -> None:
    """The model records every field of the engine's ``ReductionEvent``, in its order,
    with the same type and default; the rest is where and when it was recorded."""
    engine_fields = dataclasses.fields(ReductionEvent)
    hints = typing.get_type_hints(ReductionEvent)
    assert [f.name for f in _event_fields()] == [f.name for f in engine_fields]
    for field, value in zip(_event_fields(), engine_fields, strict=True):
        hint = hints[value.name]
        if typing.get_origin(hint) is typing.Literal:  # phase, kind
            hint = type(typing.get_args(hint)[0])
        assert _python_type(field) is hint, field.name
        if value.default is dataclasses.MISSING:
            assert not field.has_default() and not field.blank, field.name
        else:
            assert field.get_default() == value.default, field.name
    record = {f.name for f in EventRecord._meta.concrete_fields} - {f.name for f in engine_fields}
    assert record == {
        "id",
        "workspace",
        "conversation",
        "config_version",
        "created_at",
        "reduction_key",
    }
    assert set(EventRecord.RECORD_FIELDS) == record


def test_event_out_is_the_models_event_fields_and_where_they_were_recorded() -> None:
    schema = EventOut.model_json_schema()
    names = [f.name for f in _event_fields()]
    assert list(schema["properties"]) == [
        "id",
        *names,
        "conversation_id",
        "config_id",
        "config_version",
        "created_at",
    ]
    assert schema["required"] == names
    kinds = {bool: "boolean", int: "integer", str: "string"}
    for field in _event_fields():
        assert schema["properties"][field.name]["type"] == kinds[_python_type(field)]


@pytest.mark.django_db(transaction=True)
def test_event_record_rename_keeps_the_rows() -> None:
    """Rows recorded as ``ReductionEvent`` are there, whole, as ``EventRecord``."""
    executor = MigrationExecutor(connection)
    before, after = [("reduction_app", "0001_initial")], executor.loader.graph.leaf_nodes()
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    workspace = old.get_model("reduction_app", "Workspace").objects.create(name="w", slug="w")
    old.get_model("reduction_app", "ReductionEvent").objects.create(
        workspace=workspace, phase="clear", kind="summary", reason="applied", threshold=150
    )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    row = EventRecord.objects.get()
    assert (row.workspace.slug, row.phase, row.kind, row.reason, row.threshold) == (
        "w",
        "clear",
        "summary",
        "applied",
        150,
    )


@pytest.mark.django_db(transaction=True)
def test_transcripts_move_to_message_rows_and_back() -> None:
    """Stored transcripts become one row a message, digests included, and the migration
    reversed puts them back whole."""
    messages = [
        {"role": "user", "content": "naïve 🌍"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function"}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 3000},
    ]
    before = [("reduction_app", "0005_simulationpart_lease")]
    after = [("reduction_app", "0006_transcript_messages")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    workspace = old.get_model("reduction_app", "Workspace").objects.create(name="w", slug="w")
    conversations = old.get_model("reduction_app", "Conversation").objects
    conversations.create(workspace=workspace, client_id="a", transcript=messages, message_count=3)
    conversations.create(workspace=workspace, client_id="empty", transcript=[])
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    rows = new.get_model("reduction_app", "TranscriptMessage").objects.order_by("position")
    assert [(r.conversation.client_id, r.position, json.loads(r.data)) for r in rows] == [
        ("a", i, m) for i, m in enumerate(messages)
    ]
    # The migration's digest sorts dict keys (as message_digest did then); rows it wrote
    # whose keys were not sorted are rewritten once, at their conversation's next call.
    assert [r.digest for r in rows] == [
        message_digest(json.loads(json.dumps(m, sort_keys=True))) for m in messages
    ]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(before)
    back = executor.loader.project_state(before).apps.get_model("reduction_app", "Conversation")
    assert {c.client_id: c.transcript for c in back.objects.all()} == {"a": messages, "empty": []}
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_files_of_a_shared_path_become_a_row_for_each_conversation_and_back() -> None:
    """A path recorded once for the first conversation gets a row for each other whose
    events name it (and for the events of no conversation), all naming the one stored
    content; the workspace's offload usage stays; reversed, the first row stands."""
    before = [("reduction_app", "0008_quotas")]
    after = [("reduction_app", "0009_file_per_conversation")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    workspace = old.get_model("reduction_app", "Workspace").objects.create(
        name="w", slug="w", offload_bytes=11
    )
    conversations = old.get_model("reduction_app", "Conversation").objects
    x, y, z = (conversations.create(workspace=workspace, client_id=c) for c in "xyz")
    old.get_model("reduction_app", "OffloadedFile").objects.create(
        workspace=workspace,
        conversation=x,
        path="/tmp/clear/call_1",
        storage_name="ws1/ab/ab.txt",
        size_chars=11,
        size_bytes=11,
        tokens=3,
        sha256="ab",
        phase="clear",
        tool_name="grep",
        call_id="call_1",
        read_count=4,
    )
    events = old.get_model("reduction_app", "EventRecord").objects
    for conversation in (x, y, y, None):
        events.create(
            workspace=workspace,
            conversation=conversation,
            phase="clear",
            kind="tool",
            offload_path="/tmp/clear/call_1",
        )
    # A summary names no file; z's tool event names a path no row holds (its content gone).
    events.create(workspace=workspace, conversation=z, phase="clear", kind="summary")
    events.create(
        workspace=workspace, conversation=z, phase="clear", kind="tool", offload_path="/gone"
    )
    first_y = events.filter(conversation=y).order_by("id").first().created_at
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    files = new.get_model("reduction_app", "OffloadedFile").objects.order_by("id")
    # The copies are inserted in no particular order: compared as a set.
    assert {
        (f.conversation and f.conversation.client_id, f.path, f.storage_name, f.call_id)
        for f in files
    } == {
        ("x", "/tmp/clear/call_1", "ws1/ab/ab.txt", "call_1"),
        ("y", "/tmp/clear/call_1", "ws1/ab/ab.txt", "call_1"),
        (None, "/tmp/clear/call_1", "ws1/ab/ab.txt", "call_1"),
    }
    assert files.count() == 3
    copy = files.get(conversation__client_id="y")
    assert (copy.read_count, copy.size_bytes, copy.created_at) == (0, 11, first_y)
    assert new.get_model("reduction_app", "Workspace").objects.get().offload_bytes == 11
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(before)
    back = executor.loader.project_state(before).apps.get_model("reduction_app", "OffloadedFile")
    assert list(back.objects.values_list("conversation__client_id", "read_count")) == [("x", 4)]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
