"""The offload storage on the local folder (the default, ``OFFLOAD_STORAGE=local``): Django's
``FileSystemStorage`` whose writes cannot be half-done.

A content is written to a temporary file, flushed and renamed onto its name, so a worker
killed mid-write leaves the whole content or none of it (and a temporary file the
reclaim removes); S3 needs none of this.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from typing import Any

from django.core.files.storage import FileSystemStorage

__all__ = ["TEMPORARY_PREFIX", "TEMPORARY_SUFFIX", "OffloadFolderStorage", "is_temporary"]

TEMPORARY_PREFIX = "."
TEMPORARY_SUFFIX = ".partial"
"""A content being written is at ``.<its name>.<random>.partial`` beside its name: a name
no content has (content names are ``<sha256>.txt``, ``records.storage``)."""


def is_temporary(basename: str) -> bool:
    """Whether a file name in the folder is a write in progress, or one a killed worker
    left, rather than stored content."""
    return basename.startswith(TEMPORARY_PREFIX) and basename.endswith(TEMPORARY_SUFFIX)


class OffloadFolderStorage(FileSystemStorage):
    """``FileSystemStorage`` that writes to a temporary name and renames it into place.

    Saving at a name that holds something replaces it (``allow_overwrite``): a name is
    the content's digest, so a second writer writes the same bytes, and a damaged object
    is replaced whole by the next request that stores its content. Temporary names start
    with :data:`TEMPORARY_PREFIX` and end with :data:`TEMPORARY_SUFFIX`; listings of
    stored content skip them."""

    def __init__(
        self,
        location: str | os.PathLike[str] | None = None,
        base_url: str | None = None,
        file_permissions_mode: int | None = None,
        directory_permissions_mode: int | None = None,
        allow_overwrite: bool = True,
    ) -> None:
        super().__init__(
            location,
            base_url,
            file_permissions_mode,
            directory_permissions_mode,
            allow_overwrite=allow_overwrite,
        )

    def _save(self, name: str, content: Any) -> str:
        full_path = self.path(name)
        folder, basename = os.path.split(full_path)
        self._make_folders(folder)
        fd, temporary = self._create_temporary(folder, basename)
        try:
            try:
                self._write_chunks(fd, content)
                os.fsync(fd)
            finally:
                os.close(fd)
            if self.file_permissions_mode is not None:
                os.chmod(temporary, self.file_permissions_mode)
            self._take_location_group(temporary)
            # The rename alone is not flushed (no fsync of the folder): lost to a power
            # cut, it leaves the content missing, which reads as a storage failure and
            # which the next request storing it writes again, never a damaged file.
            self._install(temporary, full_path)
        except BaseException:
            # One left (the disk failing twice) is the reclaim's to remove.
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return os.path.relpath(full_path, self.location).replace("\\", "/")

    def _make_folders(self, folder: str) -> None:
        mode = self.directory_permissions_mode
        if mode is None:
            os.makedirs(folder, exist_ok=True)
            return
        # os.makedirs would apply the mode to the last folder only (and through the umask).
        missing = []
        while not os.path.isdir(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for path in reversed(missing):
            with contextlib.suppress(FileExistsError):  # another writer made it first
                os.mkdir(path)
                os.chmod(path, mode)

    def _create_temporary(self, folder: str, basename: str) -> tuple[int, str]:
        """A new, empty temporary file in ``folder`` for content named ``basename``: its
        descriptor (open for writing) and its path."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
        while True:
            temporary = os.path.join(
                folder, f"{TEMPORARY_PREFIX}{basename}.{secrets.token_hex(6)}{TEMPORARY_SUFFIX}"
            )
            try:
                return os.open(temporary, flags, 0o666), temporary
            except FileExistsError:
                continue  # 48 random bits taken already: draw again

    def _write_chunks(self, fd: int, content: Any) -> None:
        with os.fdopen(os.dup(fd), "wb") as handle:
            for chunk in content.chunks():
                handle.write(chunk if isinstance(chunk, bytes) else chunk.encode())

    def _take_location_group(self, path: str) -> None:
        """Give the file the folder's group, as ``FileSystemStorage`` gives what it saves."""
        if os.name != "posix":
            return
        group = os.stat(self.location).st_gid
        if os.stat(path).st_gid != group:
            with contextlib.suppress(PermissionError):
                os.chown(path, uid=-1, gid=group)

    def _install(self, temporary: str, full_path: str) -> None:
        """Put the written temporary file at its name, replacing what is there."""
        os.replace(temporary, full_path)
