"""Imports on the task workers whose worker ended: given up by their watch, with nothing
written and their uploads gone; an import given up while it ran writes nothing."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from reduction_app.conversations import imports
from reduction_app.models import Conversation, RecordingImport, RecordingUpload, Workspace

pytestmark = pytest.mark.django_db


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


def _watches(job: RecordingImport) -> list[DBTaskResult]:
    return [
        t
        for t in DBTaskResult.objects.filter(task_path="reduction_app.tasks.watch_recording_import")
        if t.args_kwargs["args"] == [job.pk]
    ]


def test_recording_import_enqueue_queues_the_import_and_its_watch_a_timeout_later(
    workspace: Workspace, settings: Any
) -> None:
    settings.REDUCTION_IMPORT_TIMEOUT_SECONDS = 600
    job = _queued(workspace)
    before = timezone.now()
    imports.recording_import_enqueue(recording_import=job)
    [run] = DBTaskResult.objects.filter(task_path="reduction_app.tasks.run_recording_import")
    assert run.args_kwargs["args"] == [job.pk]
    [watch] = _watches(job)
    assert watch.run_after is not None
    assert watch.run_after - before >= timedelta(seconds=600)


def test_recording_import_watch_gives_up_an_import_whose_worker_ended(
    workspace: Workspace, settings: Any
) -> None:
    """Running for longer than the timeout with no outcome: failed, uploads deleted."""
    settings.REDUCTION_IMPORT_TIMEOUT_SECONDS = 600
    job = _queued(workspace)
    RecordingImport.objects.filter(pk=job.pk).update(
        status="running", started_at=timezone.now() - timedelta(seconds=601)
    )
    assert imports.recording_import_watch(import_id=job.pk) == "failed"
    job.refresh_from_db()
    assert (job.status, job.error) == ("failed", imports.GIVEN_UP)
    assert job.finished_at is not None
    assert not RecordingUpload.objects.exists()
    assert not Conversation.objects.exists()
    assert _watches(job) == []  # nothing left to watch


def test_recording_import_watch_looks_again_at_an_import_still_in_time(
    workspace: Workspace, settings: Any
) -> None:
    settings.REDUCTION_IMPORT_TIMEOUT_SECONDS = 600
    job = _queued(workspace)
    assert imports.recording_import_watch(import_id=job.pk) == "queued"
    RecordingImport.objects.filter(pk=job.pk).update(
        status="running", started_at=timezone.now() - timedelta(seconds=30)
    )
    assert imports.recording_import_watch(import_id=job.pk) == "running"
    assert len(_watches(job)) == 2
    assert RecordingUpload.objects.filter(recording_import=job).count() == 2


def test_recording_import_watch_leaves_a_finished_import_alone(workspace: Workspace) -> None:
    job = _queued(workspace)
    assert imports.recording_import_run(import_id=job.pk).status == "done"
    assert imports.recording_import_watch(import_id=job.pk) == "done"
    assert _watches(job) == []
    assert Conversation.objects.filter(workspace=workspace).count() == 2


def test_an_import_given_up_while_it_ran_writes_nothing(
    workspace: Workspace, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch gives the import up after its files are read, before they are written:
    the worker's write finds it no longer running and undoes itself."""
    settings.REDUCTION_IMPORT_TIMEOUT_SECONDS = 0
    job = _queued(workspace)
    progress = imports._progress

    def watched(import_id: int) -> imports.Progress:
        report = progress(import_id)

        def then_given_up(done: int, total: int) -> None:
            report(done, total)
            if done == total:
                assert imports.recording_import_watch(import_id=import_id) == "failed"

        return then_given_up

    monkeypatch.setattr(imports, "_progress", watched)
    ended = imports.recording_import_run(import_id=job.pk)
    assert (ended.status, ended.error, ended.result) == ("failed", imports.GIVEN_UP, None)
    assert not Conversation.objects.exists()
    assert not RecordingUpload.objects.exists()
