"""The lease a task worker holds on the sweep part it runs, and taking back the parts whose
worker stopped answering.

A worker that claims a part (:mod:`.sweeps`) holds it while it runs: :func:`heartbeat`
writes the part's ``heartbeat_at`` :data:`BEATS_PER_LEASE` times a lease from a daemon
thread with a database connection of its own. A part running with no heartbeat for
``REDUCTION_SWEEP_LEASE_SECONDS`` is abandoned: its worker was killed, ran out of memory
or lost its machine. :func:`sweep_parts_recover` queues it again with a new task, keeping
its count of runs, or once it has had ``REDUCTION_SWEEP_MAX_RUNS`` runs fails it and its
sweep, naming the worker.

Nobody has to ask. Every worker looks before and after each part it runs; every sweep has
a watch task (:func:`sweep_watch`) that looks a lease after the sweep is queued and again
a lease later while it runs, so a sweep whose only worker died is taken up by the next
worker started even with nothing else queued; viewing a running sweep looks at its parts;
and ``manage.py sweep_recover`` looks at all. A look that finds nothing is one query on
the running parts. Lookers exclude each other (the parts are read again locked, in an
exclusive transaction on SQLite), so an abandoned part is queued again once.

A worker presumed dead that was only slow does no harm: its heartbeat stops at the first
beat that finds the part no longer in the run it claimed, and a part's result is stored by
the first run to finish (``sweeps._finish``); a later one is dropped. Claiming, replaying
and gathering are :mod:`.sweeps`'. A simulation run as one task has the same lease, on
its own row (:func:`beating`, :mod:`.watch`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_tasks_db.utils import exclusive_transaction

from reduction_app.models import Simulation, SimulationPart

__all__ = [
    "Recovered",
    "beating",
    "heartbeat",
    "lost_worker_error",
    "sweep_lease_check",
    "sweep_parts_recover",
    "sweep_watch",
    "sweep_watch_enqueue",
]

logger = logging.getLogger(__name__)

RUNNING_SWEEP = ("queued", "running")
BEATS_PER_LEASE = 6
"""Heartbeats a running part gets per lease: a worker is presumed dead after missing six
(a busy database may hold one up for a while)."""


@contextmanager
def heartbeat(part: SimulationPart) -> Iterator[None]:
    """Keep the claimed part's lease while the block runs: a thread refreshes its
    heartbeat for as long as the part is still in the run this worker claimed."""
    rows = SimulationPart.objects.filter(pk=part.pk, status="running", runs=part.runs)
    with beating(rows, name=f"sweep-part-{part.pk}-heartbeat"):
        yield


@contextmanager
def beating(rows: QuerySet[Any], *, name: str) -> Iterator[None]:
    """While the block runs, a daemon thread called ``name`` (with a database connection
    of its own) writes ``heartbeat_at`` on ``rows`` :data:`BEATS_PER_LEASE` times a
    lease, until a beat finds none of them left to write."""
    stop = threading.Event()
    thread = threading.Thread(target=_beat, args=(rows, stop), name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _beat(rows: QuerySet[Any], stop: threading.Event) -> None:
    every = settings.REDUCTION_SWEEP_LEASE_SECONDS / BEATS_PER_LEASE
    try:
        while not stop.wait(every):
            try:
                mine = rows.update(heartbeat_at=timezone.now())
            except DatabaseError:
                # One beat missed (the database busy or away); the next may get through.
                logger.warning("%s: a beat failed", threading.current_thread().name, exc_info=True)
                continue
            if not mine:
                return  # taken back from this worker, finished, or failed
    finally:
        connections.close_all()  # this thread's own connection


@dataclass(frozen=True)
class Recovered:
    """What a look for abandoned parts did: the parts queued again and the parts failed."""

    requeued: tuple[SimulationPart, ...] = ()
    failed: tuple[SimulationPart, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.requeued or self.failed)


def lost_worker_error(*, worker: str, runs: int) -> str:
    """Why a part whose worker stopped answering on its last allowed run failed."""
    lease = settings.REDUCTION_SWEEP_LEASE_SECONDS
    return (
        f"worker {worker} stopped answering (no heartbeat for {lease:g} s) "
        f"on run {runs} of {settings.REDUCTION_SWEEP_MAX_RUNS}"
    )


def _abandoned(simulation_id: int | None) -> QuerySet[SimulationPart]:
    cutoff = timezone.now() - timedelta(seconds=settings.REDUCTION_SWEEP_LEASE_SECONDS)
    # A part claimed by a worker from before leases has no heartbeat: its start stands in.
    parts = (
        SimulationPart.objects.filter(status="running")
        .alias(beat=Coalesce("heartbeat_at", "started_at"))
        .filter(beat__lt=cutoff)
    )
    if simulation_id is not None:
        parts = parts.filter(simulation_id=simulation_id)
    return parts


def sweep_parts_recover(*, simulation_id: int | None = None) -> Recovered:
    """Take back the parts (of one sweep, or of every sweep) whose worker stopped
    answering: queue each again with a new task, or fail it and its sweep once it has had
    ``REDUCTION_SWEEP_MAX_RUNS`` runs."""
    from reduction_app.tasks import run_sweep_part

    abandoned = _abandoned(simulation_id)
    if not abandoned.exists():
        return Recovered()
    requeued: list[SimulationPart] = []
    failed: list[SimulationPart] = []
    now = timezone.now()
    with exclusive_transaction():
        # Read again under the lock: a second looker waits, then finds these parts queued.
        locked = abandoned.select_for_update(of=("self",)).select_related("simulation")
        for part in locked.order_by("pk"):
            sweep_runs = part.simulation.status in RUNNING_SWEEP
            if sweep_runs and part.runs < settings.REDUCTION_SWEEP_MAX_RUNS:
                part.requeued_after = [*part.requeued_after, part.worker]
                part.status = "queued"
                part.worker = ""
                part.heartbeat_at = None
                part.save(update_fields=["requeued_after", "status", "worker", "heartbeat_at"])
                run_sweep_part.enqueue(part.pk)
                requeued.append(part)
                continue
            lost = lost_worker_error(worker=part.worker, runs=part.runs)
            part.status = "failed"
            part.finished_at = now
            if sweep_runs:
                part.error = f"{part.name}: {lost}"
                Simulation.objects.filter(pk=part.simulation_id, status__in=RUNNING_SWEEP).update(
                    status="failed", error=part.error, finished_at=now
                )
            else:
                part.error = f"{lost}; not run again: the sweep had failed"
            part.save(update_fields=["status", "error", "finished_at"])
            failed.append(part)
    for part in requeued:
        logger.warning(
            "%s: worker %s stopped answering; queued again", part, part.requeued_after[-1]
        )
    for part in failed:
        logger.warning("%s: %s", part, part.error)
    return Recovered(requeued=tuple(requeued), failed=tuple(failed))


def sweep_lease_check(*, simulation: Simulation) -> Simulation:
    """The simulation someone looks at, after taking back its abandoned parts when it is a
    running sweep in parts, or failing it when it runs as one task and its worker stopped
    answering or no worker took it (:mod:`.watch`); read again when either was done."""
    from reduction_app.simulations.watch import one_task, simulation_lease_check

    if one_task(simulation):
        return simulation_lease_check(simulation=simulation)
    running = simulation.kind == "sweep" and simulation.status in RUNNING_SWEEP
    if running and sweep_parts_recover(simulation_id=simulation.pk):
        simulation.refresh_from_db()
    return simulation


def sweep_watch(*, simulation_id: int) -> str:
    """Take back abandoned parts (of every sweep: one whose own watch was lost with its
    worker is helped too); while this sweep runs, look again a lease later. The sweep's
    status."""
    sweep_parts_recover()
    status = Simulation.objects.filter(pk=simulation_id).values_list("status", flat=True).first()
    if status in RUNNING_SWEEP:
        sweep_watch_enqueue(simulation_id=simulation_id)
    return status or "deleted"


def sweep_watch_enqueue(*, simulation_id: int) -> None:
    """Queue the sweep's watch task, to run a lease from now."""
    from reduction_app.tasks import watch_sweep

    later = timezone.now() + timedelta(seconds=settings.REDUCTION_SWEEP_LEASE_SECONDS)
    watch_sweep.using(run_after=later).enqueue(simulation_id)
