"""The one job model: every kind of background work is a ``Job`` the watcher knows, its
task declared beside its service and found by its path as a worker finds it; one look of
the watcher handles every kind at once; rows from before the job model keep their data."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone
from django.utils.module_loading import import_string
from django_tasks.base import Task

from reduction_app.conversations import imports
from reduction_app.jobs.watch import kinds
from reduction_app.models import (
    Job,
    ReclaimRun,
    RecordingImport,
    RecordingUpload,
    Simulation,
    SimulationPart,
)
from reduction_app.records import reclaim as reclaim_module
from reduction_app.simulations import sweeps, watch
from reduction_app.simulations.services import simulation_create
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.pages_support import cut_listing_conversation
from tests.app.simulations.sweep_support import queued, run_the_watch
from tests.conftest import REPO

TASKS = {
    "reduction_app.conversations.imports.run_recording_import",
    "reduction_app.jobs.watch.watch_jobs",
    "reduction_app.records.reclaim.reclaim_offloads",
    "reduction_app.simulations.services.run_simulation",
    "reduction_app.simulations.sweeps.run_sweep_part",
    "reduction_app.telemetry.services.process_telemetry",
}


def _job_models() -> set[type[Job]]:
    return {m for m in apps.get_app_config("reduction_app").get_models() if issubclass(m, Job)}


def test_every_job_model_has_one_kind_the_watcher_knows() -> None:
    assert _job_models() == {RecordingImport, Simulation, SimulationPart, ReclaimRun}
    watched = [kind.rows().model for kind in kinds()]
    assert sorted(m.__name__ for m in watched) == sorted(m.__name__ for m in _job_models())


def _declared_tasks() -> set[str]:
    """The path of every function of reduction_app decorated ``@task(...)``."""
    found = set()
    for path in sorted((REPO / "reduction_app").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", "") == "task"
                for d in node.decorator_list
            ):
                found.add(f"{module}.{node.name}")
    return found


def test_every_task_is_declared_beside_its_service_and_found_by_its_path() -> None:
    """A worker imports a task by the path stored with it; nothing gathers them in one
    module."""
    assert _declared_tasks() == TASKS
    for path in TASKS:
        declared = import_string(path)
        assert isinstance(declared, Task)
        assert declared.module_path == path


def test_a_task_worker_knows_every_kind_once_django_is_set_up() -> None:
    """What ``db_worker`` loads before it runs the watch: Django, then the task's module."""
    code = (
        "import django; django.setup()\n"
        "from reduction_app.jobs.watch import kinds\n"
        "print(sorted(kind.name for kind in kinds()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_ALLOW_INSECURE_KEY": "1",
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert out.split("\n")[-2] == "['import', 'reclaim', 'simulation', 'sweep part']"


@pytest.mark.django_db
def test_one_look_of_the_watcher_handles_every_kind(workspace: Any) -> None:
    """An import, a simulation, a part of a sweep and a reclaim, each with a worker silent
    for over a lease, and a simulation no worker took: one look fails them (the part is
    queued again) and leaves the one whose worker beats."""
    silent = timezone.now() - timedelta(seconds=61)
    listing = cut_listing_conversation(workspace_get_or_create(name="Beta"))
    lost_import = imports.recording_import_create(
        workspace=workspace, files=[("a.json", b"{}")], fmt=None, replace=False
    )
    RecordingImport.objects.filter(pk=lost_import.pk).update(
        status="running", started_at=silent, heartbeat_at=silent
    )
    replays = [
        simulation_create(
            workspace=listing.workspace, conversation=listing, configs=[{"config": None}]
        )
        for _ in range(3)
    ]
    lost, untaken, alive = replays
    Simulation.objects.filter(pk=lost.pk).update(status="running", heartbeat_at=silent)
    Simulation.objects.filter(pk=untaken.pk).update(created_at=timezone.now() - timedelta(hours=7))
    Simulation.objects.filter(pk=alive.pk).update(status="running", heartbeat_at=timezone.now())
    sweep = queued(listing, {"max_tokens_for_clear": [4000]})
    part = sweeps._claim(SimulationPart.objects.get(simulation=sweep, position=0).pk)
    assert part is not None
    SimulationPart.objects.filter(pk=part.pk).update(worker="ghost:1", heartbeat_at=silent)
    reclaim = ReclaimRun.objects.create(status="running", started_at=silent, heartbeat_at=silent)

    unfinished = run_the_watch()

    def status(model: type[Job], pk: int) -> tuple[str, str]:
        row = model._default_manager.get(pk=pk)
        return row.status, row.error

    assert status(RecordingImport, lost_import.pk) == ("failed", imports.lost_worker_error())
    assert not RecordingUpload.objects.exists()
    assert status(Simulation, lost.pk) == ("failed", watch.lost_worker_error())
    assert status(Simulation, untaken.pk) == ("failed", watch.untaken_error())
    assert status(Simulation, alive.pk) == ("running", "")
    assert status(SimulationPart, part.pk) == ("queued", "")
    assert status(ReclaimRun, reclaim.pk) == ("failed", reclaim_module.lost_worker_error())
    # Still unfinished: the replay whose worker beats, and the sweep's two parts.
    assert unfinished == 3


@pytest.mark.django_db
def test_every_kind_that_waits_fails_after_the_one_queue_timeout(
    workspace: Any, settings: Any
) -> None:
    """An import and a simulation queued past ``REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS``
    fail, each saying so; a sweep's part queued as long waits on behind its siblings."""
    settings.REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS = 3600
    old = timezone.now() - timedelta(seconds=3601)
    listing = cut_listing_conversation(workspace_get_or_create(name="Beta"))
    waiting_import = imports.recording_import_create(
        workspace=workspace, files=[("a.json", b"{}")], fmt=None, replace=False
    )
    replay = simulation_create(
        workspace=listing.workspace, conversation=listing, configs=[{"config": None}]
    )
    sweep = queued(listing, {"max_tokens_for_clear": [4000]})
    RecordingImport.objects.update(created_at=old)
    Simulation.objects.update(created_at=old)
    SimulationPart.objects.update(created_at=old)

    run_the_watch()

    def status(model: type[Job], pk: int) -> tuple[str, str]:
        row = model._default_manager.get(pk=pk)
        return row.status, row.error

    in_an_hour = "no worker took it in 1 h (REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS): "
    workers = "start the task workers (manage.py db_worker), then "
    assert status(RecordingImport, waiting_import.pk) == (
        "failed",
        in_an_hour + workers + "import the files again",
    )
    assert not RecordingUpload.objects.exists()
    assert status(Simulation, replay.pk) == ("failed", in_an_hour + workers + "start it again")
    assert status(Simulation, sweep.pk) == ("queued", "")
    assert set(SimulationPart.objects.values_list("status", flat=True)) == {"queued"}


@pytest.mark.django_db(transaction=True)
def test_rows_from_before_the_job_model_keep_their_data() -> None:
    """A part gets its sweep's creation; a simulation or an import that started had one
    run; a running import's start stands in for its heartbeat."""
    before = [("reduction_app", "0016_conversation_provider_usage")]
    after = [("reduction_app", "0017_jobs")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    workspace = old.get_model("reduction_app", "Workspace").objects.create(name="w", slug="w")
    conversation = old.get_model("reduction_app", "Conversation").objects.create(
        workspace=workspace, client_id="c"
    )
    started = timezone.now() - timedelta(minutes=5)
    simulation = old.get_model("reduction_app", "Simulation").objects.create(
        workspace=workspace,
        conversation=conversation,
        kind="sweep",
        status="running",
        started_at=started,
        progress_done=1,
        progress_total=2,
        error="",
    )
    old.get_model("reduction_app", "SimulationPart").objects.create(
        simulation=simulation,
        position=0,
        name="p",
        status="done",
        runs=2,
        worker="h:1",
        started_at=started,
    )
    old.get_model("reduction_app", "RecordingImport").objects.create(
        workspace=workspace, status="running", started_at=started, progress_total=3
    )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(after)
    new = executor.loader.project_state(after).apps
    sim = new.get_model("reduction_app", "Simulation").objects.get()
    part = new.get_model("reduction_app", "SimulationPart").objects.get()
    job = new.get_model("reduction_app", "RecordingImport").objects.get()
    assert (sim.status, sim.runs, sim.worker, sim.progress_done, sim.progress_total) == (
        "running",
        1,
        "",
        1,
        2,
    )
    assert (part.created_at, part.status, part.runs, part.worker) == (
        sim.created_at,
        "done",
        2,
        "h:1",
    )
    assert (job.status, job.runs, job.heartbeat_at, job.progress_total) == (
        "running",
        1,
        started,
        3,
    )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db
def test_a_look_at_a_live_job_costs_no_query(
    workspace: Any, django_assert_num_queries: Any
) -> None:
    """A page polling a running import, its heartbeat fresh, reads nothing more."""
    job = imports.recording_import_create(
        workspace=workspace, files=[("a.json", b"{}")], fmt=None, replace=False
    )
    RecordingImport.objects.filter(pk=job.pk).update(
        status="running", started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    job.refresh_from_db()
    with django_assert_num_queries(0):
        assert imports.recording_import_check(recording_import=job).status == "running"
