"""Imports on the task workers are jobs: the worker keeps an import's lease with a
heartbeat for as long as it works on it, however long that is; one whose worker stopped
answering, or that no worker took in the queue timeout, is failed by the watcher, with
nothing written and its uploads gone; an import given up while it ran writes nothing."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from reduction_app.conversations import imports
from reduction_app.models import Conversation, RecordingImport, RecordingUpload, Workspace
from tests.app.simulations.sweep_support import run_the_watch, watches

pytestmark = pytest.mark.django_db

LOST = (
    "the worker importing it stopped answering (no heartbeat for 60 s); nothing was "
    "imported: import the files again"
)

UNTAKEN = (
    "no worker took it in 6 h (REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS): start the task "
    "workers (manage.py db_worker), then import the files again"
)


def _chat(*contents: str) -> bytes:
    roles = ("user", "assistant")
    return json.dumps(
        {"messages": [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]}
    ).encode()


def _queued(workspace: Workspace) -> RecordingImport:
    files = [("a.json", _chat("q", "a")), ("b.json", _chat("q", "a", "q2", "a2"))]
    return imports.recording_import_create(
        workspace=workspace, files=files, fmt=None, replace=False
    )


def _running(job: RecordingImport, *, silent_for: float) -> RecordingImport:
    """``job`` taken by a worker that has written no heartbeat for ``silent_for`` s, and
    started long before: how long it runs is not what counts."""
    then = timezone.now() - timedelta(seconds=silent_for)
    RecordingImport.objects.filter(pk=job.pk).update(
        status="running", started_at=then - timedelta(hours=3), heartbeat_at=then
    )
    return RecordingImport.objects.get(pk=job.pk)


def test_recording_import_enqueue_queues_the_import_and_the_watch_a_lease_later(
    workspace: Workspace,
) -> None:
    job = _queued(workspace)
    before = timezone.now()
    imports.recording_import_enqueue(recording_import=job)
    [run] = DBTaskResult.objects.filter(
        task_path="reduction_app.conversations.imports.run_recording_import"
    )
    assert run.args_kwargs["args"] == [job.pk]
    [watch] = watches()
    assert watch.run_after is not None
    assert watch.run_after - before >= timedelta(seconds=60)


def test_watch_gives_up_an_import_whose_worker_stopped_answering(workspace: Workspace) -> None:
    """No heartbeat for a lease: failed, uploads deleted, nothing written."""
    job = _queued(workspace)
    _running(job, silent_for=61)
    assert run_the_watch() == 0
    job.refresh_from_db()
    assert (job.status, job.error) == ("failed", LOST)
    assert job.finished_at is not None
    assert not RecordingUpload.objects.exists()
    assert not Conversation.objects.exists()
    assert watches() == []  # nothing left to watch


def test_watch_leaves_a_long_import_whose_worker_beats(workspace: Workspace) -> None:
    """Running for hours, its heartbeat recent: left running, and looked at again."""
    job = _queued(workspace)
    assert run_the_watch() == 1  # queued just now: waits for a worker
    _running(job, silent_for=30)
    assert run_the_watch() == 1
    job.refresh_from_db()
    assert job.status == "running"
    assert len(watches()) == 2
    assert RecordingUpload.objects.filter(recording_import=job).count() == 2


def test_a_look_at_an_import_fails_it_once_its_worker_stopped_answering(
    workspace: Workspace, settings: Any
) -> None:
    settings.REDUCTION_JOB_LEASE_SECONDS = 30
    job = _queued(workspace)
    answering = _running(job, silent_for=29)
    assert imports.recording_import_check(recording_import=answering).status == "running"
    looked = imports.recording_import_check(recording_import=_running(job, silent_for=31))
    assert (looked.status, looked.error) == ("failed", LOST.replace("60 s", "30 s"))


def _waiting(job: RecordingImport, *, for_seconds: float) -> RecordingImport:
    """``job`` queued ``for_seconds`` ago, taken by no worker since."""
    then = timezone.now() - timedelta(seconds=for_seconds)
    RecordingImport.objects.filter(pk=job.pk).update(created_at=then)
    return RecordingImport.objects.get(pk=job.pk)


def test_watch_fails_an_import_no_worker_took_in_the_queue_timeout(
    workspace: Workspace,
) -> None:
    """Queued past the timeout: failed naming the setting and the workers to start, its
    uploads deleted; one queued a second less waits on, its uploads kept."""
    waiting = _waiting(_queued(workspace), for_seconds=6 * 3600 - 1)
    untaken = _waiting(_queued(workspace), for_seconds=6 * 3600 + 1)
    assert run_the_watch() == 1
    untaken.refresh_from_db()
    assert (untaken.status, untaken.error) == ("failed", UNTAKEN)
    assert untaken.finished_at is not None
    assert not RecordingUpload.objects.filter(recording_import=untaken).exists()
    waiting.refresh_from_db()
    assert waiting.status == "queued"
    assert RecordingUpload.objects.filter(recording_import=waiting).count() == 2
    # A worker taking it afterwards imports nothing.
    assert imports.recording_import_run(import_id=untaken.pk).status == "failed"
    assert not Conversation.objects.exists()


def test_a_look_at_an_import_fails_it_once_no_worker_took_it_in_the_setting(
    workspace: Workspace, settings: Any
) -> None:
    settings.REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS = 600
    job = _queued(workspace)
    waiting = imports.recording_import_check(recording_import=_waiting(job, for_seconds=599))
    assert waiting.status == "queued"
    looked = imports.recording_import_check(recording_import=_waiting(job, for_seconds=601))
    assert (looked.status, looked.error) == ("failed", UNTAKEN.replace("6 h", "10 min"))
    assert not RecordingUpload.objects.exists()
    settings.REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS = 0  # waits forever
    forever = _waiting(_queued(workspace), for_seconds=365 * 86400)
    assert imports.recording_import_check(recording_import=forever).status == "queued"


def test_watch_leaves_a_finished_import_alone(workspace: Workspace) -> None:
    job = _queued(workspace)
    assert imports.recording_import_run(import_id=job.pk).status == "done"
    assert run_the_watch() == 0
    job.refresh_from_db()
    assert (job.status, job.runs) == ("done", 1)
    assert Conversation.objects.filter(workspace=workspace).count() == 2


def test_an_import_given_up_while_it_ran_writes_nothing(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watcher gives the import up after its files are read, before they are written
    (its worker presumed dead): the worker's write finds it no longer running and undoes
    itself."""
    job = _queued(workspace)
    progress = imports._progress

    def watched(import_id: int) -> imports.Progress:
        report = progress(import_id)

        def then_given_up(done: int, total: int) -> None:
            report(done, total)
            if done == total:
                _running(job, silent_for=61)
                assert run_the_watch() == 0

        return then_given_up

    monkeypatch.setattr(imports, "_progress", watched)
    ended = imports.recording_import_run(import_id=job.pk)
    assert (ended.status, ended.error, ended.result) == ("failed", LOST, None)
    assert not Conversation.objects.exists()
    assert not RecordingUpload.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_import_keeps_its_lease_while_its_worker_works_past_several_leases(
    workspace: Workspace, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lease of 0.3 s and an import that reads for over a second: its heartbeat keeps it
    alive, every look meanwhile leaves it running, and it ends done."""
    settings.REDUCTION_JOB_LEASE_SECONDS = 0.3
    job = _queued(workspace)
    read = imports.read_recording
    looks: list[str] = []

    def slow_read(raw: bytes, **kwargs: Any) -> Any:
        until = time.monotonic() + 0.7
        while time.monotonic() < until:
            time.sleep(0.1)
            row = RecordingImport.objects.get(pk=job.pk)
            looks.append(imports.recording_import_check(recording_import=row).status)
        return read(raw, **kwargs)

    monkeypatch.setattr(imports, "read_recording", slow_read)
    beating = f"recordingimport-{job.pk}-heartbeat"
    ended = imports.recording_import_run(import_id=job.pk)
    assert (ended.status, ended.error) == ("done", "")
    assert set(looks) == {"running"} and len(looks) >= 10
    assert ended.heartbeat_at is not None and ended.started_at is not None
    assert ended.heartbeat_at > ended.started_at + timedelta(seconds=1)
    assert all(t.name != beating for t in threading.enumerate())
