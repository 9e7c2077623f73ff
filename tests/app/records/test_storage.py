"""DjangoStorageBackend: the engine's Backend on Django's Storage API, per workspace; every
test runs on the local folder and on S3 (moto's server on loopback)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reduction_app.conversations.services import conversation_upsert
from reduction_app.engine import Backend, PathEscapeError, WriteRequest
from reduction_app.errors import LimitExceeded
from reduction_app.models import OffloadedFile, StagedOffload, Workspace
from reduction_app.records.storage import (
    DjangoStorageBackend,
    offload_storage,
    read_offloads,
    read_stored,
    storage_name_for,
)
from reduction_app.workspaces.services import workspace_get_or_create
from tests.offload_stores import OffloadStore

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("offloads")]


@pytest.fixture
def workspace() -> Workspace:
    return workspace_get_or_create(name="alpha")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def record(backend: DjangoStorageBackend, path: str) -> OffloadedFile:
    """Store what ``backend`` holds and record ``path``, as a request that succeeded does."""
    backend.store()
    staged = backend.staged[path]
    return OffloadedFile.objects.create(
        workspace=backend.workspace,
        path=path,
        storage_name=staged.storage_name,
        size_chars=len(staged.content),
        tokens=0,
        sha256=staged.digest,
        phase="truncation",
    )


def test_storage_backend_is_an_engine_backend(workspace: Workspace) -> None:
    assert isinstance(DjangoStorageBackend(workspace), Backend)


def test_storage_write_holds_then_store_journals_and_stores_by_digest(
    workspace: Workspace, offloads: OffloadStore
) -> None:
    backend = DjangoStorageBackend(workspace)
    text = "naïve\r\ncontent 🌍\n"
    backend.write(WriteRequest(file_path="/tmp/trunc/c1", content=text))
    assert offloads.names() == []
    assert backend.read("/tmp/trunc/c1") == text
    backend.store()
    name = storage_name_for(workspace.pk, digest(text))
    assert list(StagedOffload.objects.values_list("request", "storage_name", "size_bytes")) == [
        (backend.request, name, len(text.encode()))
    ]
    assert name == f"ws{workspace.pk}/{digest(text)[:2]}/{digest(text)}.txt"
    assert offloads.names() == [name]
    assert offloads.read_bytes(name) == text.encode()
    staged = backend.staged["/tmp/trunc/c1"]
    assert (staged.content, staged.digest, staged.storage_name, staged.created) == (
        text,
        digest(text),
        name,
        True,
    )
    assert read_stored(offload_storage(), name) == text


def test_storage_read_gives_staged_then_recorded_content(workspace: Workspace) -> None:
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/p", content="staged"))
    assert backend.read("/p") == "staged"
    record(backend, "/p")
    assert DjangoStorageBackend(workspace).read("/p") == "staged"


def test_storage_read_unknown_path_is_file_not_found(workspace: Workspace) -> None:
    with pytest.raises(FileNotFoundError, match="file not found: /nope"):
        DjangoStorageBackend(workspace).read("/nope")


def test_storage_read_is_scoped_to_the_workspace(workspace: Workspace) -> None:
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/p", content="mine"))
    record(backend, "/p")
    other = DjangoStorageBackend(workspace_get_or_create(name="beta"))
    with pytest.raises(FileNotFoundError):
        other.read("/p")


def test_storage_same_content_is_stored_once(workspace: Workspace, offloads: OffloadStore) -> None:
    first = DjangoStorageBackend(workspace)
    first.write(WriteRequest(file_path="/a", content="same"))
    record(first, "/a")
    second = DjangoStorageBackend(workspace)
    second.write(WriteRequest(file_path="/b", content="same"))
    second.store()
    assert second.staged["/b"].created is False
    assert len(offloads.names()) == 1
    # Discarding the second write keeps the content the first one recorded.
    second.discard()
    assert len(offloads.names()) == 1


@pytest.mark.parametrize("damage", [b"", b"hal"])
def test_storage_writes_again_content_left_damaged_at_its_name(
    workspace: Workspace, offloads: OffloadStore, damage: bytes
) -> None:
    """An empty or truncated object at the content's name is not the content stored: it
    is replaced whole, and counted as this backend's (it may remove it on a failure)."""
    name = storage_name_for(workspace.pk, digest("half a content"))
    offloads.put(name, damage)
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/a", content="half a content"))
    backend.store()
    assert offloads.names() == [name]
    assert offloads.read_bytes(name) == b"half a content"
    assert backend.staged["/a"].created is True


