"""The journal of content requests are storing, and the reclaim of what requests that died
left: ``records.storage`` journals before it stores, ``records.reclaim`` removes what a
dead request's journal names and nothing else, the quota counts what is journaled, and
the task worker reclaims once a request finds dead journal rows.

A request that died is what a killed worker leaves: a backend that wrote and stored, and
was never recorded nor discarded. The end-to-end kill of a real gunicorn worker is in
``tests/app/test_killed_requests.py``.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from reduction_app.engine import WriteRequest
from reduction_app.models import OffloadedFile, StagedOffload, Workspace
from reduction_app.records.integrity import offload_check
from reduction_app.records.reclaim import offload_reclaim, reclaim_offloads
from reduction_app.records.storage import DjangoStorageBackend, offload_storage, storage_name_for
from tests.app.support import ApiClient, grep_rounds, make_api, truncate_over_20
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db

LONG = "x" * 30
"""Over the 20-character limit of ``truncate_over_20``: offloaded whole."""


def alpha() -> Workspace:
    return Workspace.objects.get(slug="alpha")


def died_while_storing(workspace: Workspace, *contents: str) -> DjangoStorageBackend:
    """What a request killed after storing its offloads and before recording them leaves."""
    backend = DjangoStorageBackend(workspace)
    for n, content in enumerate(contents):
        backend.write(WriteRequest(file_path=f"/tmp/clear/dead_{n}", content=content))
    backend.store()
    return backend


def reclaim_command(*args: str) -> list[str]:
    out = io.StringIO()
    call_command("offload_reclaim", *args, stdout=out)
    return out.getvalue().splitlines()


def later() -> Any:
    """A cutoff that makes every journal row a dead request's."""
    return timezone.now() + timedelta(seconds=1)


def test_a_request_that_died_leaves_journaled_content_the_check_counts_apart(
    api: ApiClient, offloads: OffloadStore
) -> None:
    died_while_storing(alpha(), "left by a dead request")
    check = offload_check(workspace=alpha())
    assert check.unnamed == {}
    assert list(check.staged.values()) == [len("left by a dead request")]
    assert check.consistent
    assert len(offloads.names()) == 1


def test_reclaim_removes_a_dead_requests_content_and_journal_only(
    api: ApiClient, offloads: OffloadStore
) -> None:
    assert truncate_over_20(api, LONG, "kept").status_code == HTTPStatus.OK
    kept = storage_name_for(alpha().pk, OffloadedFile.objects.get().sha256)
    # The dead request stored new content, and named content a file row names too.
    died_while_storing(alpha(), "dead content", LONG)
    assert len(offloads.names()) == 2

    report = offload_reclaim(workspace=alpha(), dead_before=later())

    assert (report.dead_rows, report.live_rows, report.failures) == (2, 0, 0)
    assert list(report.removed.values()) == [len("dead content")]
    assert offloads.names() == [kept]
    assert StagedOffload.objects.count() == 0
    check = offload_check(workspace=alpha())
    assert (check.consistent, check.staged, check.unnamed) == (True, {}, {})
    assert api.get(
        "/files/raw", {"path": "/tmp/trunc/kept", "conversation_id": "run-1"}
    ).content == (LONG.encode())


def test_reclaim_leaves_requests_that_may_be_running(
    api: ApiClient, offloads: OffloadStore
) -> None:
    died_while_storing(alpha(), "still being stored")
    report = offload_reclaim(workspace=alpha())  # the default: an hour
    assert (report.dead_rows, report.live_rows, report.removed) == (0, 1, {})
    assert len(offloads.names()) == 1
    assert StagedOffload.objects.count() == 1


def test_reclaim_removes_content_no_row_names_at_all(
    api: ApiClient, offloads: OffloadStore
) -> None:
    """Left before requests journaled what they store: no row of either kind names it."""
    orphan = storage_name_for(alpha().pk, "ab" * 32)
    offload_storage().save(orphan, ContentFile(b"orphan"))
    assert offload_check(workspace=alpha()).unnamed == {orphan: 6}
    report = offload_reclaim(workspace=alpha())
    assert report.removed == {orphan: 6}
    assert offloads.names() == []
    assert offload_check(workspace=alpha()).consistent


