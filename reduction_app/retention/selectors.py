"""Reads of what retention would delete: the records older than a cutoff, and what a
purge up to that cutoff would remove (``manage.py purge --dry-run``).

Config profiles and API keys are the workspace's settings, not records: never expired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from django.core.files.storage import Storage
from django.db.models import Exists, Model, OuterRef, Q, QuerySet

from reduction_app.models import (
    FINISHED,
    UNFINISHED,
    Conversation,
    EventRecord,
    OffloadedFile,
    Simulation,
    SimulationPart,
    TelemetryRecord,
    TranscriptMessage,
    Workspace,
)
from reduction_app.records.services import ContentFreed
from reduction_app.records.storage import offload_storage


@dataclass
class PurgeReport:
    """What a purge deleted, or would delete: rows, and stored objects with their bytes."""

    conversations: int = 0
    messages: int = 0
    """Transcript messages (of the conversations)."""
    events: int = 0
    files: int = 0
    simulations: int = 0
    simulation_parts: int = 0
    trace_records: int = 0
    """Spans and log records an agent's exporter sent (``/api/v1/otel``)."""
    content: ContentFreed = field(default_factory=ContentFreed)
    """The stored objects no remaining file row names, removed (counted as each batch's
    content goes, after it commits), their bytes, and those the storage failed to remove
    (logged; their rows are deleted all the same)."""


_M = TypeVar("_M", bound=Model)


def _in(queryset: QuerySet[_M], workspace: Workspace | None) -> QuerySet[_M]:
    return queryset if workspace is None else queryset.filter(workspace=workspace)


def expired_simulations(
    *, cutoff: datetime, workspace: Workspace | None = None
) -> QuerySet[Simulation]:
    running_part = SimulationPart.objects.filter(simulation=OuterRef("pk"), status__in=UNFINISHED)
    rows = Simulation.objects.filter(status__in=FINISHED, finished_at__lt=cutoff)
    return _in(rows, workspace).exclude(Exists(running_part))


def expired_conversations(
    *, cutoff: datetime, workspace: Workspace | None = None
) -> QuerySet[Conversation]:
    newer_simulation = Simulation.objects.filter(conversation=OuterRef("pk")).filter(
        Q(finished_at__isnull=True) | Q(finished_at__gte=cutoff) | ~Q(status__in=FINISHED)
    )
    rows = Conversation.objects.filter(updated_at__lt=cutoff)
    return _in(rows, workspace).exclude(Exists(newer_simulation))


def expired_loose_events(
    *, cutoff: datetime, workspace: Workspace | None = None
) -> QuerySet[EventRecord]:
    """Events of no conversation recorded before ``cutoff``."""
    rows = EventRecord.objects.filter(conversation__isnull=True, created_at__lt=cutoff)
    return _in(rows, workspace)


def expired_loose_files(
    *, cutoff: datetime, workspace: Workspace | None = None
) -> QuerySet[OffloadedFile]:
    """Files of no conversation offloaded before ``cutoff``."""
    rows = OffloadedFile.objects.filter(conversation__isnull=True, created_at__lt=cutoff)
    return _in(rows, workspace)


def expired_trace_records(
    *, cutoff: datetime, workspace: Workspace | None = None
) -> QuerySet[TelemetryRecord]:
    """Spans and log records received before ``cutoff``. The conversations read from them
    stay (their own age decides); a session whose older spans are gone is read again from
    its newer ones, whose calls hold the whole conversation so far."""
    return _in(TelemetryRecord.objects.filter(received_at__lt=cutoff), workspace)


def purge_preview(
    *, cutoff: datetime, workspace: Workspace | None = None, storage: Storage | None = None
) -> PurgeReport:
    """What ``retention.services.purge`` would delete, read without changing anything.

    Counting is a few aggregate queries; the bytes are the sizes of the stored objects no
    file row would name any more (one storage call each, as the purge itself makes)."""
    storage = storage or offload_storage()
    conversations = expired_conversations(cutoff=cutoff, workspace=workspace)
    loose = Q(conversation__isnull=True, created_at__lt=cutoff)
    files = _in(OffloadedFile.objects.filter(Q(conversation__in=conversations) | loose), workspace)
    events = _in(EventRecord.objects.filter(Q(conversation__in=conversations) | loose), workspace)
    simulations = _in(
        Simulation.objects.filter(
            Q(conversation__in=conversations)
            | Q(pk__in=expired_simulations(cutoff=cutoff, workspace=workspace))
        ),
        workspace,
    )
    kept_names = OffloadedFile.objects.exclude(pk__in=files).values("storage_name")
    released = (
        files.exclude(storage_name__in=kept_names)
        .order_by("storage_name")
        .values_list("storage_name", flat=True)
        .distinct()
    )
    report = PurgeReport(
        conversations=conversations.count(),
        messages=TranscriptMessage.objects.filter(conversation__in=conversations).count(),
        events=events.count(),
        files=files.count(),
        simulations=simulations.count(),
        simulation_parts=SimulationPart.objects.filter(simulation__in=simulations).count(),
        trace_records=expired_trace_records(cutoff=cutoff, workspace=workspace).count(),
    )
    for name in released.iterator():
        try:
            report.content.bytes += storage.size(name)
        except FileNotFoundError:
            continue
        except OSError:
            report.content.failures += 1
            continue
        report.content.objects += 1
    return report
