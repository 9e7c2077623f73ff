"""The engine's ``Backend`` on Django's Storage API, scoped to one workspace.

Content is stored once under its SHA-256, journaled before it is stored and made
visible only by the rows ``reductions.services`` writes, so nothing a request answers
points at content that is not stored whole, and a request that dies leaves a journal
the reclaim follows. Only the Storage API is used: local folder or bucket alike.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages
from django.db import DatabaseError, transaction
from django.utils import timezone

from reduction_app.engine import OffloadError, PathEscapeError, WriteRequest
from reduction_app.errors import LimitExceeded
from reduction_app.models import OFFLOAD_PATH_CHARS, OffloadedFile, StagedOffload, Workspace
from reduction_app.queries import one_row_each
from reduction_app.workspaces.quotas import lock_workspace, offload_bytes_stage

__all__ = [
    "DamagedContent",
    "DjangoStorageBackend",
    "StagedWrite",
    "names_in_use",
    "offload_storage",
    "read_offloads",
    "read_verified",
    "save_replacing",
    "storage_name_for",
    "verify_stored",
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
    created: bool = False
    """Whether this backend stored the object (and so may remove it): set by ``store``."""

    @property
    def content_bytes(self) -> bytes:
        return self.content.encode("utf-8", "surrogatepass")


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
    expected path not recorded then is free. Any other path costs one query. A path many
    conversations recorded is read as one of its rows (all name its one content), so
    neither lookup grows with the conversations before this one. Rows are only
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
        on_dead_rows: Callable[[Workspace], None] | None = None,
    ) -> None:
        self.workspace = workspace
        self.on_dead_rows = on_dead_rows
        """Called with the workspace when journaling finds rows a request that died left
        there (``records.reclaim.reclaim_later`` queues their reclaim)."""
        self.storage = storage or offload_storage()
        self.max_writes = settings.REDUCTION_MAX_OFFLOADS if max_writes is None else max_writes
        """Most paths one backend writes (0: no limit, ``REDUCTION_MAX_OFFLOADS`` unless
        given): one more and :meth:`write` raises ``LimitExceeded`` before storing any of
        it, and :meth:`discard` removes what was stored before."""
        self.staged: dict[str, StagedWrite] = {}
        self.request = uuid.uuid4()
        """This request's journal rows (``StagedOffload.request``)."""
        self.conversation_id = conversation_id
        self._expected: frozenset[str] = frozenset()
        self._expecting: Callable[[], Collection[str]] | None = None
        self._known: dict[str, tuple[str, str]] | None = None
        """Recorded path -> (storage name, digest), for the conversation's files and the
        expected paths (loaded on first read)."""
        self._stored: set[str] = set()
        """Storage names known to hold their content."""
        self._journaled: set[str] = set()
        """Storage names this request journaled (and so stored, or is storing)."""

    def expect(self, paths: Collection[str] | Callable[[], Collection[str]]) -> None:
        """Paths the engine is likely to check, looked up together on the first read; or
        what gives them, called then (a call that reads nothing never works them out)."""
        self._expecting = paths if callable(paths) else None
        self._expected = frozenset() if callable(paths) else frozenset(paths)
        self._known = None

    def write(self, request: WriteRequest) -> None:
        """Hold ``request``'s content for :meth:`store`: the engine reads it back from here."""
        limit = self.max_writes
        if limit and len(self.staged) >= limit and request.file_path not in self.staged:
            raise LimitExceeded(_too_many_writes(limit))
        _check_path(request.file_path)
        data = request.content.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        name = storage_name_for(self.workspace.pk, digest)
        self.staged[request.file_path] = StagedWrite(
            request.file_path, request.content, digest, name, len(data)
        )

    def store(self, phases: Mapping[str, str] | None = None) -> None:
        """Journal, then store, every content written since the last call: before anything
        names it.

        The journal rows of the contents are written in one transaction with the quota
        check (staged bytes count, ``workspaces.quotas``), committed before the first byte
        is stored; then each content not stored whole yet is saved: one found at its name
        with another size (a write that stopped half-way) is written again, replacing it
        (:func:`_holds`). Raises
        :class:`~reduction_app.errors.QuotaExceeded` before storing anything when the
        contents would take the workspace over its quota, and
        :class:`~reduction_app.engine.OffloadError` (named by the path and its phase in
        ``phases``) when the storage fails. Run it outside a transaction, so the journal
        outlives a request that dies while storing.
        """
        pending = {w.storage_name: w for w in self.staged.values()}
        # Content a row named when this request looked (what it read back, or wrote again
        # at a recorded path) is stored: recording checks a row still names it.
        for name in self._journaled | self._stored:
            pending.pop(name, None)
        if not pending:
            return
        sizes = {name: w.size_bytes for name, w in pending.items()}
        with transaction.atomic():
            dead = offload_bytes_stage(workspace=self.workspace, request=self.request, sizes=sizes)
            now = timezone.now()
            StagedOffload.objects.bulk_create(
                StagedOffload(
                    workspace=self.workspace,
                    request=self.request,
                    storage_name=name,
                    size_bytes=size,
                    staged_at=now,
                )
                for name, size in sizes.items()
            )
        self._journaled.update(sizes)
        if dead and self.on_dead_rows is not None:
            self.on_dead_rows(self.workspace)
        created: set[str] = set()
        try:
            for name, staged in pending.items():
                if name in self._stored:
                    continue
                try:
                    if not _holds(self.storage, name, staged.size_bytes) and self._save(staged):
                        created.add(name)
                except OSError as exc:
                    phase = (phases or {}).get(staged.path, "offload")
                    raise OffloadError(phase, staged.path, exc) from exc
                self._stored.add(name)
        finally:
            if created:
                self.staged = {
                    path: replace(w, created=True) if w.storage_name in created else w
                    for path, w in self.staged.items()
                }

    def _save(self, staged: StagedWrite) -> bool:
        """Store ``staged``'s content, replacing what is at its name (nothing, or an object
        of the wrong size); whether this call created the stored object.

        On the local folder (``records/folder.py``) and on S3 a save replaces what is
        there, whole: another writer of the same name at the same moment writes the same
        bytes, and readers see the one object or the other, never a mix. A storage that
        never replaces (a plain ``FileSystemStorage``) saves beside an object that is
        there: a damaged one is removed first, and a save beside one another writer just
        stored is removed again.
        """
        return save_replacing(self.storage, staged.storage_name, staged.content_bytes)

    @property
    def journaled(self) -> frozenset[str]:
        """The storage names this request journaled; any other it names was named by a
        row when it looked."""
        return frozenset(self._journaled)

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
        if self._expecting is not None:
            self._expected, self._expecting = frozenset(self._expecting()), None
        if self._known is None:
            self._known = self._look_up_known()
        found = self._known.get(path)
        if found is None and path not in self._expected:
            # One row of the path's (all name its one content), found through the index.
            rows = OffloadedFile.objects.filter(workspace=self.workspace, path=path).order_by()
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
        # Every conversation that named a path has a row of it, all naming its one content:
        # one row each, so the lookup costs the same after one conversation or thousands.
        for batch in one_row_each(rows, "path", self._expected.difference(known)):
            known.update(
                (p, (n, d)) for p, n, d in batch.values_list("path", "storage_name", "sha256")
            )
        return known

    def discard(self) -> None:
        """Remove what this backend stored and nothing else names, and its journal rows.

        In one transaction holding the workspace's lock (as purges, deletes and reclaims
        do), so no other request can come to name the content between the check and the
        removal: which of its contents a row (another request's journal, a file row)
        names is one indexed query per batch of names. It runs while another error is on
        its way out: a storage or a database failing here as well (an unreachable S3, a
        lost connection) is logged, so that error is the one reported; the journal rows
        then left are the reclaim's to find.
        """
        created = sorted({s.storage_name for s in self.staged.values() if s.created})
        self.staged.clear()
        try:
            with transaction.atomic():
                lock_workspace(self.workspace)
                StagedOffload.objects.filter(request=self.request).delete()
                named = names_in_use(self.workspace, created)
                for name in created:
                    if name in named:
                        continue
                    try:
                        self.storage.delete(name)
                    except OSError:
                        logger.warning("could not remove staged offload %s", name, exc_info=True)
        except DatabaseError:
            logger.warning("could not clean up a failed request's offloads", exc_info=True)


