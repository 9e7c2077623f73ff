"""Removing what requests that died left in the offload storage.

A request journals every content it will name before storing it (``StagedOffload``,
``records.storage``) and deletes the journal rows when it records its files or removes
what it stored. Rows that stay belong to a request that died between the two (a worker
killed or timed out, a lost database connection): once they are older than
``REDUCTION_STAGED_DEAD_SECONDS`` (more than any request may run), the reclaim removes
the content they name that no file row and no live journal row names, and the rows.
Stored objects that no row of either kind names at all (left by a request that died
before the journal existed) go too.

Nothing a live request stored is touched: its journal rows are younger than the cutoff,
and a request's rows are committed before it stores anything. The storage is listed
before the rows are read, and the rows are read and the content removed holding the
workspace's lock (as requests do when they journal, and purges and deletes when they
remove content), so a request cannot come to name content between the check and the
removal. ``manage.py offload_reclaim`` runs it; so does the task worker, queued by a
request that finds dead journal rows in its workspace, and again while any are left.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.files.storage import Storage
from django.db import transaction
from django.db.models import Min
from django.utils import timezone

from reduction_app.models import OffloadedFile, StagedOffload, Workspace
from reduction_app.records.integrity import stored_names
from reduction_app.records.storage import offload_storage
from reduction_app.workspaces.quotas import lock_workspace, staged_dead_before

__all__ = [
    "ReclaimReport",
    "offload_reclaim",
    "reclaim_all",
    "reclaim_due",
    "reclaim_enqueue",
]

logger = logging.getLogger(__name__)

_BATCH = 500
"""Storage names looked up, and objects removed, per query and per lock."""


@dataclass
class ReclaimReport:
    """What :func:`offload_reclaim` found in one workspace (and removed, unless a dry run)."""

    workspace: Workspace
    dead_rows: int = 0
    """Journal rows of requests that died."""
    live_rows: int = 0
    """Journal rows of requests that may still be running: left alone."""
    removed: dict[str, int] = field(default_factory=dict)
    """Stored object -> bytes, for each object removed (or, in a dry run, to remove)."""
    failures: int = 0
    """Objects the storage failed to remove (each logged); the next run tries again."""

    @property
    def removed_bytes(self) -> int:
        return sum(self.removed.values())


def offload_reclaim(
    *,
    workspace: Workspace,
    dead_before: datetime | None = None,
    dry_run: bool = False,
    storage: Storage | None = None,
) -> ReclaimReport:
    """Remove the content and journal rows requests that died left in ``workspace``.

    ``dead_before`` is when a journal row's request counts as dead (default: now less
    ``REDUCTION_STAGED_DEAD_SECONDS``). A dry run reports what would go and changes nothing.
    """
    storage = storage or offload_storage()
    dead_before = dead_before or staged_dead_before()
    report = ReclaimReport(workspace)
    # Listed first: whatever is stored by now was journaled before it was stored.
    listed = set(stored_names(workspace, storage))
    with transaction.atomic():
        lock_workspace(workspace)
        journal = list(
            StagedOffload.objects.filter(workspace=workspace).values_list(
                "pk", "storage_name", "staged_at"
            )
        )
        dead = [pk for pk, _, staged_at in journal if staged_at < dead_before]
        live = {name for _, name, staged_at in journal if staged_at >= dead_before}
        report.dead_rows, report.live_rows = len(dead), len(journal) - len(dead)
        candidates = sorted((set(listed) | {name for _, name, _ in journal}) - live)
        for start in range(0, len(candidates), _BATCH):
            batch = candidates[start : start + _BATCH]
            named = set(
                OffloadedFile.objects.filter(
                    workspace=workspace, storage_name__in=batch
                ).values_list("storage_name", flat=True)
            )
            for name in batch:
                if name in named or name not in listed:
                    continue
                _remove(storage, name, report, dry_run=dry_run)
        if not dry_run:
            for start in range(0, len(dead), _BATCH):
                StagedOffload.objects.filter(pk__in=dead[start : start + _BATCH]).delete()
    return report


def _remove(storage: Storage, name: str, report: ReclaimReport, *, dry_run: bool) -> None:
    try:
        size = storage.size(name)
        if not dry_run:
            storage.delete(name)
    except FileNotFoundError:
        return  # removed meanwhile (a request that failed cleaned up after itself)
    except OSError:
        report.failures += 1
        logger.warning("could not reclaim offloaded content %s", name, exc_info=True)
        return
    report.removed[name] = size


def reclaim_due() -> datetime | None:
    """When the oldest journal row left becomes a dead request's; ``None`` if there is none."""
    oldest = StagedOffload.objects.aggregate(oldest=Min("staged_at"))["oldest"]
    if oldest is None:
        return None
    due: datetime = oldest + timedelta(seconds=settings.REDUCTION_STAGED_DEAD_SECONDS)
    return due


def reclaim_enqueue(
    *, workspace: Workspace | None = None, run_after: datetime | None = None
) -> bool:
    """Queue the reclaim task (``reduction_app.tasks.reclaim_offloads``), unless one is
    queued already; whether this queued one. ``workspace`` is what the caller found dead
    rows in: the task reclaims every workspace that has any."""
    from django_tasks_db.models import DBTaskResult

    from reduction_app.tasks import reclaim_offloads

    path = f"{reclaim_offloads.func.__module__}.{reclaim_offloads.func.__qualname__}"
    if DBTaskResult.objects.filter(task_path=path, status="READY").exists():
        return False
    task = reclaim_offloads if run_after is None else reclaim_offloads.using(run_after=run_after)
    task.enqueue()
    if workspace is not None:
        logger.info("queued a reclaim of offloads requests left in %s", workspace.slug)
    return True


def reclaim_all(*, dead_before: datetime | None = None) -> list[ReclaimReport]:
    """Reclaim in every workspace that holds dead journal rows; queue the next run for
    when the rows left (of requests that were running) would be dead."""
    dead_before = dead_before or staged_dead_before()
    ids = (
        StagedOffload.objects.filter(staged_at__lt=dead_before)
        .values_list("workspace_id", flat=True)
        .distinct()
    )
    reports = [
        offload_reclaim(workspace=workspace, dead_before=dead_before)
        for workspace in Workspace.objects.filter(pk__in=list(ids)).order_by("pk")
    ]
    due = reclaim_due()
    if due is not None:
        reclaim_enqueue(run_after=max(due, timezone.now()) + timedelta(seconds=1))
    return reports
