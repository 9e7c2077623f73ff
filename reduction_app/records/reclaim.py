"""Removing what requests that died left in the offload storage.

Journal rows older than ``REDUCTION_STAGED_DEAD_SECONDS`` belong to a dead request:
the content they alone name goes, with the rows, unnamed objects and old temporary
files; ``repair`` writes damaged content again from a good copy. Nothing a live request
stored is touched (docs/deploying.md, "Requests that die while storing"). A run on the
task workers is a job (``ReclaimRun``) like any other.
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.core.files.storage import Storage
from django.db import DatabaseError, transaction
from django.db.models import Min
from django.utils import timezone
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from reduction_app.jobs.lease import claim_fields, heartbeat, job_end, lease_seconds
from reduction_app.jobs.watch import JobKind, register, watch_enqueue
from reduction_app.models import JobStatus, OffloadedFile, ReclaimRun, StagedOffload, Workspace
from reduction_app.records.folder import is_temporary
from reduction_app.records.integrity import Damage, find_damage, listed_names
from reduction_app.records.storage import offload_storage, read_verified, save_replacing
from reduction_app.workspaces.quotas import lock_workspace, staged_dead_before

__all__ = [
    "RECLAIMS",
    "ReclaimReport",
    "lost_worker_error",
    "offload_reclaim",
    "reclaim_all",
    "reclaim_due",
    "reclaim_enqueue",
    "reclaim_later",
    "reclaim_offloads",
    "reclaim_run",
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
    """Objects the storage failed to remove or repair (each logged); the next run tries
    again."""
    unfinished: dict[str, int] = field(default_factory=dict)
    """Temporary file -> bytes, for each stale write removed (or, in a dry run, to remove)."""
    repaired: dict[str, str] = field(default_factory=dict)
    """Damaged object -> the good copy it was written again from (or would be)."""
    unrecoverable: dict[str, Damage] = field(default_factory=dict)
    """Damaged objects with no good copy anywhere in the storage: left as they are."""

    @property
    def removed_bytes(self) -> int:
        return sum(self.removed.values())


def offload_reclaim(
    *,
    workspace: Workspace,
    dead_before: datetime | None = None,
    dry_run: bool = False,
    repair: bool = False,
    deep: bool = False,
    storage: Storage | None = None,
) -> ReclaimReport:
    """Remove the content and journal rows requests that died left in ``workspace``.

    The storage is listed before the rows are read, and the rows are read and the
    content removed holding the workspace's lock (as requests do when they journal, and
    purges and deletes when they remove content), so no request comes to name content
    between the check and the removal; a live request's rows are younger than the
    cutoff and committed before it stores anything.

    ``dead_before`` is when a journal row's request counts as dead (default: now less
    ``REDUCTION_STAGED_DEAD_SECONDS``); temporary files of writes older than it go too.
    ``repair`` writes damaged objects again from a good copy (``deep``: damaged by their
    SHA-256 too, reading every object). A dry run reports what would be done and changes
    nothing.
    """
    storage = storage or offload_storage()
    dead_before = dead_before or staged_dead_before()
    report = ReclaimReport(workspace)
    # Listed first: whatever is stored by now was journaled before it was stored.
    listed: set[str] = set()
    unfinished: list[str] = []
    for name in listed_names(workspace, storage):
        if is_temporary(posixpath.basename(name)):
            unfinished.append(name)
        else:
            listed.add(name)
    _remove_unfinished(storage, sorted(unfinished), dead_before, report, dry_run=dry_run)
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
    if repair:
        _repair(workspace, storage, listed, report, deep=deep, dry_run=dry_run)
    return report


def _remove_unfinished(
    storage: Storage,
    names: list[str],
    dead_before: datetime,
    report: ReclaimReport,
    *,
    dry_run: bool,
) -> None:
    """Remove those of the temporary files ``names`` last changed before ``dead_before``:
    a write in progress changes its file until it renames it, within any request's time."""
    for name in names:
        try:
            if storage.get_modified_time(name) >= dead_before:
                continue
            size = storage.size(name)
            if not dry_run:
                storage.delete(name)
        except FileNotFoundError:
            continue  # renamed into place, or removed, since the listing
        except OSError:
            report.failures += 1
            logger.warning("could not remove the unfinished write %s", name, exc_info=True)
            continue
        report.unfinished[name] = size


