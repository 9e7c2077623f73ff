"""Simulations run as one task (a replay too big to answer inline, a sweep or
recommendation over several conversations): the heartbeat of their worker, failed when it
stops or when no worker takes them, the watcher, a late outcome dropped; and a real
``db_worker`` killed while it runs one, and a slow one on real workers never failed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation, Simulation
from reduction_app.simulations.corpus import corpus_simulation_create
from reduction_app.simulations.services import (
    simulation_create,
    simulation_enqueue,
    simulation_run,
)
from reduction_app.simulations.watch import SIMULATIONS, simulation_check
from reduction_app.workspaces.services import workspace_get_or_create
from simulator.corpus import TOOLS_OPENAI, build_conversation, dump_openai
from simulator.replay import no_reduction
from tests.app.pages_support import cut_listing_conversation, html, member_client
from tests.app.simulations.sweep_support import (
    TASK_PATHS,
    databases,
    drain_worker,
    run_the_watch,
    watches,
)
from tests.app.support import ApiClient

pytestmark = pytest.mark.django_db

LOST = "the worker running it stopped answering (no heartbeat for 60 s); start it again"
UNTAKEN = (
    "no worker took it in 6 h (REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS): start the task "
    "workers (manage.py db_worker), then start it again"
)
CONFIGS = [
    {"name": "none", "config": no_reduction()},
    {"name": "clear", "config": {"max_tokens_for_clear": 10_000}},
]


def _replay(conversation: Conversation, configs: list[dict[str, Any]] = CONFIGS) -> Simulation:
    """A replay handed to the task workers (as one too big to answer inline is)."""
    simulation = simulation_create(
        workspace=conversation.workspace, conversation=conversation, configs=configs
    )
    simulation_enqueue(simulation=simulation)
    return simulation


@pytest.fixture
def listing() -> Conversation:
    return cut_listing_conversation(workspace_get_or_create(name="Alpha Team"))


def _running(simulation: Simulation, *, silent_for: float) -> Simulation:
    """``simulation`` taken by a worker that has written no heartbeat for ``silent_for``
    seconds."""
    then = timezone.now() - timedelta(seconds=silent_for)
    Simulation.objects.filter(pk=simulation.pk).update(
        status="running", started_at=then - timedelta(seconds=30), heartbeat_at=then
    )
    return Simulation.objects.get(pk=simulation.pk)


def _waiting(simulation: Simulation, *, for_seconds: float) -> Simulation:
    """``simulation`` still queued ``for_seconds`` after it was started."""
    then = timezone.now() - timedelta(seconds=for_seconds)
    Simulation.objects.filter(pk=simulation.pk).update(created_at=then)
    return Simulation.objects.get(pk=simulation.pk)


def _tasks(task: str, argument: int) -> list[DBTaskResult]:
    return [
        t
        for t in DBTaskResult.objects.filter(task_path=TASK_PATHS[task])
        if t.args_kwargs["args"] == [argument]
    ]


def _ended(simulation: Simulation) -> tuple[str, str, bool]:
    simulation.refresh_from_db()
    return simulation.status, simulation.error, simulation.finished_at is not None


# A worker that stopped answering ------------------------------------------------------


def test_simulation_whose_worker_stopped_answering_fails(listing: Conversation) -> None:
    simulation = _running(_replay(listing), silent_for=61)
    looked = simulation_check(simulation=simulation)
    assert (looked.status, looked.error, looked.results) == ("failed", LOST, None)
    assert _ended(simulation) == ("failed", LOST, True)


def test_simulation_within_its_lease_is_left_running(listing: Conversation) -> None:
    simulation = _running(_replay(listing), silent_for=59)
    assert simulation_check(simulation=simulation).status == "running"
    assert _ended(simulation) == ("running", "", False)


def test_simulation_lease_follows_the_setting(listing: Conversation, settings: Any) -> None:
    settings.REDUCTION_JOB_LEASE_SECONDS = 30
    answering = _running(_replay(listing), silent_for=29)
    lost = _running(_replay(listing), silent_for=31)
    assert simulation_check(simulation=answering).status == "running"
    error = "the worker running it stopped answering (no heartbeat for 30 s); start it again"
    assert simulation_check(simulation=lost).error == error


def test_simulation_from_before_heartbeats_is_dated_by_its_start(listing: Conversation) -> None:
    simulation = _replay(listing)
    Simulation.objects.filter(pk=simulation.pk).update(
        status="running", started_at=timezone.now() - timedelta(seconds=61), heartbeat_at=None
    )
    simulation.refresh_from_db()
    assert simulation_check(simulation=simulation).error == LOST


def test_sweep_and_recommendation_over_several_conversations_fail_alike() -> None:
    workspace = workspace_get_or_create(name="Alpha Team")
    two = [
        cut_listing_conversation(workspace, client_id="listing-a"),
        cut_listing_conversation(workspace, tool="find_files", client_id="listing-b"),
    ]
    grid = {"max_length_for_trunc": [200, 2000]}
    for kind in ("sweep", "recommend"):
        simulation = corpus_simulation_create(
            workspace=workspace, conversations=two, kind=kind, grid=grid
        )
        simulation_enqueue(simulation=simulation)
        assert len(watches()) == 1  # one watch, for every job
        looked = simulation_check(simulation=_running(simulation, silent_for=61))
        assert (looked.kind, looked.status, looked.error) == (kind, "failed", LOST)


def test_sweep_in_parts_is_left_to_its_parts(listing: Conversation) -> None:
    """A sweep of one conversation runs in parts, each with a lease of its own: the
    sweep's own row has no heartbeat and is not failed for it."""
    simulation = simulation_create(
        workspace=listing.workspace,
        conversation=listing,
        configs=[],
        grid={"max_tokens_for_clear": [4000]},
    )
    simulation_enqueue(simulation=simulation)
    assert not SIMULATIONS.rows().filter(pk=simulation.pk).exists()  # its parts are watched
    simulation = _waiting(_running(simulation, silent_for=600), for_seconds=7 * 3600)
    assert simulation_check(simulation=simulation).status == "running"
    Simulation.objects.filter(pk=simulation.pk).update(status="queued")
    simulation.refresh_from_db()
    assert simulation_check(simulation=simulation).status == "queued"
    assert _ended(simulation) == ("queued", "", False)