def test_storage_writes_again_damaged_content_on_a_storage_that_never_replaces(
    workspace: Workspace, settings: Any, offload_dir: Any
) -> None:
    """A plain ``FileSystemStorage`` would save beside the damaged object: it goes first."""
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": offload_dir},
        },
    }
    name = storage_name_for(workspace.pk, digest("whole"))
    (offload_dir / name).parent.mkdir(parents=True)
    (offload_dir / name).write_bytes(b"")
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/a", content="whole"))
    backend.store()
    assert sorted(p.name for p in offload_dir.rglob("*") if p.is_file()) == [name.split("/")[-1]]
    assert (offload_dir / name).read_bytes() == b"whole"


def test_storage_discard_removes_only_unrecorded_content(
    workspace: Workspace, offloads: OffloadStore
) -> None:
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/a", content="kept"))
    record(backend, "/a")
    backend.write(WriteRequest(file_path="/b", content="dropped"))
    backend.store()
    backend.discard()
    assert [offloads.read_bytes(name) for name in offloads.names()] == [b"kept"]
    assert backend.staged == {}
    assert not StagedOffload.objects.exists()


@pytest.mark.parametrize("path", ["", "a\x00b", "/" + "x" * 500])
def test_storage_refuses_bad_paths(workspace: Workspace, path: str, offloads: OffloadStore) -> None:
    with pytest.raises(PathEscapeError):
        DjangoStorageBackend(workspace).write(WriteRequest(file_path=path, content="x"))
    assert offloads.names() == []


def test_storage_keeps_lone_surrogates(workspace: Workspace) -> None:
    """Tool output decoded with surrogateescape round-trips unchanged."""
    text = "bad byte: \udcff"
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/s", content=text))
    record(backend, "/s")
    assert DjangoStorageBackend(workspace).read("/s") == text


