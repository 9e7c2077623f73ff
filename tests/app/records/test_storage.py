"""DjangoStorageBackend: the engine's Backend on Django's Storage API, per workspace."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from reduction_app.engine import Backend, PathEscapeError, WriteRequest
from reduction_app.models import OffloadedFile, Workspace
from reduction_app.records.storage import (
    DjangoStorageBackend,
    offload_storage,
    read_stored,
    storage_name_for,
)
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.support import stored_files

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace() -> Workspace:
    return workspace_get_or_create(name="alpha")


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def record(backend: DjangoStorageBackend, path: str) -> OffloadedFile:
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


def test_storage_write_stores_by_digest_and_stages(workspace: Workspace, offload_dir: Path) -> None:
    backend = DjangoStorageBackend(workspace)
    text = "naïve\r\ncontent 🌍\n"
    backend.write(WriteRequest(file_path="/tmp/trunc/c1", content=text))
    name = storage_name_for(workspace.pk, digest(text))
    assert name == f"ws{workspace.pk}/{digest(text)[:2]}/{digest(text)}.txt"
    assert (offload_dir / name).read_bytes() == text.encode()
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


def test_storage_same_content_is_stored_once(workspace: Workspace, offload_dir: Path) -> None:
    first = DjangoStorageBackend(workspace)
    first.write(WriteRequest(file_path="/a", content="same"))
    record(first, "/a")
    second = DjangoStorageBackend(workspace)
    second.write(WriteRequest(file_path="/b", content="same"))
    assert second.staged["/b"].created is False
    assert len(stored_files(offload_dir)) == 1
    # Discarding the second write keeps the content the first one recorded.
    second.discard()
    assert len(stored_files(offload_dir)) == 1


def test_storage_discard_removes_only_unrecorded_content(
    workspace: Workspace, offload_dir: Path
) -> None:
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/a", content="kept"))
    record(backend, "/a")
    backend.write(WriteRequest(file_path="/b", content="dropped"))
    backend.discard()
    assert [p.read_bytes() for p in stored_files(offload_dir)] == [b"kept"]
    assert backend.staged == {}


@pytest.mark.parametrize("path", ["", "a\x00b", "/" + "x" * 500])
def test_storage_refuses_bad_paths(workspace: Workspace, path: str, offload_dir: Path) -> None:
    with pytest.raises(PathEscapeError):
        DjangoStorageBackend(workspace).write(WriteRequest(file_path=path, content="x"))
    assert stored_files(offload_dir) == []


def test_storage_keeps_lone_surrogates(workspace: Workspace) -> None:
    """Tool output decoded with surrogateescape round-trips unchanged."""
    text = "bad byte: \udcff"
    backend = DjangoStorageBackend(workspace)
    backend.write(WriteRequest(file_path="/s", content=text))
    record(backend, "/s")
    assert DjangoStorageBackend(workspace).read("/s") == text
