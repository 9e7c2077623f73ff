"""Reads of simulations, scoped to one workspace, and of the parts of a sweep."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet

from reduction_app.configs.selectors import ConfigChoice
from reduction_app.models import Conversation, JobStatus, Simulation, SimulationPart, Workspace
from reduction_app.paging import digits
from reduction_app.simulations.points import point_name, points_of
from simulator import stored


def simulation_get(*, workspace: Workspace, simulation_id: int) -> Simulation | None:
    return (
        Simulation.objects.filter(workspace=workspace, pk=simulation_id)
        .select_related("conversation")
        .first()
    )


def simulation_results(simulation: Simulation) -> stored.SimulationResults | None:
    """A done simulation's results as their typed value (:mod:`simulator.stored`), read
    the one way every page and command reads them; ``None`` until done. Results stored
    before they carried their kind are read as the kind the simulation is (a sweep over
    several conversations stores a corpus sweep)."""
    if simulation.status != JobStatus.DONE or not simulation.results:
        return None
    return stored.load(simulation.results, legacy_kind=_stored_kind(simulation))


def _stored_kind(simulation: Simulation) -> stored.Kind:
    if simulation.kind == "recommend":
        return "recommend"
    if simulation.kind == "sweep":
        return "corpus_sweep" if simulation.options.get("corpus") else "sweep"
    return "replay"


def simulation_list(*, workspace: Workspace) -> QuerySet[Simulation]:
    """Newest first, with their conversations and their results (the API's list shows
    both: deferring the results would cost a query per row)."""
    return (
        Simulation.objects.filter(workspace=workspace)
        .select_related("conversation")
        .order_by("-id")
    )


def simulation_rows(*, workspace: Workspace) -> QuerySet[Simulation]:
    """Newest first, for the list page: without their results, each with ``selected``,
    how many conversations it was over (0 for one)."""
    return (
        simulation_list(workspace=workspace)
        .defer("results", "configs", "grid")
        .annotate(selected=Count("conversations"))
    )


def simulation_for(*, workspace: Workspace, value: str | None) -> Simulation | None:
    if not digits(value):
        return None
    return Simulation.objects.filter(workspace=workspace, pk=int(value)).first()


def simulation_matching(
    *, conversation: Conversation, configs: list[dict[str, Any]], options: dict[str, Any]
) -> Simulation | None:
    """A replay of the same configs on the conversation as it is now, not failed: asking
    again for a comparison already queued or done finds it instead of queueing another."""
    recent = (
        Simulation.objects.filter(
            conversation=conversation,
            kind="replay",
            created_at__gte=conversation.updated_at,
        )
        .exclude(status=JobStatus.FAILED)
        .defer("results")
        .order_by("-id")[:20]
    )
    for simulation in recent:
        if simulation.configs == configs and simulation.options == options:
            return simulation
    return None


@dataclass(frozen=True)
class PartsSummary:
    """Where the parts of a sweep on the task workers stand."""

    by_status: dict[str, int]
    workers: list[tuple[str, int]]
    """The workers that took parts (``host:pid``) and how many each, most first."""
    retried: list[SimulationPart]
    """The parts queued again after their worker stopped answering, in grid order."""


def simulation_parts(*, simulation: Simulation) -> PartsSummary:
    parts = SimulationPart.objects.filter(simulation=simulation)
    by_status = dict(parts.values_list("status").annotate(n=Count("id")).order_by())
    workers = (
        parts.exclude(worker="")
        .values_list("worker")
        .annotate(n=Count("id"))
        .order_by("-n", "worker")
    )
    retried = parts.exclude(requeued_after=[]).defer("config", "result").order_by("position")
    return PartsSummary(
        by_status=by_status, workers=[(w, n) for w, n in workers], retried=list(retried)
    )


SWEEP_LISTED = 200
"""The most conversations the Sweep page lists to pick from (its filter narrows them)."""


def sweep_candidates(
    *, workspace: Workspace, search: str = "", source: str = "", message_format: str = ""
) -> QuerySet[Conversation]:
    """The workspace's conversations matching the conversation list's filters (a search
    of ids and titles, the recording format, the wire format), oldest first, without
    their tools and system; ``source="any"`` keeps imported recordings only."""
    qs = Conversation.objects.filter(workspace=workspace)
    if search:
        qs = qs.filter(Q(client_id__icontains=search) | Q(title__icontains=search))
    if source == "any":
        qs = qs.exclude(source="")
    elif source:
        qs = qs.filter(source=source)
    if message_format:
        qs = qs.filter(message_format=message_format)
    return qs.defer("system", "tools", "provider_usage").order_by("id")


def conversation_sources(*, workspace: Workspace) -> list[str]:
    """The recording formats the workspace's imported conversations came from."""
    rows = (
        Conversation.objects.filter(workspace=workspace)
        .exclude(source="")
        .values_list("source", flat=True)
        .distinct()
        .order_by("source")
    )
    return list(rows)


def simulation_conversations(*, simulation: Simulation) -> list[Conversation]:
    """The conversations a simulation replayed: its selection, or its one conversation."""
    chosen = list(simulation.conversations.defer("system", "tools").order_by("id"))
    return chosen or [simulation.conversation]


_POINT_VALUE = re.compile(r"point-(\d{1,18})-(\d{1,9})")


def point_choices(*, workspace: Workspace, values: Sequence[str]) -> list[ConfigChoice]:
    """The configs among ``values`` that name a point of one of the workspace's finished
    sweeps or recommendations (``point-<simulation>-<number>``,
    :func:`~reduction_app.simulations.points.point_value`), as options Compare replays
    without saving them; values naming no such point are left out."""
    out: list[ConfigChoice] = []
    for value in dict.fromkeys(values):
        found = _POINT_VALUE.fullmatch(value)
        if found is None:
            continue
        simulation = simulation_get(workspace=workspace, simulation_id=int(found[1]))
        if simulation is None:
            continue
        points = points_of(simulation_results(simulation), simulation.grid)
        number = int(found[2])
        if 1 <= number <= len(points):
            point = points[number - 1]
            out.append(ConfigChoice(value, point_name(simulation, point), dict(point.config)))
    return out