def names_in_use(workspace: Workspace, names: Collection[str]) -> set[str]:
    """Those of ``names`` a file row or a journal row of the workspace names: one indexed
    query of each per batch of names."""
    wanted = sorted(names)
    used: set[str] = set()
    for start in range(0, len(wanted), _LOOKUP_BATCH):
        batch = wanted[start : start + _LOOKUP_BATCH]
        for model in (OffloadedFile, StagedOffload):
            rows = model.objects.filter(workspace=workspace, storage_name__in=batch)
            used.update(rows.values_list("storage_name", flat=True))
    return used


def _holds(storage: Storage, name: str, size: int) -> bool:
    """Whether ``name`` is stored with ``size`` bytes: content counts as stored only whole.

    One size look-up, no read. The size is what a write that stopped half-way gets wrong
    (an empty or truncated file left by a worker killed mid-write, before writes were
    atomic). The digest is not read back: an object at its name was written whole, by a
    writer that named it by the digest of the bytes it wrote, so bytes of the right size
    but another digest take a fault of the disk itself, which ``offload_check --deep``
    finds and which reading the file through the API refuses to serve
    (:func:`read_verified`).
    """
    try:
        return storage.size(name) == size
    except FileNotFoundError:
        return False


def save_replacing(storage: Storage, name: str, data: bytes) -> bool:
    """Store ``data`` at ``name``, replacing what is there; whether the object at ``name``
    is this call's (``False``: another writer stored the same name at the same moment, on
    a storage that never replaces)."""
    if storage.get_available_name(name) != name:
        # Something is at the name and the storage would save beside it: it is not whole
        # (the caller found it so) or another writer has just stored the same bytes, and
        # it goes either way, as this save puts the content back; a reader meanwhile
        # finds it missing. The local folder and S3 replace, and never come here.
        storage.delete(name)
    saved = storage.save(name, ContentFile(data))
    if saved != name:
        # Another writer stored the same content at the same moment; keep one copy.
        storage.delete(saved)
        return False
    return True