def test_reclaim_dry_run_changes_nothing(api: ApiClient, offloads: OffloadStore) -> None:
    died_while_storing(alpha(), "dead content")
    lines = reclaim_command("--dry-run", "--older-than", "0")
    assert lines[0] == (
        "alpha: 1 journal rows of requests that died, 0 of requests that may be running "
        "(left alone); would remove 1 stored objects (12 bytes)"
    )
    assert len(offloads.names()) == 1
    assert StagedOffload.objects.count() == 1


def test_reclaim_command_reports_and_removes(api: ApiClient, offloads: OffloadStore) -> None:
    died_while_storing(alpha(), "dead content")
    make_api("beta")
    lines = reclaim_command("--older-than", "0")
    assert lines[0].startswith("alpha: 1 journal rows of requests that died")
    assert lines[0].endswith("removed 1 stored objects (12 bytes)")
    assert lines[2] == (
        "beta: 0 journal rows of requests that died, 0 of requests that may be running "
        "(left alone); removed 0 stored objects (0 bytes)"
    )
    assert offloads.names() == []


def test_reclaim_command_refuses_bad_input(api: ApiClient) -> None:
    with pytest.raises(CommandError, match="no workspace 'nope'"):
        reclaim_command("--workspace", "nope")
    with pytest.raises(CommandError, match="--older-than"):
        reclaim_command("--older-than", "soon")


def test_the_quota_counts_what_a_dead_request_journaled(
    api: ApiClient, offloads: OffloadStore
) -> None:
    """A workspace of 40 bytes holding 30 of content a dead request stored cannot take 30
    more until the reclaim removes it."""
    Workspace.objects.filter(slug="alpha").update(offload_quota_bytes=40)
    died_while_storing(alpha(), "d" * 30)
    response = truncate_over_20(api, LONG, "call_1")
    assert response.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert response.json()["detail"] == (
        "offload quota exceeded: the workspace holds 0 bytes of offloaded content, requests "
        "storing or that died (until reclaimed) hold 30 more and this request would add 30, "
        "over its quota of 40 bytes; nothing was recorded"
    )
    assert len(offloads.names()) == 1  # nothing of the refused request was stored
    offload_reclaim(workspace=alpha(), dead_before=later())
    assert truncate_over_20(api, LONG, "call_1").status_code == HTTPStatus.OK


def test_a_request_that_finds_dead_journal_rows_queues_the_reclaim(
    api: ApiClient, offloads: OffloadStore
) -> None:
    died_while_storing(alpha(), "dead content")
    StagedOffload.objects.update(staged_at=timezone.now() - timedelta(hours=2))
    assert truncate_over_20(api, LONG, "call_1").status_code == HTTPStatus.OK
    assert truncate_over_20(api, LONG * 2, "call_2").status_code == HTTPStatus.OK
    queued = DBTaskResult.objects.filter(task_path__endswith=".reclaim_offloads")
    assert queued.count() == 1  # once, however many requests find them

    assert reclaim_offloads.call() == len("dead content")

    assert StagedOffload.objects.count() == 0
    assert offload_check(workspace=alpha()).consistent
    assert len(offloads.names()) == 2


def test_the_reclaim_task_comes_back_for_rows_that_are_not_dead_yet(api: ApiClient) -> None:
    died_while_storing(alpha(), "dead content")
    died_while_storing(alpha(), "younger")
    StagedOffload.objects.filter(size_bytes=12).update(
        staged_at=timezone.now() - timedelta(hours=2)
    )
    assert reclaim_offloads.call() == 12
    queued = DBTaskResult.objects.get(task_path__endswith=".reclaim_offloads")
    young = StagedOffload.objects.get()
    assert queued.run_after > young.staged_at + timedelta(hours=1)


# A reclaim while a large request is storing ------------------------------------------


class PausingStorage(FileSystemStorage):
    """A folder storage that stops at its ``pause_at``-th save until told to go on: the
    moment a request has journaled and stored part of its offloads."""

    pause_at = 0
    saves = 0
    paused = threading.Event()
    resume = threading.Event()

    def _save(self, name: str, content: Any) -> str:
        type(self).saves += 1
        if type(self).saves == self.pause_at:
            self.paused.set()
            assert self.resume.wait(60)
        return super()._save(name, content)


