"""The local folder's offload storage: a write is whole at its name or not there at all,
the temporary file it goes through is never left by a write that fails, and
``FileSystemStorage``'s options still apply."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.base import ContentFile, File

from reduction_app.records.folder import OffloadFolderStorage, is_temporary

NAME = "ws1/ab/abcd.txt"


def files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_folder_storage_saves_at_the_name_and_leaves_no_temporary(tmp_path: Path) -> None:
    storage = OffloadFolderStorage(location=tmp_path)
    assert storage.save(NAME, ContentFile(b"whole content")) == NAME
    assert files(tmp_path) == [NAME]
    assert (tmp_path / NAME).read_bytes() == b"whole content"


def test_folder_storage_replaces_what_is_at_the_name(tmp_path: Path) -> None:
    """An empty file a killed writer left is replaced, not saved beside."""
    (tmp_path / "ws1" / "ab").mkdir(parents=True)
    (tmp_path / NAME).write_bytes(b"")
    storage = OffloadFolderStorage(location=tmp_path)
    assert storage.save(NAME, ContentFile(b"whole content")) == NAME
    assert files(tmp_path) == [NAME]
    assert (tmp_path / NAME).read_bytes() == b"whole content"


class _Breaking(File[bytes]):
    """Content whose second chunk cannot be read: a write that fails half-way."""

    def __init__(self) -> None:
        super().__init__(None, name="breaking")

    def chunks(self, chunk_size: int | None = None) -> Iterator[bytes]:
        yield b"first half "
        raise OSError(28, "No space left on device")


def test_folder_storage_write_that_fails_leaves_nothing(tmp_path: Path) -> None:
    """Neither a partial file at the name nor the temporary: what was there stays."""
    (tmp_path / "ws1" / "ab").mkdir(parents=True)
    (tmp_path / NAME).write_bytes(b"old")
    storage = OffloadFolderStorage(location=tmp_path)
    with pytest.raises(OSError, match="No space left on device"):
        storage.save(NAME, _Breaking())
    assert files(tmp_path) == [NAME]
    assert (tmp_path / NAME).read_bytes() == b"old"


def test_folder_storage_keeps_the_permission_options(tmp_path: Path) -> None:
    storage = OffloadFolderStorage(
        location=tmp_path, file_permissions_mode=0o640, directory_permissions_mode=0o750
    )
    storage.save(NAME, ContentFile(b"x"))
    assert stat.S_IMODE(os.stat(tmp_path / NAME).st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "ws1").st_mode) == 0o750
    assert stat.S_IMODE(os.stat(tmp_path / "ws1" / "ab").st_mode) == 0o750


def test_folder_storage_can_still_refuse_to_overwrite(tmp_path: Path) -> None:
    """``allow_overwrite=False`` in OPTIONS saves beside what is there, as Django does."""
    storage = OffloadFolderStorage(location=tmp_path, allow_overwrite=False)
    storage.save(NAME, ContentFile(b"one"))
    other = storage.save(NAME, ContentFile(b"two"))
    assert other != NAME
    assert (tmp_path / NAME).read_bytes() == b"one"
    assert (tmp_path / other).read_bytes() == b"two"


def test_folder_storage_temporary_names_are_not_content_names(tmp_path: Path) -> None:
    storage = OffloadFolderStorage(location=tmp_path)
    fd, temporary = storage._create_temporary(str(tmp_path), "abcd.txt")
    os.close(fd)
    name = os.path.basename(temporary)
    assert name.startswith(".abcd.txt.") and name.endswith(".partial")
    assert is_temporary(name)
    assert not is_temporary("abcd.txt")
    assert not is_temporary(".abcd.txt")