def _repair(
    workspace: Workspace,
    storage: Storage,
    listed: set[str],
    report: ReclaimReport,
    *,
    deep: bool,
    dry_run: bool,
) -> None:
    sizes: dict[str, int] = {}
    for name in sorted(listed):
        try:
            sizes[name] = storage.size(name)
        except FileNotFoundError:
            continue
    damaged = find_damage(workspace, sizes, deep=deep, storage=storage)
    if not damaged:
        return
    digests = {damage.sha256_recorded for damage in damaged.values()}
    # Other workspaces' objects of the same content; storage names are per workspace.
    copies: dict[str, list[str]] = {}
    rows = (
        OffloadedFile.objects.filter(sha256__in=sorted(digests))
        .exclude(workspace=workspace)
        .values_list("sha256", "storage_name")
        .order_by("sha256", "storage_name")
        .distinct()
    )
    for sha256, source in rows:
        copies.setdefault(sha256, []).append(source)
    for name, damage in damaged.items():
        for source in copies.get(damage.sha256_recorded, []):
            try:
                data = read_verified(storage, source, damage.sha256_recorded)
            except OSError:  # missing, damaged as well, or the storage failing
                continue
            if dry_run or _write_repair(workspace, storage, name, data, report):
                report.repaired[name] = source
            break
        else:
            report.unrecoverable[name] = damage
            logger.error(
                "damaged offloaded content %s has no good copy: %s; named by %s",
                name,
                damage,
                ", ".join(map(str, damage.files)),
            )


def _write_repair(
    workspace: Workspace, storage: Storage, name: str, data: bytes, report: ReclaimReport
) -> bool:
    """Write the good copy at ``name``, while a row still names it: holding the
    workspace's lock, so a purge cannot remove the rows meanwhile and leave it unnamed."""
    with transaction.atomic():
        lock_workspace(workspace)
        if not OffloadedFile.objects.filter(workspace=workspace, storage_name=name).exists():
            return False
        try:
            save_replacing(storage, name, data)
        except OSError:
            report.failures += 1
            logger.warning("could not repair offloaded content %s", name, exc_info=True)
            return False
    return True


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
    """Queue the reclaim task (:func:`reclaim_offloads`), unless one is queued already;
    whether this queued one. ``workspace`` is what the caller found dead rows in: the task
    reclaims every workspace that has any."""
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


def reclaim_later(workspace: Workspace) -> None:
    """Have the task worker reclaim what requests that died left in ``workspace`` (a
    request's storage backend calls it when it finds their journal rows); a database
    that fails to queue it is logged, never raised into the request."""
    try:
        reclaim_enqueue(workspace=workspace)
    except DatabaseError:
        logger.warning("could not queue the reclaim of %s", workspace.slug, exc_info=True)


def reclaim_run() -> ReclaimRun:
    """Reclaim in every workspace (:func:`reclaim_all`) as a job: its row is made running
    in this worker, keeps its lease while it works, and records the bytes removed or the
    error."""
    run = ReclaimRun()
    claim_fields(run, timezone.now())
    run.save()
    watch_enqueue()
    try:
        with heartbeat(run):
            removed = sum(report.removed_bytes for report in reclaim_all())
    except Exception as exc:
        job_end(run, status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
        raise
    job_end(run, status=JobStatus.DONE, removed_bytes=removed)
    run.refresh_from_db()
    return run


@task()
def reclaim_offloads() -> int:
    """Remove what requests that died left in the offload storage, in every workspace;
    again later while requests' journal rows are left. The bytes removed."""
    return reclaim_run().removed_bytes


def lost_worker_error() -> str:
    """Why a reclaim whose worker stopped answering failed."""
    return (
        f"the worker running it stopped answering (no heartbeat for {lease_seconds():g} s); "
        "the next request that finds what requests that died left queues another"
    )


RECLAIMS = register(
    JobKind(name="reclaim", rows=ReclaimRun.objects.all, lost_error=lost_worker_error)
)