@pytest.fixture
def pausing(settings: Any, offload_dir: Path) -> Iterator[type[PausingStorage]]:
    settings.REDUCTION_MAX_OFFLOADS = ROUNDS
    PausingStorage.saves = 0
    PausingStorage.paused = threading.Event()
    PausingStorage.resume = threading.Event()
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {
            "BACKEND": f"{__name__}.PausingStorage",
            "OPTIONS": {"location": str(offload_dir)},
        },
    }
    yield PausingStorage
    PausingStorage.resume.set()


ROUNDS = 1500
CLEARED = ROUNDS - 1
"""Every round but the last is cleared."""


def many_rounds() -> list[dict[str, Any]]:
    return grep_rounds(ROUNDS, lambda n: f"out {n} " * 9)


@pytest.mark.django_db(transaction=True)
def test_a_reclaim_during_a_large_clear_deletes_nothing_of_it(
    pausing: type[PausingStorage],
) -> None:
    api = make_api("alpha")
    pausing.pause_at = ROUNDS // 2
    answers: list[Any] = []
    body = {
        "config": {"max_tokens_for_clear": 1000},
        "conversation_id": "big",
        "messages": many_rounds(),
    }
    request = threading.Thread(target=lambda: answers.append(api.post("/clear", body)))
    request.start()
    try:
        assert pausing.paused.wait(120), "the clear never reached its storing"
        assert StagedOffload.objects.count() == CLEARED
        lines = reclaim_command()
        assert lines[0] == (
            f"alpha: 0 journal rows of requests that died, {CLEARED} of requests that may be "
            "running (left alone); removed 0 stored objects (0 bytes)"
        )
    finally:
        pausing.resume.set()
        request.join(120)
    assert answers[0].status_code == HTTPStatus.OK, answers[0].content
    assert OffloadedFile.objects.count() == CLEARED
    assert StagedOffload.objects.count() == 0
    check = offload_check(workspace=alpha())
    assert (check.consistent, check.stored, check.staged) == (True, CLEARED, {})
    read = api.get("/files/raw", {"path": "/tmp/clear/call_0", "conversation_id": "big"})
    assert read.content == ("out 0 " * 9).encode()


def test_journal_rows_dead_requests_left_cost_a_request_no_more_queries(api: ApiClient) -> None:
    """The quota counts what other requests journaled in the database: a request's work
    does not grow with the rows requests that died left until the reclaim."""

    def queries(call_id: str) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert truncate_over_20(api, f"{call_id} " * 9, call_id).status_code == HTTPStatus.OK
        return len(captured.captured_queries)

    queries("call_0")  # the conversation's first request creates it
    died_while_storing(alpha(), "one dead content")
    few = queries("call_1")
    died_while_storing(alpha(), *(f"dead content {n}" for n in range(600)))
    assert queries("call_2") == few


# Damaged content and unfinished writes ------------------------------------------------


def reclaim_with_status(*args: str) -> tuple[int, list[str]]:
    out = io.StringIO()
    try:
        call_command("offload_reclaim", *args, stdout=out)
    except CommandError as error:
        assert str(error) == (
            "1 damaged stored objects have no good copy: reading their files answers an "
            "error until a request offloads the same content again"
        )
        return error.returncode, out.getvalue().splitlines()
    return 0, out.getvalue().splitlines()


