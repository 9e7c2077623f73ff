"""Live traces in: what an exporter sends is stored at once, then read into conversations
on the task workers, the traces of one session (or of one opening) together, so that
spans arriving over many requests, late or twice, make what the whole file would."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django_tasks import task

from reduction_app.conversations.imports import (
    ID_CHARS,
    RecordingImportError,
    conversation_slug,
    stored_form,
)
from reduction_app.conversations.services import conversation_delete, conversation_upsert
from reduction_app.errors import LimitExceeded
from reduction_app.models import (
    Conversation,
    EventRecord,
    TelemetryGroup,
    TelemetryRecord,
    Workspace,
)
from reduction_app.telemetry.events import reduction_events
from reduction_app.telemetry.otlp import Record, Signal
from simulator.importers import TRACES_SOURCE, ImportError_, conversation_from_json
from simulator.recording import RecordedConversation
from simulator.sources.otel import session_of

__all__ = ["SOURCE", "process_telemetry", "telemetry_process", "telemetry_store"]

logger = logging.getLogger(__name__)

SOURCE = TRACES_SOURCE
"""The ``Conversation.source`` of conversations made from traces (as a trace file's)."""
_NAME = TRACES_SOURCE
"""What errors about traces call where they came from."""
_KEY_CHARS = TelemetryGroup._meta.get_field("key").max_length or 0


def telemetry_store(*, workspace: Workspace, signal: Signal, records: Sequence[Record]) -> int:
    """Store what one request carried, each span once (a retried or repeated one is
    skipped), and have the workers read it; how many records were new."""
    kind = "span" if signal == "traces" else "log"
    rows = []
    for record in records:
        text = json.dumps(record.data, ensure_ascii=True, separators=(",", ":"))
        if kind == "span":
            key = record.trace_id + record.span_id
        else:
            key = hashlib.sha256(text.encode()).hexdigest()
        rows.append(
            TelemetryRecord(
                workspace=workspace, kind=kind, key=key, trace_id=record.trace_id, data=text
            )
        )
    with _waiting_at_most(settings.REDUCTION_OTLP_LOCK_WAIT_SECONDS):
        known = set(
            TelemetryRecord.objects.filter(
                workspace=workspace, kind=kind, key__in=[r.key for r in rows]
            ).values_list("key", flat=True)
        )
        new = [r for r in rows if r.key not in known]
        if new:
            # A record another request stored meanwhile is skipped by the unique constraint.
            TelemetryRecord.objects.bulk_create(new, ignore_conflicts=True)
            transaction.on_commit(lambda: process_telemetry.enqueue(workspace.pk))
    return len(new)


@contextmanager
def _waiting_at_most(seconds: float) -> Iterator[None]:
    """A transaction that waits at most ``seconds`` for a lock another one holds, then
    fails (``OperationalError``) rather than keep an exporter waiting: PostgreSQL's
    ``lock_timeout`` for it; on SQLite the connection's busy timeout while it runs, its
    write lock being taken as it begins."""
    ms = int(seconds * 1000)
    if connection.vendor != "sqlite":
        with transaction.atomic():
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = %s", [f"{ms}ms"])
            yield
        return
    with connection.cursor() as cursor:
        cursor.execute(f"PRAGMA busy_timeout = {ms}")
    try:
        with transaction.atomic():
            yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA busy_timeout = {int(_sqlite_timeout() * 1000)}")


def _sqlite_timeout() -> float:
    return float(connection.settings_dict.get("OPTIONS", {}).get("timeout", 5))


@task()
def process_telemetry(workspace_id: int) -> int:
    """Read what the workspace's exporters sent since the last run into conversations."""
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    return 0 if workspace is None else telemetry_process(workspace=workspace)


def telemetry_process(*, workspace: Workspace) -> int:
    """Read the traces that received records into their groups, then rebuild each group
    touched; how many groups were rebuilt.

    A trace's group is the session its spans name (any of ``SESSION_KEYS``, on any span
    or resource of the trace), else its opening (the messages up to the first user
    message of its first call): calls that continue each other open alike, so their
    traces are read together and chain into one conversation. A trace is grouped again
    whenever a record of it arrives: the span naming the session often ends last."""
    pending = (
        TelemetryRecord.objects.filter(workspace=workspace, pending=True)
        .values_list("trace_id", flat=True)
        .distinct()
    )
    touched: set[str] = set()
    for trace_id in list(pending):
        rows = list(TelemetryRecord.objects.filter(workspace=workspace, trace_id=trace_id))
        key = _group_key(trace_id, rows)
        touched |= {r.group for r in rows if r.group} | {key}
        TelemetryRecord.objects.filter(pk__in=[r.pk for r in rows]).update(group=key, pending=False)
    for key in sorted(touched):
        _rebuild(workspace, key)
    return len(touched)


def _group_key(trace_id: str, rows: Sequence[TelemetryRecord]) -> str:
    items = _items(rows)
    try:
        session = session_of(items, name=_NAME)
    except ImportError_:
        return f"trace:{trace_id}"
    if session:
        key = f"session:{session}"
        # The column holds 300 characters: a longer id is grouped by its digest.
        return key if len(key) <= _KEY_CHARS else f"session-sha256:{_digest(session)}"
    if not trace_id:
        return "logs"
    try:
        read = conversation_from_json(items, fmt=TRACES_SOURCE, name=_NAME, require_calls=False)
    except (ImportError_, RecursionError):
        return f"trace:{trace_id}"
    if not read:
        return f"trace:{trace_id}"
    return f"opening:{_opening(read[0])}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _opening(conversation: RecordedConversation) -> str:
    """A digest of the messages up to and including the first user message."""
    opening = []
    for message in conversation.messages:
        opening.append(repr(message))
        if getattr(message, "role", "") == "user":
            break
    return hashlib.sha256("\x00".join(opening).encode("utf-8", "surrogatepass")).hexdigest()


def _items(rows: Iterable[TelemetryRecord]) -> list[dict[str, Any]]:
    """The rows as the lines of a trace file: one object of spans, one of log records."""
    spans: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    for row in rows:
        (spans if row.kind == "span" else logs).append(json.loads(row.data))
    items = []
    if spans:
        items.append({"resourceSpans": spans})
    if logs:
        items.append({"resourceLogs": logs})
    return items


def _client_id(label: str) -> str:
    """A conversation id for a reader's label (``otel#KEY``): the key itself (a session's
    own id, so a client recording the same session over the REST API meets it), else its
    slug."""
    _, _, key = label.partition("#")
    if key and len(key) <= ID_CHARS and key.isprintable() and "\\" not in key:
        segments = key.split("/")
        if all(s not in (".", "..") for s in segments):
            return key
    return conversation_slug(label)


def _rebuild(workspace: Workspace, key: str) -> None:
    """Read the group's records into conversations, replacing those it made before; an
    error is kept on the group (its conversations stay as they were). The records are
    read before the write transaction opens, so the database is held only for the writes."""
    rows = list(TelemetryRecord.objects.filter(workspace=workspace, group=key).order_by("id"))
    items = _items(rows)
    try:
        planned = [
            (_client_id(recorded.name), recorded, stored_form(recorded, _NAME))
            for recorded in _read(items)
        ]
    except (ImportError_, LimitExceeded, RecordingImportError) as exc:
        _failed(workspace, key, str(exc))
        return
    events = reduction_events(items)
    with transaction.atomic():
        group, _ = TelemetryGroup.objects.select_for_update().get_or_create(
            workspace=workspace, key=key
        )
        made = [_save(workspace, *plan) for plan in planned]
        if events:
            made += _record_events(workspace, key, made, events)
        for client_id in sorted(set(group.conversations) - set(made)):
            stale = Conversation.objects.filter(
                workspace=workspace, client_id=client_id, source=SOURCE
            ).first()
            if stale is not None:
                conversation_delete(conversation=stale)
        if not rows:  # its traces moved to another group
            group.delete()
            return
        group.conversations = list(dict.fromkeys(made))
        group.error = ""
        group.save()


def _failed(workspace: Workspace, key: str, error: str) -> None:
    logger.info("traces of %s in workspace %s not read: %s", key, workspace.pk, error)
    TelemetryGroup.objects.update_or_create(
        workspace=workspace, key=key, defaults={"error": error[:10_000]}
    )


def _read(items: Sequence[dict[str, Any]]) -> list[RecordedConversation]:
    """The conversations of a group's records (:func:`_items`): none while they hold no
    model call yet (a trace of tool spans only, log records whose spans are still to come)."""
    if not any("resourceSpans" in item for item in items):
        return []
    try:
        return conversation_from_json(items, fmt=TRACES_SOURCE, name=_NAME, require_calls=False)
    except RecursionError as exc:
        raise ImportError_(f"{_NAME}: nested too deeply to read") from exc


def _save(
    workspace: Workspace, client_id: str, recorded: RecordedConversation, stored: dict[str, Any]
) -> str:
    conversation = conversation_upsert(
        workspace=workspace,
        client_id=client_id,
        message_format=stored["message_format"],
        transcript=stored["transcript"],
        tools=stored["tools"],
        system=stored["system"],
        title=(recorded.name.partition("#")[2] or recorded.name)[:300],
    )
    conversation.source = SOURCE
    conversation.provider_usage = stored["provider_usage"]
    conversation.save(update_fields=["source", "provider_usage"])
    return client_id


def _record_events(
    workspace: Workspace,
    key: str,
    made: Sequence[str],
    events: Sequence[tuple[str, dict[str, Any]]],
) -> list[str]:
    """Record the reduction events the group's spans carry, once each (their key is the
    span and the event's place in it), in the conversation each names, else the group's
    first; the conversations made for events alone."""
    extra: list[str] = []
    conversations: dict[str, Conversation] = {}
    rows = []
    for event_key, fields in events:
        client_id = fields.pop("conversation_id", "") or (made[0] if made else "")
        if not client_id:
            client_id = _client_id(f"{_NAME}#{key.partition(':')[2] or key}")
            extra.append(client_id)
        conversation = conversations.get(client_id)
        if conversation is None:
            conversation = conversation_upsert(
                workspace=workspace, client_id=client_id, message_format="openai_chat"
            )
            conversations[client_id] = conversation
        rows.append(
            EventRecord(
                workspace=workspace, conversation=conversation, reduction_key=event_key, **fields
            )
        )
    EventRecord.objects.bulk_create(rows, ignore_conflicts=True)
    return extra
