"""Reads of events and offloaded files, scoped to one workspace: the API's lists and
the dashboard's aggregates. Each answers in a fixed number of queries however much
data there is."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max, Min, Q, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDay, TruncHour

from reduction_app.models import Conversation, EventRecord, OffloadedFile, Workspace


# The records' pages name the conversation their lists are filtered to and count the
# workspace's conversations; these two reads stay here so that records, below
# conversations, never imports them.
def conversation_named(*, workspace: Workspace, client_id: str) -> Conversation | None:
    """The workspace's conversation of that client id, if there is one."""
    return Conversation.objects.filter(workspace=workspace, client_id=client_id).first()


def conversation_count(*, workspace: Workspace) -> int:
    """How many conversations the workspace holds."""
    return Conversation.objects.filter(workspace=workspace).count()


def file_get(
    *, workspace: Workspace, path: str, conversation: str | None = None
) -> OffloadedFile | None:
    """The file at ``path``: ``conversation``'s (by its client id) when given, else the
    first recorded. Every conversation naming a path has a row of its own, all naming the
    same content."""
    rows = OffloadedFile.objects.filter(workspace=workspace, path=path)
    if conversation:
        rows = rows.filter(conversation__client_id=conversation)
    return rows.select_related("conversation").order_by("id").first()


def file_list(
    *,
    workspace: Workspace,
    conversation: str | None = None,
    path_prefix: str | None = None,
    phase: str | None = None,
    tool: str | None = None,
) -> QuerySet[OffloadedFile]:
    qs = OffloadedFile.objects.filter(workspace=workspace).select_related("conversation")
    if conversation:
        qs = qs.filter(conversation__client_id=conversation)
    if path_prefix:
        qs = qs.filter(path__startswith=path_prefix)
    if phase:
        qs = qs.filter(phase=phase)
    if tool:
        qs = qs.filter(tool_name=tool)
    return qs.order_by("-id")


def event_list(
    *,
    workspace: Workspace,
    conversation: str | None = None,
    phase: str | None = None,
    tool: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[EventRecord]:
    qs = EventRecord.objects.filter(workspace=workspace).select_related(
        "conversation", "config_version__profile"
    )
    if conversation:
        qs = qs.filter(conversation__client_id=conversation)
    if phase:
        qs = qs.filter(phase=phase)
    if tool:
        qs = qs.filter(tool_name=tool)
    if since:
        qs = qs.filter(created_at__gte=since)
    if until:
        qs = qs.filter(created_at__lt=until)
    return qs.order_by("-id")


SAVING_KINDS = ("tool",)
"""Tokens saved are summed over ``tool`` events (one reduced output each): a clear pass's
``summary`` repeats the savings of the calls it cleared, so adding it would count twice."""


def saved_totals(*, workspace: Workspace, now: datetime) -> dict[str, Any]:
    """Tokens saved all time, in the last 24 hours and 7 days; event count; time span."""
    tool = Q(kind__in=SAVING_KINDS)
    return EventRecord.objects.filter(workspace=workspace).aggregate(
        events=Count("id"),
        saved_all=Coalesce(Sum("tokens_saved", filter=tool), 0),
        saved_day=Coalesce(
            Sum("tokens_saved", filter=tool & Q(created_at__gte=now - timedelta(days=1))), 0
        ),
        saved_week=Coalesce(
            Sum("tokens_saved", filter=tool & Q(created_at__gte=now - timedelta(days=7))), 0
        ),
        offloaded=Count("id", filter=~Q(offload_path="")),
        first=Min("created_at"),
        last=Max("created_at"),
    )


def events_by_phase(*, workspace: Workspace) -> list[dict[str, Any]]:
    """Per phase and kind: how many events, how many changed something, tokens saved."""
    return list(
        EventRecord.objects.filter(workspace=workspace)
        .values("phase", "kind")
        .annotate(
            events=Count("id"),
            applied=Count("id", filter=Q(applied=True)),
            saved=Coalesce(Sum("tokens_saved"), 0),
        )
        .order_by("phase", "kind")
    )


def top_tools(*, workspace: Workspace, limit: int = 10) -> list[dict[str, Any]]:
    """The tools whose outputs saved the most tokens, with truncation and clear counts."""
    return list(
        EventRecord.objects.filter(workspace=workspace, kind__in=SAVING_KINDS)
        .values("tool_name")
        .annotate(
            saved=Coalesce(Sum("tokens_saved"), 0),
            truncations=Count("id", filter=Q(phase="truncation")),
            clears=Count("id", filter=Q(phase="clear")),
        )
        .order_by("-saved", "tool_name")[:limit]
    )


def saved_over_time(*, workspace: Workspace, bucket: str) -> list[dict[str, Any]]:
    """Tokens saved per ``bucket`` (``day`` or ``hour``, UTC), oldest first."""
    trunc = TruncHour if bucket == "hour" else TruncDay
    return list(
        EventRecord.objects.filter(workspace=workspace, kind__in=SAVING_KINDS)
        .annotate(at=trunc("created_at"))
        .values("at")
        .annotate(saved=Coalesce(Sum("tokens_saved"), 0), events=Count("id"))
        .order_by("at")
    )


def event_tool_names(*, workspace: Workspace) -> list[str]:
    """The distinct tool names of the workspace's events, for a filter's choices."""
    return list(
        EventRecord.objects.filter(workspace=workspace)
        .exclude(tool_name="")
        .order_by("tool_name")
        .values_list("tool_name", flat=True)
        .distinct()
    )


def file_tool_names(*, workspace: Workspace) -> list[str]:
    return list(
        OffloadedFile.objects.filter(workspace=workspace)
        .exclude(tool_name="")
        .order_by("tool_name")
        .values_list("tool_name", flat=True)
        .distinct()
    )


def file_event(*, file: OffloadedFile) -> EventRecord | None:
    """The event that wrote ``file``: the first one of its conversation naming its path."""
    rows = EventRecord.objects.filter(workspace_id=file.workspace_id, offload_path=file.path)
    if file.conversation_id is None:
        rows = rows.filter(conversation__isnull=True)
    else:
        rows = rows.filter(conversation_id=file.conversation_id)
    return rows.order_by("id").first()


def file_totals(*, workspace: Workspace) -> dict[str, Any]:
    """How many files the workspace offloaded, and their characters."""
    return OffloadedFile.objects.filter(workspace=workspace).aggregate(
        count=Count("id"), chars=Coalesce(Sum("size_chars"), 0)
    )


def file_list_sized(
    *,
    workspace: Workspace,
    min_chars: int | None = None,
    max_chars: int | None = None,
    order: str = "",
    **filters: Any,
) -> QuerySet[OffloadedFile]:
    """:func:`file_list` with a size range in characters (both ends inclusive), newest
    first or (``order="largest"``) largest first."""
    qs = file_list(workspace=workspace, **filters)
    if min_chars is not None:
        qs = qs.filter(size_chars__gte=min_chars)
    if max_chars is not None:
        qs = qs.filter(size_chars__lte=max_chars)
    if order == "largest":
        qs = qs.order_by("-size_chars", "-id")
    return qs
