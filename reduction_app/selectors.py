"""Reads: every query the API and the pages make, scoped to one workspace.

A record of another workspace is simply not found, so callers answer 404 and
never reveal that it exists.
"""

from __future__ import annotations

from datetime import datetime

from django.db.models import Count, QuerySet
from django.utils import timezone

from reduction_app.models import (
    ApiKey,
    ConfigProfile,
    ConfigVersion,
    Conversation,
    OffloadedFile,
    ReductionEvent,
    Simulation,
    Workspace,
)
from reduction_app.services import api_key_digest

LAST_USED_RESOLUTION_SECONDS = 60


def api_key_authenticate(*, raw_key: str) -> ApiKey | None:
    """The live key for ``raw_key``, with its last-used time refreshed (at most once a minute)."""
    key = (
        ApiKey.objects.select_related("workspace")
        .filter(digest=api_key_digest(raw_key), revoked_at__isnull=True)
        .first()
    )
    if key is None:
        return None
    now = timezone.now()
    if (
        key.last_used_at is None
        or (now - key.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS
    ):
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


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


def config_get(*, workspace: Workspace, profile_id: int) -> ConfigProfile | None:
    return ConfigProfile.objects.filter(
        workspace=workspace, pk=profile_id, deleted_at__isnull=True
    ).first()


def config_latest(*, profile: ConfigProfile) -> ConfigVersion:
    version = profile.versions.order_by("-number").first()
    assert version is not None, "a profile always has a version"
    return version


def config_list(*, workspace: Workspace) -> QuerySet[ConfigProfile]:
    return ConfigProfile.objects.filter(workspace=workspace, deleted_at__isnull=True).order_by(
        "-id"
    )


def file_get(*, workspace: Workspace, path: str) -> OffloadedFile | None:
    return (
        OffloadedFile.objects.filter(workspace=workspace, path=path)
        .select_related("conversation")
        .first()
    )


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
) -> QuerySet[ReductionEvent]:
    qs = ReductionEvent.objects.filter(workspace=workspace).select_related(
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


def simulation_get(*, workspace: Workspace, simulation_id: int) -> Simulation | None:
    return (
        Simulation.objects.filter(workspace=workspace, pk=simulation_id)
        .select_related("conversation")
        .first()
    )


def simulation_list(*, workspace: Workspace) -> QuerySet[Simulation]:
    return (
        Simulation.objects.filter(workspace=workspace)
        .select_related("conversation")
        .defer("results")
        .order_by("-id")
    )
