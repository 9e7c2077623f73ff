"""The offload quota: how many bytes of offloaded content a workspace may hold.

A workspace holds each distinct content once (its storage name is the SHA-256 of the
content, ``records.storage.storage_name_for``), so its usage is the size of every distinct
storage name among its file rows: two paths with the same content count once. That sum
is kept in ``Workspace.offload_bytes`` by the services that add and remove file rows
(:func:`offload_bytes_add`, :func:`offload_bytes_release`), so a request pays for the
contents it adds (one indexed look-up of their names, one update), not for all the
workspace holds; :func:`offload_usage` counts it again from the rows.

The quota is ``Workspace.offload_quota_bytes`` when set, else
``REDUCTION_QUOTA_OFFLOAD_BYTES``; 0 is no limit. ``reductions.services`` checks it in the
transaction that records a request's files, so a request over it records nothing and its
staged content is removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django.conf import settings
from django.db import connection
from django.db.models import F, Max, Sum

from reduction_app.errors import QuotaExceeded
from reduction_app.models import OffloadedFile, Workspace

__all__ = ["offload_bytes_add", "offload_bytes_release", "offload_quota", "offload_usage"]


def offload_quota(workspace: Workspace) -> int:
    """The workspace's quota in bytes; 0 for none."""
    if workspace.offload_quota_bytes is not None:
        return workspace.offload_quota_bytes
    quota: int = settings.REDUCTION_QUOTA_OFFLOAD_BYTES
    return quota


def offload_usage(*, workspace: Workspace) -> int:
    """Bytes of distinct offloaded content the workspace holds, counted from its rows (a
    pass over them all: what ``Workspace.offload_bytes`` keeps without one)."""
    per_name = (
        OffloadedFile.objects.filter(workspace=workspace)
        .values("storage_name")
        .annotate(size=Max("size_bytes"))
    )
    total = per_name.aggregate(total=Sum("size"))["total"]
    return int(total or 0)


def _lock(workspace: Workspace) -> int:
    """Lock the workspace's row until the transaction ends and read its usage. On SQLite
    the transaction holds the one write lock from its start (``BEGIN IMMEDIATE``)."""
    rows = Workspace.objects.filter(pk=workspace.pk)
    if connection.features.has_select_for_update:
        rows = rows.select_for_update()
    return int(rows.values_list("offload_bytes", flat=True).get())


def offload_bytes_add(*, workspace: Workspace, new_sizes: Mapping[str, int]) -> None:
    """Count the contents ``new_sizes`` (storage name -> bytes) the workspace is about to
    hold, those it does not hold already; raise :class:`QuotaExceeded` if they would take
    it over its quota. Run it in the transaction that records their rows, before them."""
    if not new_sizes:
        return
    usage = _lock(workspace)
    held = set(
        OffloadedFile.objects.filter(
            workspace=workspace, storage_name__in=list(new_sizes)
        ).values_list("storage_name", flat=True)
    )
    added = sum(size for name, size in new_sizes.items() if name not in held)
    if not added:
        return
    quota = offload_quota(workspace)
    if quota and usage + added > quota:
        raise QuotaExceeded(
            f"offload quota exceeded: the workspace holds {usage} bytes of offloaded content "
            f"and this request would add {added}, over its quota of {quota} bytes; "
            "nothing was recorded"
        )
    Workspace.objects.filter(pk=workspace.pk).update(offload_bytes=F("offload_bytes") + added)


def offload_bytes_release(*, workspace: Workspace, names: Iterable[tuple[str, int]]) -> None:
    """Uncount the contents ``names`` (storage name, bytes) whose rows were just deleted,
    those no row of the workspace holds any more. Run it in the deleting transaction."""
    sizes = dict(names)
    if not sizes:
        return
    _lock(workspace)
    still_held = set(
        OffloadedFile.objects.filter(workspace=workspace, storage_name__in=list(sizes)).values_list(
            "storage_name", flat=True
        )
    )
    freed = sum(size for name, size in sizes.items() if name not in still_held)
    if freed:
        Workspace.objects.filter(pk=workspace.pk).update(offload_bytes=F("offload_bytes") - freed)