class DamagedContent(OSError):
    """A stored object whose bytes are not those its rows recorded (another size or
    SHA-256): it is never served as the file's content."""

    def __init__(self, name: str, expected: str, found: str) -> None:
        super().__init__(f"{name}: SHA-256 {found} where {expected} was recorded")
        self.name = name
        self.expected = expected
        self.found = found


def read_verified(storage: Storage, name: str, sha256: str) -> bytes:
    """The bytes stored at ``name``, checked against the recorded ``sha256``: raises
    :class:`DamagedContent` when they differ. Hashing costs little next to reading."""
    with storage.open(name, "rb") as handle:
        data: bytes = handle.read()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        raise DamagedContent(name, sha256, found)
    return data


_HASH_CHUNK = 1024 * 1024


def verify_stored(storage: Storage, name: str, sha256: str) -> None:
    """Raise :class:`DamagedContent` unless the object at ``name`` hashes to ``sha256``;
    read in chunks, for pages that then stream or page through it."""
    digest = hashlib.sha256()
    with storage.open(name, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    found = digest.hexdigest()
    if found != sha256:
        raise DamagedContent(name, sha256, found)


class Chunks(Protocol):
    """What a stored file is read through: a storage's file, or any binary stream."""

    def read(self, size: int = ..., /) -> bytes: ...


_LINE_CHUNK = 64 * 1024


def stored_lines(handle: Chunks) -> Iterator[str]:
    """The lines of a stored file, read a chunk at a time, as ``GET /api/v1/files/read``
    numbers them: they end at ``\\n``, a ``\\r`` before it is not shown, and a final
    ``\\n`` starts no new line. For display and search only (the raw download has the
    exact bytes): a lone surrogate the engine stored, which cannot go out as UTF-8, is
    shown as U+FFFD."""
    rest = b""
    while chunk := handle.read(_LINE_CHUNK):
        *complete, rest = (rest + chunk).split(b"\n")
        for line in complete:
            yield line.removesuffix(b"\r").decode("utf-8", "replace")
    if rest:
        yield rest.removesuffix(b"\r").decode("utf-8", "replace")


def read_stored(storage: Storage, name: str) -> str:
    with storage.open(name, "rb") as handle:
        data: bytes = handle.read()
    return data.decode("utf-8", "surrogatepass")


def read_offloads(
    workspace: Workspace, paths: set[str], storage: Storage | None = None
) -> dict[str, str]:
    """The content of each of ``paths`` the workspace holds (a query per 400 paths, then a
    storage read each); paths it does not hold, or whose content is gone, are left out.
    A path every conversation named is one row, read once."""
    storage = storage or offload_storage()
    files = OffloadedFile.objects.filter(workspace=workspace)
    out: dict[str, str] = {}
    for batch in one_row_each(files, "path", paths):
        for path, name in batch.values_list("path", "storage_name"):
            try:
                out[path] = read_stored(storage, name)
            except OSError:
                continue
    return out
