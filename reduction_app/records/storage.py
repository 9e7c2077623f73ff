"""The engine's ``Backend`` on Django's Storage API, scoped to one workspace.

Content is stored under a name derived from its SHA-256 (so a repeat of the same
content is stored once) as soon as the engine writes it; the database rows that
make it visible are created by ``reductions.services`` in one transaction with the events,
after the engine succeeded. If anything fails, :meth:`discard` removes what this
backend stored and nothing is recorded.

Only the Storage API is used (``open``, ``save``, ``exists``, ``delete``), never a local
path, so the ``offload`` storage may be the local folder or a bucket (``records/s3.py``).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages

from reduction_app.engine import PathEscapeError, WriteRequest
from reduction_app.errors import LimitExceeded
from reduction_app.models import OFFLOAD_PATH_CHARS, OffloadedFile, Workspace

__all__ = [
    "DjangoStorageBackend",
    "StagedWrite",
    "offload_storage",
    "read_offloads",
    "storage_name_for",
]

logger = logging.getLogger(__name__)


def offload_storage() -> Storage:
    return storages["offload"]


def storage_name_for(workspace_id: int, digest: str) -> str:
    """Relative and ``/``-separated, so it is an S3 key (under the storage's location) as
    it is a path under the local folder."""
    return f"ws{workspace_id}/{digest[:2]}/{digest}.txt"


@dataclass(frozen=True)
class StagedWrite:
    path: str
    content: str
    digest: str
    storage_name: str
    size_bytes: int
    created: bool
    """Whether this backend created the stored object (and so may remove it)."""


_LOOKUP_BATCH = 500


def _too_many_writes(limit: int) -> str:
    return (
        f"this request would offload more than {limit} results, over the limit of {limit} "
        "offloads per request (REDUCTION_MAX_OFFLOADS); nothing was recorded"
    )


def _check_path(path: str) -> None:
    if not path or "\x00" in path or len(path) > OFFLOAD_PATH_CHARS:
        raise PathEscapeError(path)


class DjangoStorageBackend:
    """Reads and writes offloads of one workspace through a Django Storage.

    The engine reads every offload path it is about to hand out, to keep paths unique.
    A client that sends its whole history each time (keeping the originals and asking for
    the reduced view) has the engine check the same paths on every request, so the backend
    looks up at once, on its first read, the files of the ``conversation_id`` and the
    paths it was told to :meth:`expect`, and answers those paths without a query: an
    expected path not recorded then is free. Any other path costs one query. Rows are only
    ever added for content already stored, so a path found there holds its content, and
    content named there need not be checked for again. (A path recorded by another
    request after the lookup is caught when this request is recorded, as it would be
    after a query of its own.)
    """

    max_path_chars = OFFLOAD_PATH_CHARS
    """Read by the engine's config check: a ``root_dir`` too long for it is refused."""

    def __init__(
        self,
        workspace: Workspace,
        storage: Storage | None = None,
        *,
        conversation_id: str | None = None,
        max_writes: int | None = None,
    ) -> None:
        self.workspace = workspace
        self.storage = storage or offload_storage()
        self.max_writes = settings.REDUCTION_MAX_OFFLOADS if max_writes is None else max_writes
        """Most paths one backend writes (0: no limit, ``REDUCTION_MAX_OFFLOADS`` unless
        given): one more and :meth:`write` raises ``LimitExceeded`` before storing any of
        it, and :meth:`discard` removes what was stored before."""
        self.staged: dict[str, StagedWrite] = {}
        self.conversation_id = conversation_id
        self._expected: frozenset[str] = frozenset()
        self._known: dict[str, tuple[str, str]] | None = None
        """Recorded path -> (storage name, digest), for the conversation's files and the
        expected paths (loaded on first read)."""
        self._stored: set[str] = set()
        """Storage names known to hold their content."""

    def expect(self, paths: Collection[str]) -> None:
        """Paths the engine is likely to check, looked up together on the first read."""
        self._expected = frozenset(paths)
        self._known = None

    def write(self, request: WriteRequest) -> None:
        limit = self.max_writes
        if limit and len(self.staged) >= limit and request.file_path not in self.staged:
            raise LimitExceeded(_too_many_writes(limit))
        _check_path(request.file_path)
        data = request.content.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        name = storage_name_for(self.workspace.pk, digest)
        created = False
        if name not in self._stored and not self.storage.exists(name):
            saved = self.storage.save(name, ContentFile(data))
            if saved != name:
                # Another writer stored the same content at the same moment; keep one copy.
                self.storage.delete(saved)
            created = saved == name
        self.staged[request.file_path] = StagedWrite(
            request.file_path, request.content, digest, name, len(data), created
        )

    def read(self, path: str) -> str:
        staged = self.staged.get(path)
        if staged is not None:
            return staged.content
        name, _ = self._recorded(path)
        content = read_stored(self.storage, name)
        self._stored.add(name)
        return content

    def digest(self, path: str) -> str:
        """The SHA-256 of the content at ``path``, from its row: nothing is read back."""
        staged = self.staged.get(path)
        if staged is not None:
            return staged.digest
        name, digest = self._recorded(path)
        self._stored.add(name)
        return digest

    def _recorded(self, path: str) -> tuple[str, str]:
        """The storage name and digest recorded for ``path``; ``FileNotFoundError`` if none."""
        if self._known is None:
            self._known = self._look_up_known()
        found = self._known.get(path)
        if found is None and path not in self._expected:
            rows = OffloadedFile.objects.filter(workspace=self.workspace, path=path)
            found = next(iter(rows.values_list("storage_name", "sha256")[:1]), None)
        if found is None:
            raise FileNotFoundError(f"file not found: {path}")
        return found

    def _look_up_known(self) -> dict[str, tuple[str, str]]:
        rows = OffloadedFile.objects.filter(workspace=self.workspace)
        known: dict[str, tuple[str, str]] = {}
        if self.conversation_id:
            own = rows.filter(conversation__client_id=self.conversation_id)
            known.update(
                (p, (n, d)) for p, n, d in own.values_list("path", "storage_name", "sha256")
            )
        wanted = sorted(self._expected.difference(known))
        # In batches, under every database's limit on a query's parameters.
        for start in range(0, len(wanted), _LOOKUP_BATCH):
            batch = rows.filter(path__in=wanted[start : start + _LOOKUP_BATCH])
            known.update(
                (p, (n, d)) for p, n, d in batch.values_list("path", "storage_name", "sha256")
            )
        return known

    def discard(self) -> None:
        """Remove what this backend stored and no recorded file uses.

        Which of its contents a row names is one indexed query per batch of names (the
        workspace and its storage names), so cleaning up after a request of thousands of
        offloads costs a few queries, however many rows the table holds. It runs while
        another error is on its way out: a storage failing here as well (an unreachable S3
        fails every call) is logged, so that error is the one reported.
        """
        created = sorted({s.storage_name for s in self.staged.values() if s.created})
        named: set[str] = set()
        for start in range(0, len(created), _LOOKUP_BATCH):
            batch = created[start : start + _LOOKUP_BATCH]
            rows = OffloadedFile.objects.filter(workspace=self.workspace, storage_name__in=batch)
            named.update(rows.values_list("storage_name", flat=True))
        for name in created:
            if name in named:
                continue
            try:
                self.storage.delete(name)
            except OSError:
                logger.warning("could not remove staged offload %s", name, exc_info=True)
        self.staged.clear()


def read_stored(storage: Storage, name: str) -> str:
    with storage.open(name, "rb") as handle:
        data: bytes = handle.read()
    return data.decode("utf-8", "surrogatepass")


def read_offloads(
    workspace: Workspace, paths: set[str], storage: Storage | None = None
) -> dict[str, str]:
    """The content of each of ``paths`` the workspace holds (one query, then storage reads);
    paths it does not hold, or whose content is gone, are left out."""
    storage = storage or offload_storage()
    rows = OffloadedFile.objects.filter(workspace=workspace, path__in=paths).values_list(
        "path", "storage_name"
    )
    out: dict[str, str] = {}
    for path, name in rows:
        try:
            out[path] = read_stored(storage, name)
        except OSError:
            continue
    return out
