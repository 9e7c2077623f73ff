"""The engine inside a recorded session.

Offloads are held by the storage backend while the engine runs; when it succeeded, they
are journaled and stored (``records.storage``), and then the file rows, the event rows
and the conversation are written, with the journal rows deleted, in one transaction. On
any failure the stored content is removed and nothing is recorded; a request whose new
files would take the workspace over its offload quota fails so too, before storing
anything (``workspaces.quotas``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    Conversation,
    EventRecord,
    OffloadedFile,
    StagedOffload,
    Workspace,
)
from reduction_app.queries import one_row_each
from reduction_app.records.reclaim import reclaim_later
from reduction_app.records.storage import DjangoStorageBackend
from reduction_app.reductions.contexts import Relay
from reduction_app.workspaces.quotas import lock_workspace, offload_bytes_add


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
    relay: Relay | None = None,
    middleware: engine.ReductionMiddleware | None = None,
) -> Iterator[EngineSession]:
    """Build a middleware on the workspace's storage; record its work if the block succeeds.

    ``conversation_id`` names the conversation the work is for, when there is one: its
    recorded files are looked up once rather than path by path.
    With ``relay``, the middleware is one that outlives the request (``contexts``): the
    one given, built on ``relay`` when none is, and ``relay`` is pointed at this request's
    storage and events; the conversation's files are then looked up path by path, as the
    engine asks for them (only what the call brings is read).
    Raises :class:`engine.ConfigError` for a bad config before anything runs.
    """
    backend = DjangoStorageBackend(
        workspace,
        conversation_id=conversation_id if relay is None else None,
        on_dead_rows=reclaim_later,
    )
    data = config_version.data if config_version is not None else (config_data or {})
    events: list[engine.ReductionEvent] = []
    if relay is not None:
        relay.bind(backend, events)
        if middleware is None:
            config = engine.config_from_dict(data, backend=relay, on_event=relay.on_event)
            middleware = engine.new(config)
    else:
        config = engine.config_from_dict(data, backend=backend, on_event=events.append)
        middleware = engine.new(config)
    session = EngineSession(workspace, backend, middleware, config_version, events)
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
    write_conversation: Callable[[], Conversation] | None = None,
) -> list[EventRecord]:
    """Store the session's offloads, then write the conversation, its files and its events
    in one transaction; return the event rows written.

    The conversation is written by ``write_conversation`` when given (in the same
    transaction, first), else upserted with ``transcript``, ``tools`` and ``system``.

    Of a conversation's tool events that offloaded, those it has recorded already (the
    same reduction of a result it sent before, see :func:`reduction_keys`) are not written
    again; summaries are written every time. Two requests recording the same new
    reduction at once clash on ``event_reduction_unique``: the second fails with
    ``IntegrityError`` (answered 409) and records nothing.
    """
    counter = get_token_counter(session.middleware.config.token_counter)
    by_path = {e.offload_path: e for e in session.events if e.offload_path and e.kind == "tool"}
    try:
        session.backend.store(phases={path: e.phase for path, e in by_path.items()})
        with transaction.atomic():
            conversation = None
            if write_conversation is not None:
                conversation = write_conversation()
            elif conversation_id:
                conversation = conversation_upsert(
                    workspace=session.workspace,
                    client_id=conversation_id,
                    message_format=message_format,
                    transcript=transcript,
                    tools=tools,
                    system=system,
                )
            staged_writes = list(session.backend.staged.values())
            files = OffloadedFile.objects.filter(workspace=session.workspace)
            # The paths this conversation recorded already, with their content: a client
            # that sends its history again has all of its earlier results' here.
            own: dict[str, str] = dict(
                files.filter(
                    conversation=conversation, path__in=[w.path for w in staged_writes]
                ).values_list("path", "sha256")
                if staged_writes
                else ()
            )
            digests = dict(own)
            others = [w.path for w in staged_writes if w.path not in own]
            if others:
                # The workspace's lock first (as offload_bytes_add takes it, after the
                # conversation's), so no other request records one of these paths between
                # the check and the insert. Then one row of each path other conversations
                # recorded (all name its one content): not one per conversation.
                lock_workspace(session.workspace)
                for batch in one_row_each(files, "path", others):
                    digests.update(batch.values_list("path", "sha256"))
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
            keys = reduction_keys(session.events, session.backend) if conversation else None
            recorded_keys = _recorded_keys(conversation, keys)
            rows = EventRecord.objects.bulk_create(
                [
                    EventRecord(
                        workspace=session.workspace,
                        conversation=conversation,
                        config_version=session.config_version,
                        reduction_key=key,
                        **event.to_dict(),
                    )
                    for event, key in zip(
                        session.events, keys or [None] * len(session.events), strict=True
                    )
                    if key is None or key not in recorded_keys
                ]
            )
    except BaseException:
        session.backend.discard()
        raise
    return rows


def reduction_keys(
    events: Sequence[engine.ReductionEvent], backend: DjangoStorageBackend
) -> list[str | None]:
    """The ``EventRecord.reduction_key`` of each of ``events``: ``None`` for a summary and
    for a reduction that offloaded nothing (recorded every time), else a digest of the
    phase, the call id, the offload path, the offloaded content's SHA-256 (when this
    request wrote it) and how many events of the request had all those alike before it.

    A conversation sent again, originals and all, has the engine reduce its earlier
    results again, to the same paths with the same content (decision 7): their keys are
    those recorded the first time. The rank keeps apart two results of one call id with
    one content in one request, as the first request had them.
    """
    seen: dict[tuple[str, ...], int] = {}
    keys: list[str | None] = []
    for event in events:
        if event.kind != "tool" or not event.offload_path:
            keys.append(None)
            continue
        staged = backend.staged.get(event.offload_path)
        fact = (event.phase, event.call_id, event.offload_path, staged.digest if staged else "")
        rank = seen.get(fact, 0)
        seen[fact] = rank + 1
        text = "\x00".join((*fact, str(rank)))
        keys.append(hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())
    return keys


def _recorded_keys(
    conversation: Conversation | None, keys: Sequence[str | None] | None
) -> set[str]:
    """Those of ``keys`` the conversation has recorded already: one indexed query."""
    wanted = sorted({key for key in keys or () if key is not None})
    if conversation is None or not wanted:
        return set()
    rows = EventRecord.objects.filter(conversation=conversation, reduction_key__in=wanted)
    return {key for key in rows.values_list("reduction_key", flat=True) if key is not None}
