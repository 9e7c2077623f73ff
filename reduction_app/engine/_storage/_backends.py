"""Storage backends: where offloaded tool output is written and read back. The protocol
(``write``, ``read``, the optional ``digest`` and ``max_path_chars``) is described in
docs/engine.md, "Storage backends"; the Django app adds a backend on Django's Storage API,
which this module knows nothing of.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from reduction_app.engine.errors import PathEscapeError

__all__ = ["Backend", "InMemoryBackend", "LocalFileBackend", "WriteRequest"]


@dataclass(frozen=True, kw_only=True)
class WriteRequest:
    """One file to write: its path and its whole content."""

    file_path: str
    content: str


@runtime_checkable
class Backend(Protocol):
    """What the engine needs from storage."""

    def write(self, request: WriteRequest) -> Awaitable[None] | None:
        """Store ``request.content`` at ``request.file_path``, replacing any earlier content."""

    def read(self, path: str) -> str | Awaitable[str]:
        """Return the content stored at ``path``; raise ``FileNotFoundError`` if there is none."""


class InMemoryBackend:
    """A backend in a dict: for tests, the simulator and short-lived agents."""

    def __init__(self) -> None:
        self._files: dict[str, str] = {}
        self._lock = threading.Lock()

    def write(self, request: WriteRequest) -> None:
        with self._lock:
            self._files[request.file_path] = request.content

    def read(self, path: str) -> str:
        with self._lock:
            try:
                return self._files[path]
            except KeyError:
                raise FileNotFoundError(f"file not found: {path}") from None

    @property
    def files(self) -> dict[str, str]:
        """A snapshot of every stored path and its content."""
        with self._lock:
            return dict(self._files)

    def __contains__(self, path: object) -> bool:
        with self._lock:
            return path in self._files

    def __len__(self) -> int:
        with self._lock:
            return len(self._files)


def confine(root: Path, path: str) -> Path:
    """Resolve ``path`` relative to ``root`` and refuse anything that would leave it.

    A leading ``/`` is ignored, so the engine's default ``/tmp/trunc/...`` paths land
    under the root. ``..`` is resolved lexically first; a result outside ``root``
    raises :class:`PathEscapeError`. NUL bytes and empty paths are refused too.
    """
    if not path or "\x00" in path:
        raise PathEscapeError(path)
    parts: list[str] = []
    for piece in PurePosixPath(path.replace("\\", "/")).parts:
        if piece in ("/", "", "."):
            continue
        if piece == "..":
            if not parts:
                raise PathEscapeError(path)
            parts.pop()
            continue
        parts.append(piece)
    if not parts:
        raise PathEscapeError(path)
    return root.joinpath(*parts)


class LocalFileBackend:
    """A backend in a local folder. Every path is taken relative to ``root`` and kept in it.

    Writes are atomic: the content goes to a temporary file in the same folder, which
    is then renamed to the file's own path, so a reader never sees half a file. Text is
    stored as UTF-8 with newlines untouched, so a read returns exactly what was written.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()

    def path_for(self, path: str) -> Path:
        """The local file that holds ``path``."""
        return confine(self.root, path)

    def write(self, request: WriteRequest) -> None:
        target = self.path_for(request.file_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".part")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(request.content)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)
            raise

    def read(self, path: str) -> str:
        target = self.path_for(path)
        try:
            with open(target, encoding="utf-8", newline="") as handle:
                return handle.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise FileNotFoundError(f"file not found: {path}") from None
