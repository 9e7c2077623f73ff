"""The engine inside a recorded session.

Offloads are held by the storage backend while the engine runs; when it succeeded, they
are journaled and stored (``records.storage``), and then the file rows, the event rows
and the conversation are written, with the journal rows deleted, in one transaction. On
any failure the stored content is removed and nothing is recorded; a request whose new
files would take the workspace over its offload quota fails so too, before storing
anything (``workspaces.quotas``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from reduction_app import engine
from reduction_app.conversations.services import conversation_upsert
from reduction_app.engine import get_token_counter
from reduction_app.engine.inspect import count_text
from reduction_app.errors import ServiceError
from reduction_app.models import (
    ConfigVersion,
    EventRecord,
    OffloadedFile,
    StagedOffload,
    Workspace,
)
from reduction_app.records.storage import DjangoStorageBackend
from reduction_app.workspaces.quotas import offload_bytes_add


@dataclass
class EngineSession:
    """One engine call's collaborators and what it produced, before it is recorded."""

    workspace: Workspace
    backend: DjangoStorageBackend
    middleware: engine.ReductionMiddleware
    config_version: ConfigVersion | None
    events: list[engine.ReductionEvent] = field(default_factory=list)


@contextmanager
def engine_session(
    *,
    workspace: Workspace,
    config_data: Mapping[str, Any] | None,
    config_version: ConfigVersion | None,
    conversation_id: str | None = None,
) -> Iterator[EngineSession]:
    """Build a middleware on the workspace's storage; record its work if the block succeeds.

    ``conversation_id`` names the conversation the work is for, when there is one: its
    recorded files are looked up once rather than path by path.
    Raises :class:`engine.ConfigError` for a bad config before anything runs.
    """
    backend = DjangoStorageBackend(workspace, conversation_id=conversation_id)
    data = config_version.data if config_version is not None else (config_data or {})
    events: list[engine.ReductionEvent] = []
    config = engine.config_from_dict(data, backend=backend, on_event=events.append)
    session = EngineSession(workspace, backend, engine.new(config), config_version, events)
    try:
        yield session
    except BaseException:
        backend.discard()
        raise


def engine_session_record(
    *,
    session: EngineSession,
    conversation_id: str | None,
    message_format: str = "openai_chat",
    transcript: list[Any] | None = None,
    tools: list[Any] | None = None,
    system: Any = None,
) -> list[EventRecord]:
    """Store the session's offloads, then write the conversation, its files and its events
    in one transaction."""
    counter = get_token_counter(session.middleware.config.token_counter)
    by_path = {e.offload_path: e for e in session.events if e.offload_path and e.kind == "tool"}
    try:
        session.backend.store(phases={path: e.phase for path, e in by_path.items()})
        with transaction.atomic():
            conversation = None
            if conversation_id:
                conversation = conversation_upsert(
                    workspace=session.workspace,
                    client_id=conversation_id,
                    message_format=message_format,
                    transcript=transcript,
                    tools=tools,
                    system=system,
                )
            staged_writes = list(session.backend.staged.values())
            # One query for the paths already recorded (in any conversation), one insert
            # for those new to this conversation, however many results the pass offloaded
            # (and none when it offloaded none).
            recorded = (
                OffloadedFile.objects.select_for_update()
                .filter(workspace=session.workspace, path__in=[w.path for w in staged_writes])
                .values_list("path", "sha256", "conversation_id")
                if staged_writes
                else []
            )
            digests: dict[str, str] = {}
            own: set[str] = set()
            owner = conversation.pk if conversation is not None else None
            for path, digest, conversation_pk in recorded:
                digests[path] = digest
                if conversation_pk == owner:
                    own.add(path)
            new_files = []
            for staged in staged_writes:
                if staged.path in digests and digests[staged.path] != staged.digest:
                    # Another request took this path for other content after the engine
                    # checked it was free. Recorded offloads are never overwritten.
                    raise ServiceError(
                        f"offload path {staged.path} was taken by another request; "
                        "send this request again"
                    )
                if staged.path in own:
                    # The engine reuses a path for identical content; the conversation's
                    # first record (its call) stands.
                    continue
                # New to this conversation, though perhaps not to the workspace: another
                # conversation's row of the same path names the same stored content, and
                # each keeps its own, so deleting one leaves the other's.
                event = by_path.get(staged.path)
                new_files.append(
                    OffloadedFile(
                        workspace=session.workspace,
                        path=staged.path,
                        conversation=conversation,
                        storage_name=staged.storage_name,
                        size_chars=len(staged.content),
                        size_bytes=staged.size_bytes,
                        tokens=count_text(counter, staged.content),
                        sha256=staged.digest,
                        phase=event.phase if event else "",
                        tool_name=event.tool_name if event else "",
                        call_id=event.call_id if event else "",
                    )
                )
            held = offload_bytes_add(
                workspace=session.workspace,
                new_sizes={f.storage_name: f.size_bytes for f in new_files},
            )
            named = held | session.backend.journaled
            if any(f.storage_name not in named for f in new_files):
                # Content this request found recorded, and did not store again, lost its
                # last row (a purge, a deleted conversation) since it looked.
                raise ServiceError(
                    "offloaded content this request names was removed meanwhile; "
                    "send this request again"
                )
            OffloadedFile.objects.bulk_create(new_files)
            if staged_writes:
                StagedOffload.objects.filter(request=session.backend.request).delete()
            rows = EventRecord.objects.bulk_create(
                [
                    EventRecord(
                        workspace=session.workspace,
                        conversation=conversation,
                        config_version=session.config_version,
                        **event.to_dict(),
                    )
                    for event in session.events
                ]
            )
    except BaseException:
        session.backend.discard()
        raise
    return rows
