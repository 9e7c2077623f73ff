"""Background work, run by django-tasks' database backend (``manage.py db_worker``)."""

from __future__ import annotations

from django_tasks import task

from reduction_app.conversations.imports import recording_import_run, recording_import_watch
from reduction_app.records.reclaim import reclaim_all
from reduction_app.simulations.leases import sweep_watch
from reduction_app.simulations.services import simulation_run
from reduction_app.simulations.sweeps import sweep_part_run
from reduction_app.simulations.watch import simulation_watch


@task()
def run_simulation(simulation_id: int) -> str:
    """Carry out a queued simulation; its outcome is stored on the Simulation row."""
    return simulation_run(simulation_id=simulation_id).status


@task()
def run_sweep_part(part_id: int) -> str:
    """Replay one combination of a sweep; the last one done gathers the sweep."""
    return sweep_part_run(part_id=part_id)


@task()
def watch_sweep(simulation_id: int) -> str:
    """Take back the parts whose worker stopped answering; again later while the sweep runs."""
    return sweep_watch(simulation_id=simulation_id)


@task()
def watch_simulation(simulation_id: int) -> str:
    """Fail a simulation run as one task whose worker stopped answering, or that no worker
    took; again later while it is queued or running."""
    return simulation_watch(simulation_id=simulation_id)


@task()
def reclaim_offloads() -> int:
    """Remove what requests that died left in the offload storage, in every workspace;
    again later while requests' journal rows are left. The bytes removed."""
    return sum(report.removed_bytes for report in reclaim_all())


@task()
def run_recording_import(import_id: int) -> str:
    """Import the recordings of a queued import; its outcome is stored on the row."""
    return recording_import_run(import_id=import_id).status


@task()
def watch_recording_import(import_id: int) -> str:
    """Give up an import whose worker ended before it did; again later while it runs."""
    return recording_import_watch(import_id=import_id)
