"""Writes of conversations: upsert a transcript, delete one with its events and files."""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from reduction_app.errors import ServiceError
from reduction_app.models import Conversation, OffloadedFile, Workspace
from reduction_app.records.storage import DjangoStorageBackend

logger = logging.getLogger(__name__)


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
    one replaces it (a client sends its whole context each time).

    The stored transcript, tools and system are not loaded to be replaced: reading a long
    transcript back costs as much as writing it. (An update that keeps them leaves them
    deferred; reading one then loads it.)"""
    for _ in range(2):
        try:
            with transaction.atomic():
                rows = Conversation.objects.select_for_update().defer(
                    "transcript", "tools", "system"
                )
                conversation, created = rows.get_or_create(
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
