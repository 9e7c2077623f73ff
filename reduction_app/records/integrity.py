"""Whether a workspace's offloaded content is all accounted for: a read-only check.

The stored objects, the names its file rows give and the usage the quota keeps must
agree; :func:`offload_check` reports unnamed, missing and damaged content and a usage that
differs, and apart what requests are storing or left when they died. ``manage.py
offload_check`` prints it (docs/deploying.md, "Checking that every byte is accounted
for").
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field

from django.core.files.storage import Storage
from django.db.models import Max

from reduction_app.models import OffloadedFile, StagedOffload, Workspace
from reduction_app.records.folder import is_temporary
from reduction_app.records.storage import offload_storage

__all__ = [
    "Damage",
    "FileRef",
    "WorkspaceCheck",
    "damage_lines",
    "find_damage",
    "listed_names",
    "offload_check",
    "stored_digest",
    "stored_names",
    "unfinished_names",
]

_BATCH = 500
"""Storage names looked up per query."""
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class FileRef:
    """A file row that names a stored object."""

    path: str
    conversation_id: str | None
    """The conversation's client id; ``None`` for a request that named no conversation."""
    conversation_pk: int | None

    def __str__(self) -> str:
        if self.conversation_pk is None:
            return f"{self.path} (no conversation)"
        return f"{self.path} (conversation {self.conversation_id!r}, id {self.conversation_pk})"


@dataclass(frozen=True)
class Damage:
    """A stored object whose bytes are not those its rows recorded."""

    size_recorded: int
    size_found: int
    sha256_recorded: str
    sha256_found: str
    files: tuple[FileRef, ...]
    """Every row that names the object, by path then conversation."""

    def __str__(self) -> str:
        return (
            f"{self.size_found:,} bytes with SHA-256 {self.sha256_found}, recorded "
            f"{self.size_recorded:,} bytes with SHA-256 {self.sha256_recorded}"
        )


def damage_lines(damaged: Mapping[str, Damage], shown: int) -> list[str]:
    """How the commands list damaged objects: each (the first ``shown``) with what was
    found and recorded, then the files that name it; the rest counted."""
    lines = []
    for name, damage in list(damaged.items())[:shown]:
        lines.append(f"  {name}: {damage}")
        lines.extend(f"    named by {file}" for file in damage.files)
    if len(damaged) > shown:
        lines.append(f"  ... and {len(damaged) - shown} more")
    return lines


@dataclass(frozen=True)
class WorkspaceCheck:
    """What :func:`offload_check` found in one workspace."""

    workspace: Workspace
    stored: int
    """Stored objects under the workspace's prefix."""
    named: int
    """Distinct storage names its rows name."""
    usage_recorded: int
    """``Workspace.offload_bytes``: what the quota counts."""
    usage_stored: int
    """Bytes of the stored objects the rows name."""
    unnamed: dict[str, int] = field(default_factory=dict)
    """Stored object -> its bytes, for every object no row names."""
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Storage name -> the paths of the rows that name it, for every name not stored."""
    staged: dict[str, int] = field(default_factory=dict)
    """Stored object -> its bytes, for every object only journal rows name."""
    damaged: dict[str, Damage] = field(default_factory=dict)
    """Storage name -> how it differs from its rows, for every damaged object."""
    unfinished: dict[str, int] = field(default_factory=dict)
    """Temporary file -> its bytes, for every write in progress or left by a killed
    worker (the local folder only): not content, and not a fault."""
    deep: bool = False
    """Whether every named object was read and its SHA-256 checked."""

    @property
    def consistent(self) -> bool:
        return (
            not self.unnamed
            and not self.missing
            and not self.damaged
            and self.usage_recorded == self.usage_stored
        )


def listed_names(workspace: Workspace, storage: Storage) -> Iterator[str]:
    """Every file under the workspace's prefix: stored objects and temporary files."""
    pending = [f"ws{workspace.pk}"]
    while pending:
        folder = pending.pop()
        try:
            folders, files = storage.listdir(folder)
        except FileNotFoundError:
            continue
        pending.extend(f"{folder}/{name}" for name in folders)
        yield from (f"{folder}/{name}" for name in files)


def stored_names(workspace: Workspace, storage: Storage | None = None) -> Iterator[str]:
    """Every stored object under the workspace's prefix, as storage names; temporary
    files of writes (``records.folder``) are not content and are left out."""
    storage = storage or offload_storage()
    return (n for n in listed_names(workspace, storage) if not is_temporary(posixpath.basename(n)))


