"""Tests for the storage backends: in memory, and a local folder (atomic writes,
exact read-back, paths confined to the root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reduction_app.engine import Backend, InMemoryBackend, LocalFileBackend, WriteRequest
from reduction_app.engine.errors import PathEscapeError


def write(backend: InMemoryBackend | LocalFileBackend, path: str, content: str) -> None:
    backend.write(WriteRequest(file_path=path, content=content))


# InMemoryBackend -----------------------------------------------------------------------


def test_in_memory_backend_reads_back_what_was_written() -> None:
    backend = InMemoryBackend()
    write(backend, "/tmp/trunc/c1", "line 1\r\n天气")
    assert backend.read("/tmp/trunc/c1") == "line 1\r\n天气"
    assert "/tmp/trunc/c1" in backend
    assert len(backend) == 1


def test_in_memory_backend_overwrites() -> None:
    backend = InMemoryBackend()
    write(backend, "/p", "old")
    write(backend, "/p", "new")
    assert backend.files == {"/p": "new"}


def test_in_memory_backend_missing_file_raises_file_not_found() -> None:
    """Case 29's message."""
    with pytest.raises(FileNotFoundError) as info:
        InMemoryBackend().read("/tmp/clear/call_123456789")
    assert str(info.value) == "file not found: /tmp/clear/call_123456789"


def test_in_memory_backend_files_is_a_snapshot() -> None:
    backend = InMemoryBackend()
    write(backend, "/p", "a")
    snapshot = backend.files
    snapshot["/q"] = "b"
    write(backend, "/p", "changed")
    assert snapshot == {"/p": "a", "/q": "b"}
    assert backend.files == {"/p": "changed"}


def test_backends_satisfy_the_protocol(tmp_path: Path) -> None:
    assert isinstance(InMemoryBackend(), Backend)
    assert isinstance(LocalFileBackend(tmp_path), Backend)


# LocalFileBackend ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    ["plain", "crlf\r\nlines\r\n", "lone\rcarriage", "天气晴朗，微风 🌤\n", "", "\t<tab> & \u2028"],
)
def test_local_backend_reads_back_exactly(tmp_path: Path, content: str) -> None:
    backend = LocalFileBackend(tmp_path)
    write(backend, "/tmp/trunc/c1", content)
    assert backend.read("/tmp/trunc/c1") == content
    assert (tmp_path / "tmp/trunc/c1").read_bytes() == content.encode("utf-8")


def test_local_backend_ignores_a_leading_slash(tmp_path: Path) -> None:
    backend = LocalFileBackend(tmp_path)
    write(backend, "/tmp/trunc/c1", "abs")
    assert backend.read("tmp/trunc/c1") == "abs"
    assert backend.path_for("/tmp/trunc/c1") == tmp_path.resolve() / "tmp" / "trunc" / "c1"


def test_local_backend_resolves_dot_dot_inside_the_root(tmp_path: Path) -> None:
    backend = LocalFileBackend(tmp_path)
    write(backend, "a/./b/../c", "inside")
    assert (tmp_path / "a/c").read_text(encoding="utf-8") == "inside"


@pytest.mark.parametrize(
    "path", ["../outside", "/../outside", "a/../../outside", "..", "a\\..\\..\\x"]
)
def test_local_backend_refuses_paths_that_escape(tmp_path: Path, path: str) -> None:
    backend = LocalFileBackend(tmp_path / "root")
    with pytest.raises(PathEscapeError) as info:
        write(backend, path, "x")
    assert str(info.value) == f"path {path!r} is outside the storage root"
    assert info.value.path == path
    with pytest.raises(PathEscapeError):
        backend.read(path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", ["a\x00b", "", "/", "./."])
def test_local_backend_refuses_nul_and_empty_paths(tmp_path: Path, path: str) -> None:
    with pytest.raises(PathEscapeError, match="is outside the storage root"):
        write(LocalFileBackend(tmp_path), path, "x")


def test_local_backend_overwrites_atomically_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    backend = LocalFileBackend(tmp_path)
    write(backend, "/d/f", "old")
    write(backend, "/d/f", "new")
    assert backend.read("/d/f") == "new"
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["f"]


def test_local_backend_failed_write_keeps_the_old_content(tmp_path: Path) -> None:
    """A write that fails part-way (a lone surrogate cannot be encoded) changes nothing."""
    backend = LocalFileBackend(tmp_path)
    write(backend, "/d/f", "old")
    with pytest.raises(UnicodeEncodeError):
        write(backend, "/d/f", "new \ud800")
    assert backend.read("/d/f") == "old"
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["f"]


def test_local_backend_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    backend = LocalFileBackend(tmp_path)
    with pytest.raises(FileNotFoundError) as info:
        backend.read("/tmp/clear/none")
    assert str(info.value) == "file not found: /tmp/clear/none"
    os.makedirs(tmp_path / "dir")
    with pytest.raises(FileNotFoundError, match=r"^file not found: /dir$"):
        backend.read("/dir")


def test_local_backend_reopened_on_the_same_folder_reads_earlier_files(tmp_path: Path) -> None:
    write(LocalFileBackend(tmp_path), "/tmp/trunc/c1", "kept\r\n")
    assert LocalFileBackend(str(tmp_path)).read("/tmp/trunc/c1") == "kept\r\n"


def test_local_backend_resolves_a_relative_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    backend = LocalFileBackend("store")
    assert backend.root == tmp_path.resolve() / "store"
    write(backend, "x", "y")
    assert (tmp_path / "store/x").read_text(encoding="utf-8") == "y"