def test_simulation_ended_is_left_alone(listing: Conversation) -> None:
    simulation = _replay(listing)
    _waiting(_running(simulation, silent_for=600), for_seconds=7 * 3600)
    Simulation.objects.filter(pk=simulation.pk).update(status="done")
    simulation.refresh_from_db()
    assert simulation_check(simulation=simulation).status == "done"
    assert _ended(simulation) == ("done", "", False)


def test_api_answers_a_simulation_whose_worker_stopped_answering_failed(
    api: ApiClient,
) -> None:
    conversation = cut_listing_conversation(api.workspace)
    simulation = _running(_replay(conversation), silent_for=61)
    body = api.get(f"/simulations/{simulation.pk}").json()
    assert (body["status"], body["error"], body["results"]) == ("failed", LOST, None)


def test_page_says_a_simulation_whose_worker_stopped_answering_failed() -> None:
    client, workspace = member_client()
    simulation = _running(_replay(cut_listing_conversation(workspace)), silent_for=61)
    page = html(client.get(f"/simulations/{simulation.pk}/"))
    assert f"It failed: {LOST}</p>" in page
    assert "hx-trigger" not in page  # no longer polls


# No worker took it --------------------------------------------------------------------


def test_simulation_no_worker_took_fails_after_the_timeout(listing: Conversation) -> None:
    waiting = _waiting(_replay(listing), for_seconds=6 * 3600 - 1)
    untaken = _waiting(_replay(listing), for_seconds=6 * 3600 + 1)
    assert simulation_check(simulation=waiting).status == "queued"
    looked = simulation_check(simulation=untaken)
    assert (looked.status, looked.error) == ("failed", UNTAKEN)
    assert _ended(untaken) == ("failed", UNTAKEN, True)
    # A worker taking it afterwards does not run it.
    assert simulation_run(simulation_id=untaken.pk).status == "failed"
    assert _ended(untaken) == ("failed", UNTAKEN, True)


def test_simulation_queue_timeout_follows_the_setting(listing: Conversation, settings: Any) -> None:
    settings.REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS = 600
    simulation = _waiting(_replay(listing), for_seconds=601)
    assert simulation_check(simulation=simulation).error == (
        "no worker took it in 10 min (REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS): start the "
        "task workers (manage.py db_worker), then start it again"
    )
    settings.REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS = 0  # waits forever
    forever = _waiting(_replay(listing), for_seconds=365 * 86400)
    assert simulation_check(simulation=forever).status == "queued"