def test_storage_discard_goes_on_when_the_storage_fails_too(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A storage that fails the removal as well is logged: the error that made the session
    fail stays the one reported."""
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/a", content="left behind"))
    backend.store()
    name = backend.staged["/a"].storage_name

    def refuse(self: Any, stored: str) -> None:
        raise PermissionError(stored)

    monkeypatch.setattr(type(backend.storage), "delete", refuse)
    backend.discard()
    assert backend.staged == {}
    assert [r.getMessage() for r in caplog.records] == [f"could not remove staged offload {name}"]


def test_storage_reads_a_conversations_recorded_paths_with_one_query(
    workspace: Workspace, django_assert_num_queries: Any
) -> None:
    """With a conversation id, the first read looks up that conversation's files; its
    other recorded paths are then answered without a query, any other path with one."""
    conversation = conversation_upsert(
        workspace=workspace, client_id="c1", message_format="openai_chat"
    )
    writer = DjangoStorageBackend(workspace)
    for n in range(5):
        writer.write(WriteRequest(file_path=f"/tmp/clear/call_{n}", content=f"output {n}"))
        record(writer, f"/tmp/clear/call_{n}")
    OffloadedFile.objects.filter(workspace=workspace).update(conversation=conversation)
    backend = DjangoStorageBackend(workspace, conversation_id="c1")
    with django_assert_num_queries(1):
        assert [backend.read(f"/tmp/clear/call_{n}") for n in range(5)] == [
            f"output {n}" for n in range(5)
        ]
    with django_assert_num_queries(1), pytest.raises(FileNotFoundError):
        backend.read("/tmp/clear/call_9")


def test_storage_finds_paths_other_conversations_recorded(workspace: Workspace) -> None:
    """A path recorded by another conversation (or by none) is still found: the engine
    must not hand it out again for other content."""
    writer = DjangoStorageBackend(workspace)
    writer.write(WriteRequest(file_path="/tmp/clear/call_0", content="theirs"))
    record(writer, "/tmp/clear/call_0")
    conversation_upsert(workspace=workspace, client_id="mine", message_format="openai_chat")
    assert DjangoStorageBackend(workspace, conversation_id="mine").read("/tmp/clear/call_0") == (
        "theirs"
    )


def test_storage_does_not_look_again_for_content_it_read(
    workspace: Workspace, offloads: OffloadStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writing back content just read at a recorded path asks the storage nothing."""
    writer = DjangoStorageBackend(workspace)
    writer.write(WriteRequest(file_path="/a", content="same"))
    record(writer, "/a")
    backend = DjangoStorageBackend(workspace)
    assert backend.read("/a") == "same"
    asked: list[str] = []
    size = backend.storage.size
    monkeypatch.setattr(backend.storage, "size", lambda name: asked.append(name) or size(name))
    backend.write(WriteRequest(file_path="/a", content="same"))
    backend.write(WriteRequest(file_path="/b", content="other"))
    backend.store()
    assert asked == [storage_name_for(workspace.pk, digest("other"))]
    assert backend.staged["/a"].created is False
    # Nor is it journaled again: a client sending its whole history each time has the
    # same contents written back on every request.
    journal = StagedOffload.objects.filter(request=backend.request)
    assert list(journal.values_list("storage_name", flat=True)) == [
        storage_name_for(workspace.pk, digest("other"))
    ]


def test_storage_looks_up_expected_paths_together(
    workspace: Workspace, django_assert_num_queries: Any
) -> None:
    """Expected paths are looked up with the first read, in batches of 400: recorded ones
    are then answered and unrecorded ones are free, without a query; others cost one."""
    writer = DjangoStorageBackend(workspace)
    for n in range(3):
        writer.write(WriteRequest(file_path=f"/tmp/clear/call_{n}", content=f"output {n}"))
        record(writer, f"/tmp/clear/call_{n}")
    backend = DjangoStorageBackend(workspace)
    backend.expect({f"/tmp/clear/call_{n}" for n in range(1200)})
    with django_assert_num_queries(3):  # 1,200 paths: three batches
        assert backend.read("/tmp/clear/call_0") == "output 0"
    with django_assert_num_queries(0):
        assert backend.read("/tmp/clear/call_2") == "output 2"
        with pytest.raises(FileNotFoundError):
            backend.read("/tmp/clear/call_1100")
    with django_assert_num_queries(1), pytest.raises(FileNotFoundError):
        backend.read("/tmp/clear/call_0-2")


def test_storage_expected_paths_of_other_conversations_are_found(
    workspace: Workspace, django_assert_num_queries: Any
) -> None:
    """With a conversation id too, an expected path another conversation recorded is
    found in the same lookup (a model reusing call ids across conversations)."""
    writer = DjangoStorageBackend(workspace)
    writer.write(WriteRequest(file_path="/tmp/clear/call_0", content="theirs"))
    record(writer, "/tmp/clear/call_0")
    conversation_upsert(workspace=workspace, client_id="mine", message_format="openai_chat")
    backend = DjangoStorageBackend(workspace, conversation_id="mine")
    backend.expect({"/tmp/clear/call_0", "/tmp/clear/call_1"})
    with django_assert_num_queries(2):  # the conversation's files, then the expected paths
        assert backend.read("/tmp/clear/call_0") == "theirs"
    with django_assert_num_queries(0), pytest.raises(FileNotFoundError):
        backend.read("/tmp/clear/call_1")


def _shared(workspace: Workspace, conversations: int, path: str, content: str) -> None:
    """``conversations`` conversations that each recorded ``path`` holding ``content``."""
    writer = DjangoStorageBackend(workspace)
    writer.write(WriteRequest(file_path=path, content=content))
    writer.store()
    staged = writer.staged[path]
    for n in range(conversations):
        conversation = conversation_upsert(
            workspace=workspace, client_id=f"run-{n}", message_format="openai_chat"
        )
        OffloadedFile.objects.create(
            workspace=workspace,
            conversation=conversation,
            path=path,
            storage_name=staged.storage_name,
            size_chars=len(content),
            tokens=0,
            sha256=staged.digest,
            phase="clear",
        )


def test_storage_looks_up_a_path_many_conversations_share_by_one_row(
    workspace: Workspace,
) -> None:
    """The expected paths' lookup asks for one row of each path (an index search that
    stops at the first), not every conversation's row of it."""
    _shared(workspace, 30, "/tmp/clear/call_0", "shared")
    backend = DjangoStorageBackend(workspace, conversation_id="mine")
    backend.expect({"/tmp/clear/call_0", "/tmp/clear/call_1"})
    with CaptureQueriesContext(connection) as queries:
        assert backend.digest("/tmp/clear/call_0") == digest("shared")
    [lookup] = [q["sql"] for q in queries.captured_queries if "IN ((SELECT" in q["sql"]]
    assert lookup.count("LIMIT 1") == 2


def test_read_offloads_reads_a_shared_path_once(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A path 30 conversations recorded is read from the storage once, not once a row."""
    _shared(workspace, 30, "/tmp/clear/call_0", "shared")
    opened: list[str] = []
    storage = offload_storage()
    real_open = storage.open
    monkeypatch.setattr(
        storage, "open", lambda name, mode="rb": opened.append(name) or real_open(name, mode)
    )
    contents = read_offloads(workspace, {"/tmp/clear/call_0", "/tmp/clear/call_9"}, storage)
    assert contents == {"/tmp/clear/call_0": "shared"}
    assert opened == [storage_name_for(workspace.pk, digest("shared"))]


def test_storage_digest_comes_from_the_row_without_reading(
    workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The digest of a recorded or staged path is its SHA-256 of UTF-8 (lone surrogates
    kept), answered without opening the stored content; an unknown path is not found."""
    writer = DjangoStorageBackend(workspace)
    writer.write(WriteRequest(file_path="/a", content="é\udc80"))
    record(writer, "/a")
    backend = DjangoStorageBackend(workspace)
    monkeypatch.setattr(backend.storage, "open", lambda *a, **k: pytest.fail("opened"))
    monkeypatch.setattr(backend.storage, "exists", lambda *a, **k: pytest.fail("asked"))
    assert backend.digest("/a") == digest("é\udc80")
    backend.write(WriteRequest(file_path="/a", content="é\udc80"))  # stored: not asked again
    assert backend.digest("/a") == digest("é\udc80")
    with pytest.raises(FileNotFoundError):
        backend.digest("/b")


def test_storage_discard_asks_the_index_once_per_batch(
    workspace: Workspace, offloads: OffloadStore, django_assert_num_queries: Any
) -> None:
    """Cleaning up after a request looks up which of its contents a row names by the
    workspace and the storage names (the ``file_quota`` index), in batches, not one
    unindexed query per content."""
    backend = DjangoStorageBackend(workspace)
    for n in range(3):
        backend.write(WriteRequest(file_path=f"/p{n}", content=f"content {n}"))
    record(backend, "/p0")
    with CaptureQueriesContext(connection) as captured:
        backend.discard()
    # Besides the workspace's lock and the journal rows' delete: the file rows and the
    # journal rows naming any of the contents, each by the workspace's index.
    lookups = [q["sql"] for q in captured.captured_queries if '"storage_name" IN' in q["sql"]]
    assert len(lookups) == 2
    assert all('"workspace_id" =' in sql for sql in lookups)
    assert [offloads.read_bytes(name) for name in offloads.names()] == [b"content 0"]


def test_storage_write_past_max_writes_stores_nothing(
    workspace: Workspace, offloads: OffloadStore
) -> None:
    """One path too many is refused while the engine runs, before anything is stored."""
    backend = DjangoStorageBackend(workspace, max_writes=2)
    for path, text in (("/a", "first"), ("/b", "second")):
        backend.write(WriteRequest(file_path=path, content=text))
    with pytest.raises(LimitExceeded) as refused:
        backend.write(WriteRequest(file_path="/c", content="third"))
    assert str(refused.value) == (
        "this request would offload more than 2 results, over the limit of 2 offloads per "
        "request (REDUCTION_MAX_OFFLOADS); nothing was recorded"
    )
    assert sorted(backend.staged) == ["/a", "/b"]
    backend.discard()
    assert offloads.names() == []
    assert not StagedOffload.objects.exists()


def test_storage_max_writes_counts_a_path_written_again_once(workspace: Workspace) -> None:
    backend = DjangoStorageBackend(workspace, max_writes=1)
    backend.write(WriteRequest(file_path="/a", content="first"))
    backend.write(WriteRequest(file_path="/a", content="first"))
    assert sorted(backend.staged) == ["/a"]


def test_storage_max_writes_comes_from_the_settings(workspace: Workspace, settings: Any) -> None:
    settings.REDUCTION_MAX_OFFLOADS = 1
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/a", content="first"))
    with pytest.raises(LimitExceeded):
        backend.write(WriteRequest(file_path="/b", content="second"))
    settings.REDUCTION_MAX_OFFLOADS = 0
    unlimited = DjangoStorageBackend(workspace)
    for n in range(3):
        unlimited.write(WriteRequest(file_path=f"/{n}", content=f"text {n}"))
    assert len(unlimited.staged) == 3