def unfinished_names(workspace: Workspace, storage: Storage | None = None) -> Iterator[str]:
    """The temporary files of writes under the workspace's prefix: in progress, or left by
    a worker killed while writing."""
    storage = storage or offload_storage()
    return (n for n in listed_names(workspace, storage) if is_temporary(posixpath.basename(n)))


def stored_digest(storage: Storage, name: str) -> str:
    """The SHA-256 of the object at ``name``, read in chunks."""
    digest = hashlib.sha256()
    with storage.open(name, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def find_damage(
    workspace: Workspace,
    sizes: dict[str, int],
    *,
    deep: bool = False,
    storage: Storage | None = None,
) -> dict[str, Damage]:
    """Those of the stored objects ``sizes`` (name -> bytes, as listed) that rows of the
    workspace name and whose bytes are not what the rows recorded, sorted by name.

    A size that differs is confirmed by reading the object's digest; ``deep`` reads every
    object the rows name. Objects no row names are not looked at.
    """
    storage = storage or offload_storage()
    recorded = _recorded(workspace, sizes)
    found: dict[str, tuple[int, str]] = {}
    for name, (size, sha256) in sorted(recorded.items()):
        if not deep and sizes[name] == size:
            continue
        try:
            digest = stored_digest(storage, name)
        except FileNotFoundError:
            continue  # removed meanwhile: a purge, or a request that failed
        if digest != sha256:
            found[name] = (size, digest)
    files = _files(workspace, found)
    return {
        name: Damage(
            size_recorded=size,
            size_found=sizes[name],
            sha256_recorded=recorded[name][1],
            sha256_found=digest,
            files=tuple(files.get(name, ())),
        )
        for name, (size, digest) in found.items()
    }


def _recorded(workspace: Workspace, names: Collection[str]) -> dict[str, tuple[int, str]]:
    """Storage name -> (bytes, SHA-256) its rows recorded, for those of ``names`` a row names."""
    wanted = sorted(names)
    out: dict[str, tuple[int, str]] = {}
    for start in range(0, len(wanted), _BATCH):
        rows = (
            OffloadedFile.objects.filter(
                workspace=workspace, storage_name__in=wanted[start : start + _BATCH]
            )
            .values_list("storage_name", "sha256")
            .order_by()
            .annotate(size=Max("size_bytes"))
        )
        out.update((name, (size, sha256)) for name, sha256, size in rows)
    return out


def _files(workspace: Workspace, names: Collection[str]) -> dict[str, list[FileRef]]:
    wanted = sorted(names)
    out: dict[str, list[FileRef]] = {}
    for start in range(0, len(wanted), _BATCH):
        rows = (
            OffloadedFile.objects.filter(
                workspace=workspace, storage_name__in=wanted[start : start + _BATCH]
            )
            .order_by("storage_name", "path", "conversation_id")
            .values_list("storage_name", "path", "conversation__client_id", "conversation_id")
        )
        for name, path, client_id, pk in rows:
            out.setdefault(name, []).append(FileRef(path, client_id, pk))
    return out


def offload_check(
    *, workspace: Workspace, deep: bool = False, storage: Storage | None = None
) -> WorkspaceCheck:
    storage = storage or offload_storage()
    rows = OffloadedFile.objects.filter(workspace=workspace)
    paths: dict[str, list[str]] = {}
    # Conversations that offloaded the same content to the same path each have a row.
    named = rows.values_list("storage_name", "path").order_by("storage_name", "path").distinct()
    for name, path in named:
        paths.setdefault(name, []).append(path)
    listed = list(listed_names(workspace, storage))
    stored = {n: storage.size(n) for n in listed if not is_temporary(posixpath.basename(n))}
    unfinished = {}
    for name in sorted(set(listed).difference(stored)):
        try:
            unfinished[name] = storage.size(name)
        except FileNotFoundError:
            continue  # renamed into place (or removed) since the listing
    journaled = set(
        StagedOffload.objects.filter(workspace=workspace).values_list("storage_name", flat=True)
    )
    usage_recorded = Workspace.objects.values_list("offload_bytes", flat=True).get(pk=workspace.pk)
    return WorkspaceCheck(
        workspace=workspace,
        stored=len(stored),
        named=len(paths),
        usage_recorded=usage_recorded,
        usage_stored=sum(size for name, size in stored.items() if name in paths),
        unnamed={
            name: size
            for name, size in sorted(stored.items())
            if name not in paths and name not in journaled
        },
        staged={
            name: size
            for name, size in sorted(stored.items())
            if name not in paths and name in journaled
        },
        missing={name: found for name, found in paths.items() if name not in stored},
        damaged=find_damage(
            workspace,
            {name: size for name, size in stored.items() if name in paths},
            deep=deep,
            storage=storage,
        ),
        unfinished=unfinished,
        deep=deep,
    )