# The watcher --------------------------------------------------------------------------


def test_simulation_watch_looks_again_a_lease_later_until_it_ends(
    listing: Conversation,
) -> None:
    simulation = _replay(listing)
    (first,) = watches()
    assert first.status == "READY"
    assert timedelta(seconds=59) < first.run_after - first.enqueued_at <= timedelta(seconds=60)
    assert [t.status for t in _tasks("run_simulation", simulation.pk)] == ["READY"]
    assert run_the_watch() == 1
    assert _ended(simulation) == ("queued", "", False)
    _running(simulation, silent_for=10)
    assert run_the_watch() == 1
    assert _ended(simulation) == ("running", "", False)
    assert len(watches()) == 3
    _running(simulation, silent_for=61)
    assert run_the_watch() == 0
    assert _ended(simulation) == ("failed", LOST, True)
    assert len(watches()) == 3  # no more looks
    Simulation.objects.filter(pk=simulation.pk).delete()
    assert run_the_watch() == 0


def test_simulation_watch_fails_one_no_worker_took(listing: Conversation) -> None:
    simulation = _waiting(_replay(listing), for_seconds=6 * 3600 + 1)
    assert run_the_watch() == 0
    assert _ended(simulation) == ("failed", UNTAKEN, True)


@pytest.mark.django_db(transaction=True)
def test_simulation_run_by_the_worker_with_its_watch_ends_done(listing: Conversation) -> None:
    simulation = _replay(listing)
    drain_worker()  # the watch is not due yet; the simulation runs
    assert _ended(simulation) == ("done", "", True)
    assert simulation.heartbeat_at is not None
    assert simulation.started_at is not None and simulation.heartbeat_at >= simulation.started_at


# A simulation given up while it ran ---------------------------------------------------------------


@pytest.fixture(scope="module")
def big_messages() -> list[dict[str, Any]]:
    """The scripted agent's corpus (1,010 messages, 4.2 M characters) as OpenAI chat
    messages: replaying it under two configs takes a couple of seconds."""
    return list(dump_openai(build_conversation()))


@pytest.fixture
def big(big_messages: list[dict[str, Any]]) -> Conversation:
    return conversation_upsert(
        workspace=workspace_get_or_create(name="Alpha Team"),
        client_id="corpus",
        message_format="openai_chat",
        transcript=big_messages,
        tools=TOOLS_OPENAI,
    )


def _in_thread(simulation: Simulation) -> threading.Thread:
    thread = threading.Thread(target=simulation_run, kwargs={"simulation_id": simulation.pk})
    thread.start()
    return thread


def _wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.mark.django_db(transaction=True)
def test_outcome_of_a_simulation_given_up_while_it_ran_is_dropped(
    big: Conversation, settings: Any
) -> None:
    """Presumed dead while only slow, it is failed; its worker's outcome changes nothing,
    and its heartbeat stops."""
    settings.REDUCTION_JOB_LEASE_SECONDS = 0.3
    simulation = _replay(big)
    thread = _in_thread(simulation)
    _wait_for(lambda: _ended(simulation)[0] == "running")
    Simulation.objects.filter(pk=simulation.pk).update(
        status="failed", error=LOST, finished_at=timezone.now(), heartbeat_at=None
    )
    beating = f"simulation-{simulation.pk}-heartbeat"
    _wait_for(lambda: all(t.name != beating for t in threading.enumerate()))
    thread.join()
    assert _ended(simulation) == ("failed", LOST, True)
    assert (simulation.results, simulation.heartbeat_at) == (None, None)


# Real processes -----------------------------------------------------------------------

_QUEUE_REPLAY = """
import json
from reduction_app.models import Conversation
from reduction_app.simulations.services import simulation_create, simulation_enqueue
conversation = Conversation.objects.select_related("workspace").get(pk={conversation_id})
simulation = simulation_create(
    workspace=conversation.workspace, conversation=conversation,
    configs=json.loads({configs!r}),
)
simulation_enqueue(simulation=simulation)
print(simulation.pk)
"""

