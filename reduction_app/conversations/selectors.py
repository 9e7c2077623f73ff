"""Reads of recorded conversations, scoped to one workspace (another workspace's
conversation is simply not found). Lists never load transcripts."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from reduction_app.models import Conversation, EventRecord, OffloadedFile, Workspace
from reduction_app.paging import digits
from reduction_app.records.selectors import SAVING_KINDS


def conversation_get(*, workspace: Workspace, client_id: str) -> Conversation | None:
    return Conversation.objects.filter(workspace=workspace, client_id=client_id).first()


def conversation_list(*, workspace: Workspace, search: str = "") -> QuerySet[Conversation]:
    qs = Conversation.objects.filter(workspace=workspace)
    if search:
        qs = qs.filter(client_id__icontains=search) | qs.filter(title__icontains=search)
    return qs.order_by("-id")


def conversation_counts(*, conversation: Conversation) -> tuple[int, int]:
    counts = Conversation.objects.filter(pk=conversation.pk).aggregate(
        events=Count("events", distinct=True), files=Count("files", distinct=True)
    )
    return counts["events"], counts["files"]


def conversation_list_counted(
    *, workspace: Workspace, search: str = "", message_format: str = ""
) -> QuerySet[Conversation]:
    """Conversations with per-row counts (events, tokens saved, files) as subqueries, so
    a page of them is one query; the transcript is left out."""
    qs = conversation_list(workspace=workspace, search=search)
    if message_format:
        qs = qs.filter(message_format=message_format)

    def scalar(model: Any, value: Any) -> Subquery:
        rows = model.objects.filter(conversation=OuterRef("pk")).order_by().values("conversation")
        return Subquery(rows.annotate(v=value).values("v")[:1])

    return qs.defer("transcript", "system", "tools").annotate(
        event_count=Coalesce(scalar(EventRecord, Count("id")), 0),
        tokens_saved=Coalesce(
            Subquery(
                EventRecord.objects.filter(conversation=OuterRef("pk"), kind__in=SAVING_KINDS)
                .order_by()
                .values("conversation")
                .annotate(v=Sum("tokens_saved"))
                .values("v")[:1]
            ),
            0,
        ),
        file_count=Coalesce(scalar(OffloadedFile, Count("id")), 0),
    )


def conversation_clear_series(*, conversation: Conversation) -> list[dict[str, Any]]:
    """The conversation's truncations and clear summaries in the order they happened (by
    id), the fields a context-window chart needs and nothing else."""
    rows = (
        EventRecord.objects.filter(conversation=conversation)
        .filter(Q(kind="summary") | Q(phase="truncation"))
        .order_by("id")
        .values(
            "id",
            "phase",
            "kind",
            "tokens_before",
            "tokens_after",
            "threshold",
            "reason",
            "calls_cleared",
            "tool_name",
            "offload_path",
        )
    )
    return [dict(row) for row in rows]


def conversation_count(*, workspace: Workspace) -> int:
    return Conversation.objects.filter(workspace=workspace).count()


CONVERSATION_CHOICES_LIMIT = 200
"""The most recent conversations offered in a page's select (the chosen one is added)."""


def conversation_choices(
    *, workspace: Workspace, chosen: Conversation | None = None
) -> list[Conversation]:
    """The latest conversations for a select, without their transcripts."""
    rows = list(
        Conversation.objects.filter(workspace=workspace)
        .only("id", "client_id", "title", "message_count")
        .order_by("-updated_at", "-id")[:CONVERSATION_CHOICES_LIMIT]
    )
    if chosen is not None and all(c.pk != chosen.pk for c in rows):
        rows.append(chosen)
    return rows


def conversation_for(*, workspace: Workspace, value: str | None) -> Conversation | None:
    """The workspace's conversation whose id is ``value`` (a number), or ``None``."""
    if not digits(value):
        return None
    return Conversation.objects.filter(workspace=workspace, pk=int(value)).first()
