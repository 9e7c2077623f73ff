"""The offload quota: how many bytes of offloaded content a workspace may hold.

The usage counts each distinct content once and is kept in ``Workspace.offload_bytes``
by the services that add and remove files, so a request pays for what it adds, not for
what the workspace holds; staged content counts until recorded or reclaimed.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Exists, F, Max, OuterRef, Sum
from django.utils import timezone

from reduction_app.errors import QuotaExceeded
from reduction_app.models import OffloadedFile, StagedOffload, Workspace
from reduction_app.queries import one_row_each

__all__ = [
    "lock_workspace",
    "offload_bytes_add",
    "offload_bytes_release",
    "offload_bytes_stage",
    "offload_quota",
    "offload_usage",
    "staged_dead_before",
]

_BATCH = 500
"""Storage names in one ``IN (...)``."""


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


def lock_workspace(workspace: Workspace) -> int:
    """Lock the workspace's row until the transaction ends and read its usage. On SQLite
    the transaction holds the one write lock from its start (``BEGIN IMMEDIATE``)."""
    rows = Workspace.objects.filter(pk=workspace.pk)
    if connection.features.has_select_for_update:
        rows = rows.select_for_update()
    return int(rows.values_list("offload_bytes", flat=True).get())


def offload_bytes_add(*, workspace: Workspace, new_sizes: Mapping[str, int]) -> set[str]:
    """Count the contents ``new_sizes`` (storage name -> bytes) the workspace is about to
    hold, those it does not hold already; raise :class:`QuotaExceeded` if they would take
    it over its quota. Run it in the transaction that records their rows, before them.
    Returns the names a row of the workspace holds already, holding its lock."""
    if not new_sizes:
        return set()
    usage = lock_workspace(workspace)
    held = _held(workspace, new_sizes)
    added = sum(size for name, size in new_sizes.items() if name not in held)
    if not added:
        return held
    quota = offload_quota(workspace)
    if quota and usage + added > quota:
        raise QuotaExceeded(
            f"offload quota exceeded: the workspace holds {usage} bytes of offloaded content "
            f"and this request would add {added}, over its quota of {quota} bytes; "
            "nothing was recorded"
        )
    Workspace.objects.filter(pk=workspace.pk).update(offload_bytes=F("offload_bytes") + added)
    return held


def _held(workspace: Workspace, names: Collection[str]) -> set[str]:
    """Those of ``names`` a file row of the workspace names: one row each, however many
    conversations' rows name a content."""
    held: set[str] = set()
    files = OffloadedFile.objects.filter(workspace=workspace)
    for batch in one_row_each(files, "storage_name", names):
        held.update(batch.values_list("storage_name", flat=True))
    return held


def offload_bytes_release(*, workspace: Workspace, names: Iterable[tuple[str, int]]) -> None:
    """Uncount the contents ``names`` (storage name, bytes) whose rows were just deleted,
    those no row of the workspace holds any more. Run it in the deleting transaction."""
    sizes = dict(names)
    if not sizes:
        return
    lock_workspace(workspace)
    still_held = set(
        OffloadedFile.objects.filter(workspace=workspace, storage_name__in=list(sizes)).values_list(
            "storage_name", flat=True
        )
    )
    freed = sum(size for name, size in sizes.items() if name not in still_held)
    if freed:
        Workspace.objects.filter(pk=workspace.pk).update(offload_bytes=F("offload_bytes") - freed)


def staged_dead_before() -> datetime:
    """The time before which a journal row belongs to a request that died."""
    return timezone.now() - timedelta(seconds=settings.REDUCTION_STAGED_DEAD_SECONDS)


def offload_bytes_stage(
    *, workspace: Workspace, request: uuid.UUID, sizes: Mapping[str, int]
) -> bool:
    """Check that the contents ``sizes`` (storage name -> bytes) a request is about to
    journal and store fit the workspace's quota, with what it holds and what other
    requests staged (each distinct content once); raise :class:`QuotaExceeded` if not.
    Run it in the transaction that writes the request's journal rows, before them.

    Returns whether other requests' journal rows are old enough to be a dead request's:
    what the reclaim is for.
    """
    usage = lock_workspace(workspace)
    others = StagedOffload.objects.filter(workspace=workspace).exclude(request=request)
    dead = others.filter(staged_at__lt=staged_dead_before()).exists()
    quota = offload_quota(workspace)
    if not quota:
        return dead
    # Counted in the database, each distinct content once and none a row holds, so the
    # journal rows dead requests left cost this request no more than one sum.
    held_by_row = OffloadedFile.objects.filter(
        workspace=workspace, storage_name=OuterRef("storage_name")
    )
    pending = (
        others.exclude(Exists(held_by_row))
        .values("storage_name")
        .annotate(size=Max("size_bytes"))
        .order_by()
    )
    staged = int(pending.aggregate(total=Sum("size"))["total"] or 0)
    names = sorted(sizes)
    journaled: set[str] = set()
    held = _held(workspace, names)
    for start in range(0, len(names), _BATCH):
        batch = names[start : start + _BATCH]
        journaled.update(
            others.filter(storage_name__in=batch).values_list("storage_name", flat=True)
        )
    added = sum(size for name, size in sizes.items() if name not in held and name not in journaled)
    if added and usage + staged + added > quota:
        in_flight = (
            f", requests storing or that died (until reclaimed) hold {staged} more"
            if staged
            else ""
        )
        raise QuotaExceeded(
            f"offload quota exceeded: the workspace holds {usage} bytes of offloaded content"
            f"{in_flight} and this request would add {added}, over its quota of {quota} "
            "bytes; nothing was recorded"
        )
    return dead
