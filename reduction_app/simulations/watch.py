"""Simulations as jobs the watcher looks at, and the look someone's view of one takes.

A simulation run as one task (:func:`one_task`) is failed when its worker stopped
answering or no worker took it, saying which; nothing is run again (starting it again is
the user's choice). A sweep of one conversation runs in parts (:mod:`.sweeps`), each a
job of its own: its own row has no heartbeat and is left to them.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet

from reduction_app.jobs.lease import lease_seconds
from reduction_app.jobs.watch import JobKind, job_check, register, untaken_reason
from reduction_app.models import UNFINISHED, Simulation
from reduction_app.simulations.sweeps import sweep_parts_recover

__all__ = [
    "SIMULATIONS",
    "lost_worker_error",
    "one_task",
    "simulation_check",
    "untaken_error",
]


def one_task(simulation: Simulation) -> bool:
    """Whether ``simulation`` runs as one task (a replay, a recommendation, a sweep over
    several conversations), not as a sweep in parts (:mod:`.sweeps`)."""
    return simulation.kind != "sweep" or bool(simulation.options.get("corpus"))


def _one_task_rows() -> QuerySet[Any]:
    """The simulations :func:`one_task` says run as one task, as a query."""
    return Simulation.objects.filter(~Q(kind="sweep") | Q(options__corpus=True))


def lost_worker_error() -> str:
    """Why a simulation whose worker stopped answering failed."""
    return (
        f"the worker running it stopped answering (no heartbeat for {lease_seconds():g} s); "
        "start it again"
    )


def untaken_error() -> str:
    """Why a simulation no worker took failed."""
    return untaken_reason("start it again")


SIMULATIONS = register(
    JobKind(
        name="simulation",
        rows=_one_task_rows,
        lost_error=lost_worker_error,
        untaken_error=untaken_error,
    )
)


def simulation_check(*, simulation: Simulation) -> Simulation:
    """The simulation someone looks at, after failing it when it runs as one task and its
    worker stopped answering or no worker took it, or taking back its abandoned parts when
    it is a sweep in parts; read again when either was done."""
    if one_task(simulation):
        job_check(SIMULATIONS, simulation)
        return simulation
    running = simulation.kind == "sweep" and simulation.status in UNFINISHED
    if running and sweep_parts_recover(simulation_id=simulation.pk):
        simulation.refresh_from_db()
    return simulation
