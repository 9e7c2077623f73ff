"""The offload quota: how many bytes of offloaded content a workspace may hold.

A workspace holds each distinct content once (its storage name is the SHA-256 of the
content, ``records.storage.storage_name_for``), so usage is the size of every distinct
storage name among its file rows: two paths with the same content count once. The quota
is ``Workspace.offload_quota_bytes`` when set, else ``REDUCTION_QUOTA_OFFLOAD_BYTES``;
0 is no limit. ``reductions.services`` checks it in the transaction that records a
request's files, so a request over it records nothing and its staged content is removed.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.db import connection
from django.db.models import Max, Sum

from reduction_app.errors import QuotaExceeded
from reduction_app.models import OffloadedFile, Workspace

__all__ = ["offload_quota", "offload_quota_check", "offload_usage", "workspace_lock"]


def offload_quota(workspace: Workspace) -> int:
    """The workspace's quota in bytes; 0 for none."""
    if workspace.offload_quota_bytes is not None:
        return workspace.offload_quota_bytes
    quota: int = settings.REDUCTION_QUOTA_OFFLOAD_BYTES
    return quota


def offload_usage(*, workspace: Workspace) -> int:
    """Bytes of distinct offloaded content the workspace holds (one query, on the
    ``file_quota`` index)."""
    per_name = (
        OffloadedFile.objects.filter(workspace=workspace)
        .values("storage_name")
        .annotate(size=Max("size_bytes"))
    )
    total = per_name.aggregate(total=Sum("size"))["total"]
    return int(total or 0)


def offload_quota_check(*, workspace: Workspace, new_sizes: Mapping[str, int]) -> None:
    """Raise :class:`QuotaExceeded` if storing ``new_sizes`` (storage name -> bytes) would
    take the workspace over its quota. Run it in the transaction that records the files,
    after locking the workspace's row (:func:`workspace_lock`), so that two requests of a
    workspace cannot both pass on the same usage."""
    quota = offload_quota(workspace)
    if not quota or not new_sizes:
        return
    held = set(
        OffloadedFile.objects.filter(
            workspace=workspace, storage_name__in=list(new_sizes)
        ).values_list("storage_name", flat=True)
    )
    added = sum(size for name, size in new_sizes.items() if name not in held)
    if not added:
        return
    usage = offload_usage(workspace=workspace)
    if usage + added > quota:
        raise QuotaExceeded(
            f"offload quota exceeded: the workspace holds {usage} bytes of offloaded content "
            f"and this request would add {added}, over its quota of {quota} bytes; "
            "nothing was recorded"
        )


def workspace_lock(*, workspace: Workspace) -> None:
    """Lock the workspace's row until the transaction ends (PostgreSQL; SQLite's
    ``BEGIN IMMEDIATE`` already holds the one write lock)."""
    if connection.features.has_select_for_update:
        list(Workspace.objects.select_for_update().filter(pk=workspace.pk).values_list("pk"))
