"""Writes: every change to the records goes through a function here.

Functions are keyword-only and atomic. The engine runs inside :func:`engine_session`:
offloads are staged in storage while it runs, and only when it succeeded are the
file rows, the event rows and the conversation written, in one transaction. On
any failure the staged content is removed and nothing is recorded.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.text import slugify

from reduction_app import engine
from reduction_app.engine import get_token_counter
from reduction_app.engine.inspect import count_text
from reduction_app.models import (
    ApiKey,
    ConfigProfile,
    ConfigVersion,
    Conversation,
    EventRecord,
    OffloadedFile,
    Workspace,
)
from reduction_app.storage import DjangoStorageBackend

__all__ = [
    "EngineSession",
    "api_key_create",
    "api_key_digest",
    "api_key_revoke",
    "config_create",
    "config_delete",
    "config_update",
    "conversation_delete",
    "conversation_upsert",
    "engine_session",
    "engine_session_record",
    "file_mark_read",
    "workspace_get_or_create",
]

logger = logging.getLogger(__name__)
KEY_PREFIX = "rl_"


class ServiceError(Exception):
    """A request the records cannot satisfy (a duplicate name, say); shown to the client."""


def workspace_get_or_create(*, name: str, user: User | None = None) -> Workspace:
    slug = slugify(name) or "workspace"
    workspace, _ = Workspace.objects.get_or_create(slug=slug, defaults={"name": name})
    if user is not None:
        workspace.members.add(user)
    return workspace


def api_key_digest(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def api_key_create(*, workspace: Workspace, name: str) -> tuple[ApiKey, str]:
    """A new key; the raw key is returned once and never stored."""
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        workspace=workspace, name=name, prefix=raw[:10], digest=api_key_digest(raw)
    )
    return key, raw


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


# Configs ---------------------------------------------------------------------------------


def _validated(data: Mapping[str, Any]) -> dict[str, Any]:
    """The config's JSON fields, validated by the engine and written out in full."""
    config = engine.config_from_dict(data, backend=engine.InMemoryBackend())
    return engine.config_to_dict(config)


@transaction.atomic
def config_create(*, workspace: Workspace, name: str, data: Mapping[str, Any]) -> ConfigVersion:
    validated = _validated(data)
    if ConfigProfile.objects.filter(
        workspace=workspace, name=name, deleted_at__isnull=True
    ).exists():
        raise ServiceError(f"a config named {name!r} already exists")
    profile = ConfigProfile.objects.create(workspace=workspace, name=name)
    return ConfigVersion.objects.create(profile=profile, number=1, data=validated)


@transaction.atomic
def config_update(
    *, profile: ConfigProfile, data: Mapping[str, Any], name: str | None = None
) -> ConfigVersion:
    """A new version of ``profile`` (the earlier ones stay, and events keep pointing at them)."""
    validated = _validated(data)
    profile = ConfigProfile.objects.select_for_update().get(pk=profile.pk)
    if name and name != profile.name:
        taken = ConfigProfile.objects.filter(
            workspace=profile.workspace, name=name, deleted_at__isnull=True
        ).exclude(pk=profile.pk)
        if taken.exists():
            raise ServiceError(f"a config named {name!r} already exists")
        profile.name = name
        profile.save(update_fields=["name"])
    last = profile.versions.order_by("-number").first()
    number = (last.number if last else 0) + 1
    return ConfigVersion.objects.create(profile=profile, number=number, data=validated)


def config_delete(*, profile: ConfigProfile) -> None:
    """Hide the profile; its versions stay so recorded events keep their config."""
    profile.deleted_at = timezone.now()
    profile.save(update_fields=["deleted_at"])


# Conversations ---------------------------------------------------------------------------


def conversation_upsert(
    *,
    workspace: Workspace,
    client_id: str,
    message_format: str,
    transcript: list[Any] | None = None,
    tools: list[Any] | None = None,
    title: str | None = None,
    system: Any = None,
) -> Conversation:
    """Create the conversation or update it; a transcript at least as long as the stored
    one replaces it (a client sends its whole context each time)."""
    for _ in range(2):
        try:
            with transaction.atomic():
                conversation, created = Conversation.objects.select_for_update().get_or_create(
                    workspace=workspace,
                    client_id=client_id,
                    defaults={
                        "message_format": message_format,
                        "transcript": transcript or [],
                        "message_count": len(transcript or []),
                        "tools": tools or [],
                        "title": title or "",
                        "system": system,
                    },
                )
                if not created:
                    changed = ["updated_at"]
                    if transcript is not None and len(transcript) >= conversation.message_count:
                        conversation.transcript = transcript
                        conversation.message_count = len(transcript)
                        conversation.message_format = message_format
                        conversation.system = system
                        changed += ["transcript", "message_count", "message_format", "system"]
                    if tools:
                        conversation.tools = tools
                        changed.append("tools")
                    if title:
                        conversation.title = title
                        changed.append("title")
                    conversation.save(update_fields=changed)
                return conversation
        except IntegrityError:
            continue
    raise ServiceError(f"conversation {client_id!r} could not be saved")


@transaction.atomic
def conversation_delete(*, conversation: Conversation) -> None:
    """Delete the conversation, its events and its files (content included)."""
    files = list(conversation.files.values_list("storage_name", flat=True))
    conversation.delete()
    storage = DjangoStorageBackend(conversation.workspace).storage
    still_used = set(
        OffloadedFile.objects.filter(storage_name__in=files).values_list("storage_name", flat=True)
    )

    def remove() -> None:
        # The rows are gone; content the storage fails to delete is only unreferenced
        # bytes, and must not turn a done delete into an error for the client.
        for name in set(files) - still_used:
            try:
                storage.delete(name)
            except OSError:
                logger.warning("could not delete offloaded content %s", name, exc_info=True)

    transaction.on_commit(remove, robust=True)


def file_mark_read(*, file: OffloadedFile) -> None:
    OffloadedFile.objects.filter(pk=file.pk).update(
        read_count=F("read_count") + 1, last_read_at=timezone.now()
    )


# Engine sessions -------------------------------------------------------------------------


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
) -> Iterator[EngineSession]:
    """Build a middleware on the workspace's storage; record its work if the block succeeds.

    Raises :class:`engine.ConfigError` for a bad config before anything runs.
    """
    backend = DjangoStorageBackend(workspace)
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
    """Write the conversation, the session's files and its events in one transaction."""
    counter = get_token_counter(session.middleware.config.token_counter)
    by_path = {e.offload_path: e for e in session.events if e.offload_path and e.kind == "tool"}
    try:
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
            for staged in session.backend.staged.values():
                event = by_path.get(staged.path)
                existing = (
                    OffloadedFile.objects.select_for_update()
                    .filter(workspace=session.workspace, path=staged.path)
                    .first()
                )
                if existing is not None:
                    if existing.sha256 == staged.digest:
                        # The engine reuses a path for identical content; the first record
                        # (its conversation, its call) stands.
                        continue
                    # Another request took this path for other content after the engine
                    # checked it was free. Recorded offloads are never overwritten.
                    raise ServiceError(
                        f"offload path {staged.path} was taken by another request; "
                        "send this request again"
                    )
                OffloadedFile.objects.create(
                    workspace=session.workspace,
                    path=staged.path,
                    conversation=conversation,
                    storage_name=staged.storage_name,
                    size_chars=len(staged.content),
                    tokens=count_text(counter, staged.content),
                    sha256=staged.digest,
                    phase=event.phase if event else "",
                    tool_name=event.tool_name if event else "",
                    call_id=event.call_id if event else "",
                )
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
