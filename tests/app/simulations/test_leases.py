"""The lease on a sweep part: the heartbeat of its worker, parts taken back when it stops
(queued again, or failed after the last run), a late run that does no harm, the watcher
and ``manage.py sweep_recover``; and a real ``db_worker`` killed in the middle of a part."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from reduction_app.models import Conversation, Simulation, SimulationPart
from reduction_app.simulations import sweeps
from reduction_app.simulations.sweeps import (
    Recovered,
    sweep_part_run,
    sweep_parts_recover,
)
from reduction_app.simulations.sweeps import part_heartbeat as heartbeat
from simulator.compare import sweep
from simulator.importers import conversation_from_json
from simulator.pricing import pricing_for
from tests.app.simulations.sweep_support import (
    TASK_PATHS,
    databases,
    drain_worker,
    in_process,
    openhands_run,
    queued,
    run_the_watch,
    watches,
)

pytestmark = pytest.mark.django_db

THIS_WORKER = f"{socket.gethostname()}:{os.getpid()}"
FIRST = "clear_retention_suffix_limit=1,max_tokens_for_clear=4000"
SECOND = "clear_retention_suffix_limit=1,max_tokens_for_clear=8000"


def _taken(
    simulation: Simulation,
    position: int,
    *,
    worker: str = "ghost:1",
    silent_for: float = 61,
    runs: int | None = None,
) -> SimulationPart:
    """Part ``position`` claimed, by ``worker``, which has written no heartbeat for
    ``silent_for`` seconds (on its run ``runs``, when given)."""
    part_id = SimulationPart.objects.get(simulation=simulation, position=position).pk
    assert sweeps._claim(part_id) is not None
    fields: dict[str, Any] = {
        "worker": worker,
        "heartbeat_at": timezone.now() - timedelta(seconds=silent_for),
    }
    if runs is not None:
        fields["runs"] = runs
    SimulationPart.objects.filter(pk=part_id).update(**fields)
    return SimulationPart.objects.get(pk=part_id)


def _tasks(task: str, argument: int) -> list[DBTaskResult]:
    return [
        t
        for t in DBTaskResult.objects.filter(task_path=TASK_PATHS[task])
        if t.args_kwargs["args"] == [argument]
    ]


def _wait_for(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


# Taking parts back ---------------------------------------------------------------------


def test_sweep_parts_recover_leaves_a_part_within_its_lease(stored: Conversation) -> None:
    simulation = queued(stored)
    part = _taken(simulation, 0, silent_for=59)
    recovered = sweep_parts_recover()
    assert recovered == Recovered() and not recovered
    part.refresh_from_db()
    assert (part.status, part.runs, part.worker, part.requeued_after) == (
        "running",
        1,
        "ghost:1",
        [],
    )


def test_sweep_parts_recover_queues_an_abandoned_part_again(stored: Conversation) -> None:
    simulation = queued(stored)
    part = _taken(simulation, 0, worker="ghost:1")
    recovered = sweep_parts_recover()
    assert ([p.pk for p in recovered.requeued], recovered.failed) == ([part.pk], ())
    part.refresh_from_db()
    assert (part.status, part.runs, part.worker, part.requeued_after, part.heartbeat_at) == (
        "queued",
        1,
        "",
        ["ghost:1"],
        None,
    )
    # A new task, beside the one the lost worker held.
    assert [t.status for t in _tasks("run_sweep_part", part.pk)] == ["READY", "READY"]
    # Looking again finds nothing: the part is queued once.
    assert not sweep_parts_recover()
    assert len(_tasks("run_sweep_part", part.pk)) == 2
    simulation.refresh_from_db()
    assert (simulation.status, simulation.error) == ("running", "")


def test_sweep_parts_recover_dates_a_part_from_before_leases_by_its_start(
    stored: Conversation,
) -> None:
    """A part claimed by a worker that wrote no heartbeat (before leases) is abandoned
    a lease after it started."""
    simulation = queued(stored)
    recent, old = _taken(simulation, 0), _taken(simulation, 1)
    SimulationPart.objects.filter(pk=recent.pk).update(
        heartbeat_at=None, started_at=timezone.now() - timedelta(seconds=59)
    )
    SimulationPart.objects.filter(pk=old.pk).update(
        heartbeat_at=None, started_at=timezone.now() - timedelta(seconds=61)
    )
    assert [p.pk for p in sweep_parts_recover().requeued] == [old.pk]


def test_sweep_parts_recover_of_one_sweep_leaves_the_others(stored: Conversation) -> None:
    mine, other = queued(stored), queued(stored)
    part, elsewhere = _taken(mine, 0), _taken(other, 0)
    assert [p.pk for p in sweep_parts_recover(simulation_id=mine.pk).requeued] == [part.pk]
    elsewhere.refresh_from_db()
    assert elsewhere.status == "running"


@pytest.mark.django_db(transaction=True)
def test_sweep_part_queued_again_runs_again_and_the_sweep_completes(
    stored: Conversation,
) -> None:
    simulation = queued(stored)
    part = _taken(simulation, 0, worker="ghost:1")
    sweep_parts_recover()
    drain_worker()
    simulation.refresh_from_db()
    assert (simulation.status, simulation.error, simulation.progress_done) == ("done", "", 6)
    assert simulation.results == in_process(stored)
    part.refresh_from_db()
    assert (part.status, part.runs, part.worker, part.requeued_after) == (
        "done",
        2,
        THIS_WORKER,
        ["ghost:1"],
    )
    others = SimulationPart.objects.filter(simulation=simulation).exclude(pk=part.pk)
    assert {(p.status, p.runs, p.worker, len(p.requeued_after)) for p in others} == {
        ("done", 1, THIS_WORKER, 0)
    }


@pytest.mark.django_db(transaction=True)
def test_sweep_part_lost_on_its_last_run_fails_with_its_sweep(stored: Conversation) -> None:
    simulation = queued(stored)
    part = _taken(simulation, 1, worker="ghost:3", runs=3)
    recovered = sweep_parts_recover()
    assert (recovered.requeued, [p.pk for p in recovered.failed]) == ((), [part.pk])
    error = f"{SECOND}: worker ghost:3 stopped answering (no heartbeat for 60 s) on run 3 of 3"
    part.refresh_from_db()
    assert (part.status, part.runs, part.error, part.requeued_after) == ("failed", 3, error, [])
    assert part.finished_at is not None
    assert len(_tasks("run_sweep_part", part.pk)) == 1  # not queued again
    simulation.refresh_from_db()
    assert (simulation.status, simulation.error, simulation.results) == ("failed", error, None)
    # The parts still queued are not run.
    drain_worker()
    parts = SimulationPart.objects.filter(simulation=simulation).exclude(pk=part.pk)
    assert {(p.status, p.error) for p in parts} == {("failed", "not run: the sweep had failed")}


def test_sweep_lease_and_runs_follow_the_settings(stored: Conversation, settings: Any) -> None:
    settings.REDUCTION_JOB_LEASE_SECONDS = 30
    settings.REDUCTION_SWEEP_MAX_RUNS = 2
    simulation = queued(stored)
    answering = _taken(simulation, 0, silent_for=29)
    lost = _taken(simulation, 1, worker="ghost:2", silent_for=31, runs=2)
    assert [p.pk for p in sweep_parts_recover().failed] == [lost.pk]
    lost.refresh_from_db()
    assert lost.error == (
        f"{SECOND}: worker ghost:2 stopped answering (no heartbeat for 30 s) on run 2 of 2"
    )
    answering.refresh_from_db()
    assert answering.status == "running"


def test_sweep_part_lost_after_its_sweep_failed_fails_alone(stored: Conversation) -> None:
    simulation = queued(stored)
    part = _taken(simulation, 0, worker="ghost:1")
    Simulation.objects.filter(pk=simulation.pk).update(status="failed", error="another part")
    assert [p.pk for p in sweep_parts_recover().failed] == [part.pk]
    part.refresh_from_db()
    assert (part.status, part.error) == (
        "failed",
        "worker ghost:1 stopped answering (no heartbeat for 60 s) on run 1 of 3; "
        "not run again: the sweep had failed",
    )
    simulation.refresh_from_db()
    assert (simulation.status, simulation.error) == ("failed", "another part")


# A run presumed dead that was not ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_sweep_late_finish_of_a_run_taken_back_is_dropped(stored: Conversation) -> None:
    """The part's second run stored its result and the sweep was gathered; then the first
    run, only slow, finishes (or fails): nothing changes."""
    simulation = queued(stored)
    slow = _taken(simulation, 0, worker="ghost:1")
    sweep_parts_recover()
    drain_worker()
    simulation.refresh_from_db()
    gathered = (simulation.status, simulation.results, simulation.finished_at)
    assert gathered[:2] == ("done", in_process(stored))
    kept = SimulationPart.objects.get(pk=slow.pk)
    assert sweeps._finish(slow, {"name": "late"}) == "dropped"
    assert sweeps._fail(slow, f"{FIRST}: MemoryError: late") == "dropped"
    part = SimulationPart.objects.get(pk=slow.pk)
    assert (part.status, part.result, part.worker, part.error, part.runs, part.finished_at) == (
        "done",
        kept.result,
        THIS_WORKER,
        "",
        2,
        kept.finished_at,
    )
    simulation.refresh_from_db()
    assert (simulation.status, simulation.results, simulation.finished_at) == gathered


@pytest.mark.django_db(transaction=True)
def test_sweep_run_taken_back_that_finishes_first_is_kept(stored: Conversation) -> None:
    """The first run, presumed dead, finishes before the part's new task runs: its result
    stands, and the new task finds the part done."""
    simulation = queued(stored)
    slow = _taken(simulation, 0, worker="ghost:1")
    sweep_parts_recover()
    result = sweeps._replay(slow)
    assert sweeps._finish(slow, result) == "done"
    assert sweep_part_run(part_id=slow.pk) == "done"
    part = SimulationPart.objects.get(pk=slow.pk)
    assert (part.status, part.runs, part.worker, part.result) == ("done", 1, "ghost:1", result)
    drain_worker()
    simulation.refresh_from_db()
    assert (simulation.status, simulation.results) == ("done", in_process(stored))


@pytest.mark.django_db(transaction=True)
def test_heartbeat_keeps_the_lease_and_stops_once_the_part_is_taken_back(
    stored: Conversation, settings: Any
) -> None:
    settings.REDUCTION_JOB_LEASE_SECONDS = 0.3  # a heartbeat every 0.05 s
    simulation = queued(stored)
    part = sweeps._claim(SimulationPart.objects.get(simulation=simulation, position=0).pk)
    assert part is not None and part.heartbeat_at is not None
    name = f"sweep-part-{part.pk}-heartbeat"

    def beating() -> bool:
        return any(t.name == name for t in threading.enumerate())

    def last_beat() -> Any:
        return SimulationPart.objects.values_list("heartbeat_at", flat=True).get(pk=part.pk)

    with heartbeat(part):
        # Two leases go by: the part keeps its lease all along.
        until = time.monotonic() + 0.6
        while time.monotonic() < until:
            assert not sweep_parts_recover(), "a part whose worker beats was taken back"
            time.sleep(0.02)
        assert last_beat() > part.heartbeat_at
        # Another run claims the part (as after it was taken back and queued again): the
        # beat finds it no longer this run's and ends, writing nothing more.
        SimulationPart.objects.filter(pk=part.pk).update(runs=2, heartbeat_at=None)
        _wait_for(lambda: not beating())
        assert last_beat() is None
    with heartbeat(part):
        assert beating()
    assert not beating()


# The watcher and the command -----------------------------------------------------------


def test_sweep_watch_looks_again_a_lease_later_while_the_sweep_runs(
    stored: Conversation,
) -> None:
    simulation = queued(stored)
    (first,) = watches()
    assert first.status == "READY"
    assert timedelta(seconds=59) < first.run_after - first.enqueued_at <= timedelta(seconds=60)
    part = _taken(simulation, 0)
    assert run_the_watch() == 7  # the sweep's parts (six and the baseline) are unfinished
    part.refresh_from_db()
    assert (part.status, part.requeued_after) == ("queued", ["ghost:1"])
    assert len(watches()) == 2
    SimulationPart.objects.filter(simulation=simulation).update(status="done")
    Simulation.objects.filter(pk=simulation.pk).update(status="done")
    assert run_the_watch() == 0
    assert len(watches()) == 2  # no more looks


def test_sweep_recover_command_says_what_it_did(stored: Conversation) -> None:
    def recover(*args: str) -> list[str]:
        out = StringIO()
        call_command("sweep_recover", *args, stdout=out)
        return out.getvalue().splitlines()

    simulation, other = queued(stored), queued(stored)
    assert recover() == ["No part's worker has stopped answering."]
    _taken(simulation, 0, worker="ghost:1")
    _taken(simulation, 1, worker="ghost:2", runs=3)
    elsewhere = _taken(other, 0, worker="ghost:9")
    assert recover("--simulation", str(simulation.pk)) == [
        f"Queued again after worker ghost:1 stopped answering: part 0 of simulation "
        f"{simulation.pk}: {FIRST}",
        f"Failed part 1 of simulation {simulation.pk}: {SECOND}: worker ghost:2 stopped "
        "answering (no heartbeat for 60 s) on run 3 of 3",
    ]
    elsewhere.refresh_from_db()
    assert elsewhere.status == "running"
    assert recover() == [
        f"Queued again after worker ghost:9 stopped answering: part 0 of simulation "
        f"{other.pk}: {FIRST}"
    ]


# Real processes ------------------------------------------------------------------------

_ABANDON = """
from datetime import timedelta
from django.utils import timezone
from reduction_app.models import SimulationPart
then = timezone.now() - timedelta(seconds=61)
SimulationPart.objects.filter(simulation_id={simulation_id}, position=0).update(
    status="running", runs=1, worker="ghost:1", started_at=then, heartbeat_at=then
)
"""

_LOOK = """
import time
from reduction_app.simulations.sweeps import sweep_parts_recover
time.sleep(max(0.0, {at!r} - time.time()))
print(len(sweep_parts_recover().requeued))
"""


@pytest.mark.parametrize("site_url", databases(), indirect=True)
def test_sweep_parts_recover_in_two_processes_at_once_queues_a_part_once(
    site_url: str, tmp_path: Path
) -> None:
    """Two processes look for abandoned parts at the same moment: one takes the part back,
    the other waits for its lock and then finds nothing left to do."""
    from benchmarks.taskworkers import Site

    site = Site(site_url, tmp_path / "media")
    run = openhands_run()
    conversation_id = site.store_conversation(run["messages"], run["tools"], "ponyc-4595")
    simulation_id = site.queue_sweep(conversation_id, {"max_tokens_for_clear": [4000]}, "gpt-4o")
    site.manage("shell", "-c", _ABANDON.format(simulation_id=simulation_id))
    at = time.time() + 4  # both processes started and Django set up by then
    with ThreadPoolExecutor(2) as pool:
        looks = list(pool.map(lambda _: site.manage("shell", "-c", _LOOK.format(at=at)), [1, 2]))
    assert sorted(int(out.split()[-1]) for out in looks) == [0, 1]
    part = site.parts(simulation_id)[0]
    assert (part["status"], part["requeued_after"]) == ("queued", ["ghost:1"])
    tasks = [t for t in site.part_tasks() if t["part_id"] == part["id"]]
    assert [t["status"] for t in tasks] == ["READY", "READY"]


# A real worker killed ------------------------------------------------------------------


def _first_running(site: Any, simulation_id: int, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = [p for p in site.parts(simulation_id) if p["status"] == "running"]
        if running:
            return running[0]
        time.sleep(0.02)
    raise AssertionError(f"no part of simulation {simulation_id} ran in {timeout} s")


@pytest.mark.parametrize("site_url", databases(), indirect=True)
def test_sweep_completes_after_its_worker_is_killed_in_a_part(
    site_url: str, tmp_path: Path
) -> None:
    """A real ``db_worker`` is killed (SIGKILL) in the middle of a part; a second one,
    started after, takes the part back once its lease (2 s here) is over, unasked, and
    completes the sweep: each part done by one run, the results the in-process sweep's."""
    from benchmarks.taskworkers import Site
    from simulator.corpus import TOOLS_OPENAI, build_conversation, dump_openai

    site = Site(site_url, tmp_path / "media", environ={"REDUCTION_JOB_LEASE_SECONDS": "2"})
    # The scripted agent's corpus (1,010 messages, 4.2 M characters): a worker prepares
    # it for over a second before its first replay, time enough to be killed in a part.
    messages = dump_openai(build_conversation())
    conversation_id = site.store_conversation(messages, TOOLS_OPENAI, "corpus")
    grid = {"max_tokens_for_clear": [10000, 40000]}
    simulation_id = site.queue_sweep(conversation_id, grid, "gpt-4o")
    workers = site.start_workers(1)
    try:
        killed = _first_running(site, simulation_id, timeout=30)
        workers[0].kill()
        workers[0].wait()
        running = [p["id"] for p in site.parts(simulation_id) if p["status"] == "running"]
        assert running == [killed["id"]]
        workers += site.start_workers(1)
        finished = site.wait(simulation_id, timeout=40)
    finally:
        errors = site.stop_workers(workers)
    assert (finished["status"], finished["error"]) == ("done", ""), errors
    host = socket.gethostname()
    lost, rescuer = (f"{host}:{worker.pid}" for worker in workers)
    parts = site.parts(simulation_id)
    assert [p["position"] for p in parts] == [0, 1, 2]
    tasks = site.part_tasks()
    for part in parts:
        runs = sorted((t["status"], t["return_value"]) for t in tasks if t["part_id"] == part["id"])
        if part["id"] == killed["id"]:
            assert (part["status"], part["runs"], part["requeued_after"], part["worker"]) == (
                "done",
                2,
                [lost],
                rescuer,
            )
            # The lost worker's task is never ended; the new one did the part.
            assert runs == [("RUNNING", None), ("SUCCESSFUL", "done")]
        else:
            assert (part["status"], part["runs"], part["requeued_after"]) == ("done", 1, [])
            assert part["worker"] in (lost, rescuer)
            assert runs == [("SUCCESSFUL", "done")]
    recorded = conversation_from_json(
        {"messages": messages, "tools": TOOLS_OPENAI}, fmt="openai_chat", name="corpus"
    )[0]
    expected = sweep(recorded, grid, pricing=pricing_for("gpt-4o"), workers=1).to_dict()
    assert finished["results"] == expected