def test_reclaim_repairs_damaged_content_from_another_workspaces_copy(
    api: ApiClient, offloads: OffloadStore
) -> None:
    beta = make_api("beta")
    assert truncate_over_20(api, LONG, "call_1").status_code == HTTPStatus.OK
    assert truncate_over_20(beta, LONG, "call_9").status_code == HTTPStatus.OK
    digest = OffloadedFile.objects.values_list("sha256", flat=True)[0]
    damaged = storage_name_for(alpha().pk, digest)
    good = storage_name_for(beta.workspace.pk, digest)
    offloads.put(damaged, b"xxxx")
    assert api.get("/files/raw", {"path": "/tmp/trunc/call_1"}).status_code == (
        HTTPStatus.SERVICE_UNAVAILABLE
    )

    assert reclaim_with_status("--workspace", "alpha", "--dry-run") == (
        0,
        [
            "alpha: 0 journal rows of requests that died, 0 of requests that may be running "
            "(left alone); would remove 0 stored objects (0 bytes)",
            "alpha: would repair 1 damaged stored objects from a good copy",
            f"  {damaged} from {good}",
        ],
    )
    assert offloads.read_bytes(damaged) == b"xxxx"
    code, lines = reclaim_with_status("--workspace", "alpha")
    assert (code, lines[1:]) == (
        0,
        [
            "alpha: repaired 1 damaged stored objects from a good copy",
            f"  {damaged} from {good}",
        ],
    )
    assert offloads.read_bytes(damaged) == LONG.encode()
    raw = api.get("/files/raw", {"path": "/tmp/trunc/call_1"})
    assert (raw.status_code, raw.content) == (HTTPStatus.OK, LONG.encode())
    assert offload_check(workspace=alpha(), deep=True).consistent


def test_reclaim_reports_damaged_content_without_a_good_copy_and_keeps_its_rows(
    api: ApiClient, offloads: OffloadStore
) -> None:
    """A copy elsewhere that is damaged too is no good copy: its digest is checked."""
    beta = make_api("beta")
    assert truncate_over_20(api, LONG, "call_1").status_code == HTTPStatus.OK
    assert truncate_over_20(beta, LONG, "call_9").status_code == HTTPStatus.OK
    digest = OffloadedFile.objects.values_list("sha256", flat=True).first()
    assert digest is not None
    damaged = storage_name_for(alpha().pk, digest)
    offloads.put(damaged, b"")
    offloads.put(storage_name_for(beta.workspace.pk, digest), b"x" * 29 + b"y")
    conversation = OffloadedFile.objects.get(workspace=alpha()).conversation
    assert conversation is not None

    code, lines = reclaim_with_status("--workspace", "alpha", "--deep")

    assert (code, lines[1:]) == (
        1,
        [
            "alpha: 1 damaged stored objects have no good copy (left as they are; reading "
            "their files answers an error):",
            f"  {damaged}: 0 bytes with SHA-256 {hashlib.sha256(b'').hexdigest()}, recorded "
            f"30 bytes with SHA-256 {digest}",
            f"    named by /tmp/trunc/call_1 (conversation 'run-1', id {conversation.pk})",
        ],
    )
    assert offloads.read_bytes(damaged) == b""
    assert OffloadedFile.objects.filter(workspace=alpha()).count() == 1
    # The next request that offloads the same content writes it whole again.
    assert truncate_over_20(api, LONG, "call_2").status_code == HTTPStatus.OK
    assert offloads.read_bytes(damaged) == LONG.encode()
    assert reclaim_with_status("--workspace", "alpha")[0] == 0


def test_reclaim_removes_unfinished_writes_once_old(api: ApiClient, offload_dir: Path) -> None:
    """A temporary file left by a worker killed while writing goes once older than any
    request runs; one being written now stays."""
    assert truncate_over_20(api, LONG, "call_1").status_code == HTTPStatus.OK
    [stored] = [p for p in offload_dir.rglob("*") if p.is_file()]
    stale = stored.parent / f".{stored.name}.000000000000.partial"
    fresh = stored.parent / f".{stored.name}.111111111111.partial"
    stale.write_bytes(b"half")
    fresh.write_bytes(b"hal")
    two_hours_ago = time.time() - 2 * 3600
    os.utime(stale, (two_hours_ago, two_hours_ago))

    lines = reclaim_command("--workspace", "alpha")

    name = stale.relative_to(offload_dir).as_posix()
    assert lines[1:] == [
        "alpha: removed 1 unfinished writes of workers that died (4 bytes)",
        f"  {name}",
    ]
    assert sorted(p for p in offload_dir.rglob("*") if p.is_file()) == sorted([stored, fresh])
    reclaim_command("--workspace", "alpha", "--older-than", "0")
    assert [p for p in offload_dir.rglob("*") if p.is_file()] == [stored]
