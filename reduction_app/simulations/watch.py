"""Simulations run as one task on the task workers, and giving up those whose worker died
or that no worker took.

A replay too big to answer inline, and a sweep or recommendation over several
conversations (the Sweep page), each run as one task (``run_simulation``). While it runs,
:func:`simulation_heartbeat` writes the simulation's ``heartbeat_at`` six times a lease
(``REDUCTION_SWEEP_LEASE_SECONDS``, as for the parts of a sweep, :mod:`.leases`). One
running with no heartbeat for a lease has lost its worker (killed, out of memory, its
machine gone): :func:`simulation_lease_check` marks it failed, saying its worker stopped
answering. One still queued ``REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS`` after it was
created was taken by no worker (none runs): it is marked failed too, saying so (0 waits
forever). Nothing
is run again: starting it again is the user's choice.

Nobody has to ask: viewing the simulation (its page, or the API) looks, and each such
simulation has a watch task (:func:`simulation_watch`) that looks a lease after it is
queued and again every lease until it ends. A worker presumed dead that was only slow
does no harm: its heartbeat stops at the first beat that finds the simulation no longer
running, and its outcome is dropped (``services.simulation_run`` ends only a simulation
still running).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models.functions import Coalesce
from django.utils import timezone

from reduction_app.models import Simulation
from reduction_app.simulations.leases import beating

__all__ = [
    "lost_worker_error",
    "one_task",
    "simulation_heartbeat",
    "simulation_lease_check",
    "simulation_watch",
    "simulation_watch_enqueue",
    "untaken_error",
]

logger = logging.getLogger(__name__)

UNFINISHED = ("queued", "running")


def one_task(simulation: Simulation) -> bool:
    """Whether ``simulation`` runs as one task (a replay, a recommendation, a sweep over
    several conversations), not as a sweep in parts (:mod:`.sweeps`)."""
    return simulation.kind != "sweep" or bool(simulation.options.get("corpus"))


@contextmanager
def simulation_heartbeat(simulation: Simulation) -> Iterator[None]:
    """Show the running simulation alive while the block runs: a thread writes its
    heartbeat for as long as it is still running."""
    rows = Simulation.objects.filter(pk=simulation.pk, status="running")
    with beating(rows, name=f"simulation-{simulation.pk}-heartbeat"):
        yield


def _span(seconds: float) -> str:
    """``seconds`` as a person reads them: 6 h, 15 min, 90 s."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def lost_worker_error() -> str:
    """Why a simulation whose worker stopped answering failed."""
    lease = settings.REDUCTION_SWEEP_LEASE_SECONDS
    return f"the worker running it stopped answering (no heartbeat for {lease:g} s); start it again"


def untaken_error() -> str:
    """Why a simulation no worker took failed."""
    timeout = _span(settings.REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS)
    return (
        f"no worker took it in {timeout} (REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS): "
        "start the task workers (manage.py db_worker), then start it again"
    )


def _due(simulation: Simulation, now: datetime) -> bool:
    """Whether ``simulation`` (as read) looks given up: running with no heartbeat for a
    lease, or queued past the timeout."""
    if simulation.status == "running":
        beat = simulation.heartbeat_at or simulation.started_at or simulation.created_at
        return beat < now - timedelta(seconds=settings.REDUCTION_SWEEP_LEASE_SECONDS)
    timeout = settings.REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS
    if simulation.status == "queued" and timeout:  # 0: waits for a worker however long
        return simulation.created_at < now - timedelta(seconds=timeout)
    return False


def _give_up(simulation: Simulation) -> str | None:
    """Fail the simulation if its worker stopped answering or no worker took it; the
    error, or ``None`` when it is alive, waiting, or already ended. Writes only when what
    was read looks given up, and then only if the row still does."""
    now = timezone.now()
    if not (one_task(simulation) and _due(simulation, now)):
        return None
    rows = Simulation.objects.filter(pk=simulation.pk)
    if simulation.status == "running":
        lease = timedelta(seconds=settings.REDUCTION_SWEEP_LEASE_SECONDS)
        # One written before heartbeats has none: its start stands in.
        rows = (
            rows.filter(status="running")
            .alias(beat=Coalesce("heartbeat_at", "started_at", "created_at"))
            .filter(beat__lt=now - lease)
        )
        error = lost_worker_error()
    else:
        timeout = timedelta(seconds=settings.REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS)
        rows = rows.filter(status="queued", created_at__lt=now - timeout)
        error = untaken_error()
    # The update checks again: a simulation that started, beat or ended since it was read
    # is left alone.
    if not rows.update(status="failed", error=error, finished_at=now):
        return None
    logger.warning("simulation %s: %s", simulation.pk, error)
    return error


def simulation_lease_check(*, simulation: Simulation) -> Simulation:
    """The simulation someone looks at, failed first (and read again) when it runs as one
    task and its worker stopped answering, or no worker took it."""
    if _give_up(simulation):
        simulation.refresh_from_db()
    return simulation


def simulation_watch(*, simulation_id: int) -> str:
    """Fail the simulation if its worker stopped answering or no worker took it; while it
    is queued or running, look again a lease later. Its status."""
    simulation = Simulation.objects.filter(pk=simulation_id).first()
    if simulation is None:
        return "deleted"
    simulation = simulation_lease_check(simulation=simulation)
    if simulation.status in UNFINISHED:
        simulation_watch_enqueue(simulation_id=simulation_id)
    return simulation.status


def simulation_watch_enqueue(*, simulation_id: int) -> None:
    """Queue the simulation's watch task, to run a lease from now."""
    from reduction_app.tasks import watch_simulation

    later = timezone.now() + timedelta(seconds=settings.REDUCTION_SWEEP_LEASE_SECONDS)
    watch_simulation.using(run_after=later).enqueue(simulation_id)
