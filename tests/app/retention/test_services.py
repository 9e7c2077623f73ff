"""Retention's purge: exactly the records older than the cutoff go, with the stored
content no remaining row names, after each batch commits; on the local folder and S3."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reduction_app.models import (
    Conversation,
    EventRecord,
    OffloadedFile,
    Simulation,
    SimulationPart,
    TelemetryRecord,
    TranscriptMessage,
    Workspace,
)
from reduction_app.records.services import ContentFreed
from reduction_app.records.storage import offload_storage, read_stored
from reduction_app.retention.services import PurgeReport, purge, retention_purge
from reduction_app.workspaces.quotas import offload_usage
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.retention.support import conversation, counts, days_ago, record, simulation
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db

CUTOFF_DAYS = 30


def names_of(*client_ids: str) -> list[str]:
    rows = OffloadedFile.objects.filter(conversation__client_id__in=client_ids)
    return sorted(set(rows.values_list("storage_name", flat=True)))


def test_purge_deletes_exactly_the_old_records_and_their_content(
    workspace: Workspace, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    old = conversation(workspace, "old", "a" * 10, "b" * 20, days=40, messages=3)
    simulation(old, days=35, parts=2)
    conversation(workspace, "new", "c" * 30, days=10)
    record(workspace, None, "d" * 40, days=31, calls="loose-old")
    record(workspace, None, "e" * 50, days=29, calls="loose-new")
    gone = names_of("old") + sorted(
        OffloadedFile.objects.filter(call_id="loose-old-0").values_list("storage_name", flat=True)
    )
    stored = offloads.names()
    assert len(stored) == 5
    with django_capture_on_commit_callbacks(execute=True):
        report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    assert report == PurgeReport(
        conversations=1,
        messages=3,
        events=3,
        files=3,
        simulations=1,
        simulation_parts=2,
        content=ContentFreed(objects=3, bytes=10 + 20 + 40, failures=0),
    )
    assert list(Conversation.objects.values_list("client_id", flat=True)) == ["new"]
    assert sorted(EventRecord.objects.values_list("call_id", flat=True)) == [
        "loose-new-0",
        "new-0",
    ]
    assert sorted(OffloadedFile.objects.values_list("call_id", flat=True)) == [
        "loose-new-0",
        "new-0",
    ]
    assert TranscriptMessage.objects.count() == 2
    assert Simulation.objects.count() == SimulationPart.objects.count() == 0
    assert offloads.names() == sorted(set(stored) - set(gone))


def test_purge_gives_the_freed_bytes_back_to_the_offload_quota(
    workspace: Workspace, django_capture_on_commit_callbacks: Any
) -> None:
    """The workspace's offload usage (what its quota is checked against) loses what the
    purge freed, and still equals a count over the rows left."""
    conversation(workspace, "old", "shared output", "only old", days=40)
    conversation(workspace, "new", "shared output", "new output", days=1)
    workspace.refresh_from_db()
    assert workspace.offload_bytes == offload_usage(workspace=workspace) == 13 + 8 + 10
    with django_capture_on_commit_callbacks(execute=True):
        purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    workspace.refresh_from_db()
    assert workspace.offload_bytes == offload_usage(workspace=workspace) == 13 + 10


def test_purge_keeps_content_a_newer_row_still_names(
    workspace: Workspace, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    """The same output in an old and a new conversation is stored once: it stays."""
    conversation(workspace, "old", "shared output", "only old", days=40)
    conversation(workspace, "new", "shared output", days=1)
    [shared] = names_of("new")
    with django_capture_on_commit_callbacks(execute=True):
        report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    assert (report.files, report.content) == (2, ContentFreed(objects=1, bytes=8, failures=0))
    assert offloads.names() == [shared]
    assert read_stored(offload_storage(), shared) == "shared output"


def test_purge_leaves_a_newer_conversation_its_file_at_the_same_path(
    workspace: Workspace, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    """Two conversations offloaded one output to one path (each has its file row): purging
    the old one leaves the new one's file, its content and its usage; purging that frees
    the content, and its 13 bytes, once."""
    for client_id in ("old", "new"):
        record(workspace, client_id, "shared output", calls="call")
    conversation(workspace, "old", days=40)
    conversation(workspace, "new", days=1)
    [stored] = offloads.names()
    with django_capture_on_commit_callbacks(execute=True):
        report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    assert (report.conversations, report.files, report.content) == (1, 1, ContentFreed())
    [kept] = OffloadedFile.objects.all()
    assert (kept.conversation.client_id, kept.path) == ("new", "/tmp/trunc/call-0")
    assert offloads.names() == [stored]
    workspace.refresh_from_db()
    assert workspace.offload_bytes == offload_usage(workspace=workspace) == 13
    with django_capture_on_commit_callbacks(execute=True):
        report = purge(cutoff=days_ago(0), workspace=workspace)
    assert (report.files, report.content) == (1, ContentFreed(objects=1, bytes=13))
    assert offloads.names() == []
    workspace.refresh_from_db()
    assert workspace.offload_bytes == offload_usage(workspace=workspace) == 0


def test_purge_removes_content_only_after_the_batch_commits(
    workspace: Workspace, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    conversation(workspace, "old", "abcdefgh", days=40)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    assert OffloadedFile.objects.count() == 0
    assert (len(offloads.names()), report.content) == (1, ContentFreed())
    for callback in callbacks:
        callback()
    assert (offloads.names(), report.content) == ([], ContentFreed(objects=1, bytes=8))


def test_purge_dry_run_changes_nothing_and_reports_what_purge_does(
    workspace: Workspace, offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    old = conversation(workspace, "old", "shared output", "x" * 12, days=40, messages=4)
    simulation(old, days=35)
    simulation(conversation(workspace, "new", "shared output", days=2), days=31, parts=3)
    record(workspace, None, "y" * 25, days=50, calls="loose")
    before = (counts(workspace), offloads.names())
    preview = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace, dry_run=True)
    assert (counts(workspace), offloads.names()) == before
    expected = PurgeReport(
        conversations=1,
        messages=4,
        events=3,
        files=3,
        simulations=2,
        simulation_parts=5,
        content=ContentFreed(objects=2, bytes=12 + 25, failures=0),
    )
    assert preview == expected
    with django_capture_on_commit_callbacks(execute=True):
        report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    assert report == expected


def test_purge_keeps_a_conversation_whose_simulation_is_newer_or_unfinished(
    workspace: Workspace, django_capture_on_commit_callbacks: Any
) -> None:
    simulation(conversation(workspace, "replayed lately", "a" * 10, days=40), days=5)
    simulation(conversation(workspace, "running", "b" * 10, days=40), status="running", days=None)
    simulation(conversation(workspace, "queued", days=40), status="queued", days=None)
    simulation(conversation(workspace, "replayed long ago", days=40), days=35)
    with django_capture_on_commit_callbacks(execute=True):
        report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    assert (report.conversations, report.simulations) == (1, 1)
    assert sorted(Conversation.objects.values_list("client_id", flat=True)) == [
        "queued",
        "replayed lately",
        "running",
    ]
    assert sorted(Simulation.objects.values_list("status", flat=True)) == [
        "done",
        "queued",
        "running",
    ]


def test_purge_keeps_a_failed_sweep_whose_parts_still_run(workspace: Workspace) -> None:
    """A sweep fails at its first failed part; parts still running on workers keep it."""
    sweep = simulation(conversation(workspace, "new", days=1), status="failed", days=40)
    SimulationPart.objects.filter(simulation=sweep, position=0).update(status="running")
    assert purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace).simulations == 0
    SimulationPart.objects.filter(simulation=sweep).update(status="done")
    assert purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace).simulations == 1


def test_purge_works_in_batches_of_a_fixed_number_of_queries(
    workspace: Workspace, django_capture_on_commit_callbacks: Any
) -> None:
    """Each batch is a transaction of its own (a savepoint inside the test's), and a batch
    costs the same queries however many conversations it holds."""

    def purge_queries(conversations: int, batch_size: int) -> list[str]:
        for n in range(conversations):
            conversation(workspace, f"c{n}", f"output {n} " * 3, days=40)
        with CaptureQueriesContext(connection) as queries:
            purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace, batch_size=batch_size)
        assert Conversation.objects.count() == 0
        return [q["sql"] for q in queries]

    small, large = purge_queries(2, 100), purge_queries(6, 100)
    assert len(small) == len(large)
    batched = purge_queries(5, 2)
    # Conversations in batches of 2, 2 and 1; one look each for simulations, events and
    # files of no conversation, and trace records.
    assert sum(q.startswith("SAVEPOINT") for q in batched) == 3 + 4


def test_purge_storage_failure_is_logged_and_the_purge_goes_on(
    workspace: Workspace,
    offloads: OffloadStore,
    django_capture_on_commit_callbacks: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    conversation(workspace, "old-1", "refused content", "removed content", days=40)
    conversation(workspace, "old-2", "more removed content", days=40)
    storage = offload_storage()
    [refused] = OffloadedFile.objects.filter(call_id="old-1-0").values_list(
        "storage_name", flat=True
    )
    delete = type(storage).delete

    def refuse_one(self: Any, name: str) -> None:
        if name == refused:
            raise PermissionError(name)
        delete(self, name)

    monkeypatch.setattr(type(storage), "delete", refuse_one)
    with (
        caplog.at_level(logging.WARNING, logger="reduction_app.records.services"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace, batch_size=1)
    assert (report.conversations, report.files) == (2, 3)
    assert report.content == ContentFreed(objects=2, bytes=15 + 20, failures=1)
    logged = [r for r in caplog.records if r.name == "reduction_app.records.services"]
    assert [r.getMessage() for r in logged] == [f"could not delete offloaded content {refused}"]
    assert offloads.names() == [refused]


def test_retention_purge_applies_each_workspace_its_own_days(
    offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    """One workspace's retention never touches another's records, even the same content."""
    month = workspace_get_or_create(name="month")
    year = workspace_get_or_create(name="year")
    forever = workspace_get_or_create(name="forever")
    Workspace.objects.filter(pk=month.pk).update(retention_days=30)
    Workspace.objects.filter(pk=year.pk).update(retention_days=365)
    for each in (month, year, forever):
        simulation(conversation(each, "run", "same output everywhere", days=60), days=60)
        record(each, None, "loose output", days=60)
    before = {each.slug: counts(each) for each in (year, forever)}
    stored = offloads.names()
    with django_capture_on_commit_callbacks(execute=True):
        done = retention_purge(now=days_ago(0))
    assert [(d.workspace.slug, d.report.conversations, d.report.files) for d in done] == [
        ("month", 1, 2),
        ("year", 0, 0),
    ]
    assert counts(month) == dict.fromkeys(counts(month), 0)
    assert {each.slug: counts(each) for each in (year, forever)} == before
    assert offloads.names() == [n for n in stored if not n.startswith(f"ws{month.pk}/")]
    assert len(offloads.names()) == 4


def test_retention_purge_of_one_workspace_leaves_the_others(
    django_capture_on_commit_callbacks: Any,
) -> None:
    one = workspace_get_or_create(name="one")
    two = workspace_get_or_create(name="two")
    Workspace.objects.update(retention_days=7)
    conversation(one, "run", days=8)
    conversation(two, "run", days=8)
    with django_capture_on_commit_callbacks(execute=True):
        done = retention_purge(now=days_ago(0), workspace=one)
    assert [(d.workspace.slug, d.report.conversations) for d in done] == [("one", 1)]
    assert list(Conversation.objects.values_list("workspace__slug", flat=True)) == ["two"]


def test_purge_of_everything_leaves_nothing_behind(
    offloads: OffloadStore, django_capture_on_commit_callbacks: Any
) -> None:
    """After a purge up to now, no row of any recorded model is left for the workspace,
    and the storage holds nothing of it; the other workspace keeps all of its own."""
    alpha = workspace_get_or_create(name="alpha")
    beta = workspace_get_or_create(name="beta")
    for each in (alpha, beta):
        old = conversation(each, "old", "shared", "old only", days=400, messages=5)
        simulation(old, days=300)
        new = conversation(each, "new", "shared", "new only", messages=3)
        simulation(new, days=0, parts=4)
        simulation(new, status="failed", days=0, parts=1)
        record(each, None, "shared", "loose only", days=2, calls="loose")
        record(each, None, "fresh", calls="fresh")
    beta_before, beta_names = (
        counts(beta),
        [n for n in offloads.names() if n.startswith(f"ws{beta.pk}/")],
    )
    assert (
        counts(alpha)
        == beta_before
        == {
            "Conversation": 2,
            "TranscriptMessage": 8,
            "EventRecord": 7,
            "OffloadedFile": 7,
            "Simulation": 3,
            "SimulationPart": 7,
        }
    )
    with django_capture_on_commit_callbacks(execute=True):
        report = purge(cutoff=days_ago(-1), workspace=alpha, batch_size=2)
    assert report.content == ContentFreed(objects=5, bytes=6 + 8 + 8 + 10 + 5)
    assert counts(alpha) == dict.fromkeys(beta_before, 0)
    assert (counts(beta), offloads.names()) == (beta_before, beta_names)
    with django_capture_on_commit_callbacks(execute=True):
        purge(cutoff=days_ago(-1))
    assert counts(beta) == dict.fromkeys(beta_before, 0)
    assert offloads.names() == []


def test_purge_deletes_trace_records_received_before_the_cutoff(workspace: Workspace) -> None:
    for key, days in (("old", 40), ("new", 10)):
        row = TelemetryRecord.objects.create(
            workspace=workspace, kind="span", key=key, trace_id="t", data="{}"
        )
        TelemetryRecord.objects.filter(pk=row.pk).update(received_at=days_ago(days))
    preview = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace, dry_run=True)
    assert preview.trace_records == 1
    report = purge(cutoff=days_ago(CUTOFF_DAYS), workspace=workspace)
    assert report.trace_records == 1
    assert list(TelemetryRecord.objects.values_list("key", flat=True)) == ["new"]
