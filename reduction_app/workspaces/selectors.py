"""Reads of a workspace's API keys, as the dashboard's API keys page lists them."""

from __future__ import annotations

from django.db.models import QuerySet

from reduction_app.models import ApiKey, Workspace


def api_key_list(*, workspace: Workspace) -> QuerySet[ApiKey]:
    """The workspace's keys, live and revoked, newest first."""
    return ApiKey.objects.filter(workspace=workspace).order_by("-created_at", "-id")


def api_key_get(*, workspace: Workspace, key_id: int) -> ApiKey | None:
    """The workspace's key ``key_id``; ``None`` for another workspace's."""
    return ApiKey.objects.filter(workspace=workspace, pk=key_id).first()
