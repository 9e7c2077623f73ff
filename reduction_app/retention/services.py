"""Retention: deleting the records older than a cutoff (``manage.py purge``), in one
workspace or all, or by each workspace's own ``retention_days``.

What has expired is defined in :mod:`reduction_app.retention.selectors`; this module
deletes it in batches, with the offloaded content no remaining row names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from reduction_app.models import (
    Conversation,
    EventRecord,
    OffloadedFile,
    Simulation,
    SimulationPart,
    TelemetryRecord,
    TranscriptMessage,
    Workspace,
)
from reduction_app.records.services import file_content_release
from reduction_app.retention.selectors import (
    PurgeReport,
    expired_conversations,
    expired_loose_events,
    expired_loose_files,
    expired_simulations,
    expired_trace_records,
    purge_preview,
)
from reduction_app.workspaces.quotas import offload_bytes_release

__all__ = ["BATCH_SIZE", "PurgeReport", "WorkspacePurge", "purge", "retention_purge"]

BATCH_SIZE = 500

_COUNTED = {
    Conversation._meta.label: "conversations",
    TranscriptMessage._meta.label: "messages",
    EventRecord._meta.label: "events",
    OffloadedFile._meta.label: "files",
    Simulation._meta.label: "simulations",
    SimulationPart._meta.label: "simulation_parts",
    TelemetryRecord._meta.label: "trace_records",
}


@dataclass(frozen=True)
class WorkspacePurge:
    workspace: Workspace
    cutoff: datetime
    report: PurgeReport


def purge(
    *,
    cutoff: datetime,
    workspace: Workspace | None = None,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> PurgeReport:
    """Delete what expired before ``cutoff`` (in ``workspace``, or in all), with its
    stored content; or with ``dry_run``, only say what that would delete.

    The report's ``content`` is counted as each batch's content is removed, after it
    commits: called inside a transaction, when that transaction commits."""
    if dry_run:
        return purge_preview(cutoff=cutoff, workspace=workspace)
    report = PurgeReport()
    _delete_in_batches(expired_simulations(cutoff=cutoff, workspace=workspace), report, batch_size)
    _delete_in_batches(
        expired_conversations(cutoff=cutoff, workspace=workspace),
        report,
        batch_size,
        files=lambda ids: OffloadedFile.objects.filter(conversation__in=ids),
    )
    _delete_in_batches(expired_loose_events(cutoff=cutoff, workspace=workspace), report, batch_size)
    _delete_in_batches(
        expired_trace_records(cutoff=cutoff, workspace=workspace), report, batch_size
    )
    _delete_in_batches(
        expired_loose_files(cutoff=cutoff, workspace=workspace),
        report,
        batch_size,
        files=lambda ids: OffloadedFile.objects.filter(pk__in=ids),
    )
    return report


def retention_purge(
    *,
    now: datetime,
    workspace: Workspace | None = None,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> list[WorkspacePurge]:
    """:func:`purge` each workspace (or only ``workspace``) that has ``retention_days``,
    up to its own cutoff; a workspace without keeps everything."""
    workspaces = Workspace.objects.filter(retention_days__isnull=False).order_by("slug")
    if workspace is not None:
        workspaces = workspaces.filter(pk=workspace.pk)
    done = []
    for each in workspaces:
        cutoff = now - timedelta(days=each.retention_days or 0)
        report = purge(cutoff=cutoff, workspace=each, dry_run=dry_run, batch_size=batch_size)
        done.append(WorkspacePurge(each, cutoff, report))
    return done


def _delete_in_batches(
    rows: QuerySet[Any],
    report: PurgeReport,
    batch_size: int,
    *,
    files: Callable[[list[int]], QuerySet[OffloadedFile]] | None = None,
) -> None:
    """Delete ``rows`` ``batch_size`` at a time, each batch (with what cascades from it)
    in a transaction of its own; ``files`` gives the file rows a batch deletes, whose
    content is released.

    So a purge of a large database neither holds its write lock for long nor loads much
    at once, and one interrupted has kept what it did. A batch's content goes from the
    storage after it commits, unless a remaining file row names it (content is stored
    once per digest and workspace): :func:`~reduction_app.records.services.file_content_release`.
    """
    while True:
        with transaction.atomic():
            # Locked, so a write that would make one of them newer waits for the delete.
            batch = rows.select_for_update().order_by("pk").values_list("pk", flat=True)
            ids = list(batch[:batch_size])
            if not ids:
                return
            sized = [] if files is None else _sized_names(files(ids))
            _, counts = rows.model.objects.filter(pk__in=ids).only("pk").delete()
            _release_usage(sized)
            # A model that came to cascade from these and is not counted fails the batch
            # (rolled back) rather than go unreported.
            for label, count in counts.items():
                field = _COUNTED[label]
                setattr(report, field, getattr(report, field) + count)
            file_content_release(storage_names={name for _, name, _ in sized}, freed=report.content)
        if len(ids) < batch_size:
            return


def _sized_names(files: QuerySet[OffloadedFile]) -> list[tuple[int, str, int]]:
    """(workspace id, storage name, bytes) of each file row."""
    return list(files.order_by().values_list("workspace_id", "storage_name", "size_bytes"))


def _release_usage(sized: list[tuple[int, str, int]]) -> None:
    """Give the deleted files' bytes back to their workspaces' offload usage."""
    by_workspace: dict[int, list[tuple[str, int]]] = {}
    for workspace_id, name, size in sized:
        by_workspace.setdefault(workspace_id, []).append((name, size))
    for workspace in Workspace.objects.filter(pk__in=by_workspace).order_by("pk"):
        offload_bytes_release(workspace=workspace, names=by_workspace[workspace.pk])
