"""Records of every kind, made through the services that write them and then aged by
moving their times back (as a database holds them after that many days)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import (
    Conversation,
    EventRecord,
    OffloadedFile,
    Simulation,
    SimulationPart,
    TranscriptMessage,
    Workspace,
)
from reduction_app.reductions.services import engine_session_record
from tests.app.support import session_for, truncate_in

RECORDED = (Conversation, TranscriptMessage, EventRecord, OffloadedFile, Simulation, SimulationPart)
"""Every model of what a workspace records (its config profiles and keys are settings)."""


def days_ago(days: float) -> datetime:
    return timezone.now() - timedelta(days=days)


def conversation(
    workspace: Workspace, client_id: str, *outputs: str, days: float = 0, messages: int = 2
) -> Conversation:
    """A conversation of ``messages`` messages whose tool ``outputs`` were truncated (each
    offloaded, and an event), last written ``days`` ago."""
    transcript = [{"role": "user", "content": f"{client_id} {n}"} for n in range(messages)]
    conversation_upsert(
        workspace=workspace,
        client_id=client_id,
        message_format="openai_chat",
        transcript=transcript,
    )
    record(workspace, client_id, *outputs)
    when = days_ago(days)
    row = Conversation.objects.get(workspace=workspace, client_id=client_id)
    Conversation.objects.filter(pk=row.pk).update(updated_at=when, created_at=when)
    EventRecord.objects.filter(conversation=row).update(created_at=when)
    OffloadedFile.objects.filter(conversation=row).update(created_at=when)
    return Conversation.objects.get(pk=row.pk)


def record(
    workspace: Workspace,
    client_id: str | None,
    *outputs: str,
    days: float = 0,
    calls: str | None = None,
) -> None:
    """Truncate each of ``outputs`` (over 4 characters) and record the session, for the
    conversation ``client_id`` or none (then aged ``days``); the call ids (and so the
    offload paths) start with ``calls``, by default the conversation's id."""
    prefix = calls or client_id or "loose"
    with session_for(workspace, max_length_for_trunc=4) as session:
        for n, text in enumerate(outputs):
            truncate_in(session, text, call_id=f"{prefix}-{n}")
        engine_session_record(session=session, conversation_id=client_id)
    if client_id is None:
        calls = [f"{prefix}-{n}" for n in range(len(outputs))]
        for model in (OffloadedFile, EventRecord):
            loose = model.objects.filter(workspace=workspace, call_id__in=calls)
            loose.update(created_at=days_ago(days))


def simulation(
    conversation: Conversation, *, status: str = "done", days: float | None = 0, parts: int = 2
) -> Simulation:
    """A sweep of ``conversation`` with ``parts`` parts, finished ``days`` ago (``None``:
    not finished)."""
    finished = None if days is None else days_ago(days)
    row = Simulation.objects.create(
        workspace=conversation.workspace,
        conversation=conversation,
        kind="sweep",
        status=status,
        finished_at=finished,
    )
    part_status = status if status in ("queued", "running") else "done"
    SimulationPart.objects.bulk_create(
        SimulationPart(simulation=row, position=n, name=f"k={n}", status=part_status)
        for n in range(parts)
    )
    Simulation.objects.filter(pk=row.pk).update(created_at=finished or timezone.now())
    return row


def counts(workspace: Workspace) -> dict[str, int]:
    """The rows of each recorded model the workspace holds."""
    out = {}
    for model in RECORDED:
        if model is TranscriptMessage:
            rows: Any = model.objects.filter(conversation__workspace=workspace)
        elif model is SimulationPart:
            rows = model.objects.filter(simulation__workspace=workspace)
        else:
            rows = model.objects.filter(workspace=workspace)
        out[model.__name__] = rows.count()
    return out