_LOOK = """
from reduction_app.models import Simulation
from reduction_app.simulations.watch import simulation_check
print(simulation_check(simulation=Simulation.objects.get(pk={simulation_id})).status)
"""


def _site(site_url: str, tmp_path: Path, lease: str) -> Any:
    from benchmarks.taskworkers import Site

    site = Site(site_url, tmp_path / "media", environ={"REDUCTION_JOB_LEASE_SECONDS": lease})
    return site


def _queue_replay(site: Any, messages: list[dict[str, Any]], configs: int) -> int:
    conversation_id = site.store_conversation(messages, TOOLS_OPENAI, "corpus")
    chosen = [
        {"name": f"clear at {n * 10_000}", "config": {"max_tokens_for_clear": n * 10_000}}
        for n in range(1, configs + 1)
    ]
    code = _QUEUE_REPLAY.format(conversation_id=conversation_id, configs=json.dumps(chosen))
    return int(site.manage("shell", "-c", code).split()[-1])


def _task_rows(site: Any, task: str) -> list[dict[str, Any]]:
    return site.rows(  # type: ignore[no-any-return]
        "SELECT status FROM django_tasks_database_dbtaskresult WHERE task_path = %s",
        [TASK_PATHS[task]],
    )


@pytest.mark.parametrize("site_url", databases(), indirect=True)
def test_simulation_whose_worker_is_killed_fails(
    site_url: str, tmp_path: Path, big_messages: list[dict[str, Any]]
) -> None:
    """A real ``db_worker`` is killed (SIGKILL) while it runs a replay; a second one,
    started after, runs its watch, which fails it once its lease (2 s here) is over."""
    site = _site(site_url, tmp_path, "2")
    simulation_id = _queue_replay(site, big_messages, configs=2)
    workers = site.start_workers(1)
    try:
        _wait_until(lambda: site.simulation(simulation_id)["status"] == "running", 60)
        workers[0].kill()
        workers[0].wait()
        assert site.simulation(simulation_id)["status"] == "running"
        workers += site.start_workers(1)
        finished = site.wait(simulation_id, timeout=40)
    finally:
        errors = site.stop_workers(workers)
    error = "the worker running it stopped answering (no heartbeat for 2 s); start it again"
    assert (finished["status"], finished["error"], finished["results"]) == (
        "failed",
        error,
        None,
    ), errors
    assert finished["finished_at"] is not None
    # The killed worker's task is never ended; the watch ended the simulation.
    assert [r["status"] for r in _task_rows(site, "run_simulation")] == ["RUNNING"]
    assert "SUCCESSFUL" in {r["status"] for r in _task_rows(site, "watch_jobs")}


@pytest.mark.parametrize("site_url", databases(), indirect=True)
def test_slow_simulation_on_real_workers_is_never_failed(
    site_url: str, tmp_path: Path, big_messages: list[dict[str, Any]]
) -> None:
    """Two real workers and a lease of 1 s: one runs a replay of several seconds, the
    other its watch every second, and a look as its page's or the API's, made more than
    a lease after it started, finds it running; the replay ends done."""
    site = _site(site_url, tmp_path, "1")
    simulation_id = _queue_replay(site, big_messages, configs=24)
    workers = site.start_workers(2)
    try:
        _wait_until(lambda: site.simulation(simulation_id)["status"] == "running", 60)
        time.sleep(1.5)
        looked = site.manage("shell", "-c", _LOOK.format(simulation_id=simulation_id))
        finished = site.wait(simulation_id, timeout=120)
    finally:
        errors = site.stop_workers(workers)
    assert looked.split()[-1] == "running"
    assert (finished["status"], finished["error"]) == ("done", ""), errors
    assert [r["status"] for r in _task_rows(site, "run_simulation")] == ["SUCCESSFUL"]
    ran = _moment(finished["finished_at"]) - _moment(finished["started_at"])
    assert ran > timedelta(seconds=3), ran  # past three leases
    watches = [r["status"] for r in _task_rows(site, "watch_jobs")]
    # It was looked at while it ran, more than a lease after it started, and never failed.
    assert watches.count("SUCCESSFUL") >= 2, watches


def _moment(value: Any) -> datetime:
    """A time as read from SQLite (text) or PostgreSQL."""
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def _wait_until(condition: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
