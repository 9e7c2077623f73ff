"""Whether a workspace's offloaded content is all accounted for: a read-only check.

Three things must agree for every workspace: the stored objects under its prefix
(``ws<id>/``, ``records.storage.storage_name_for``), the storage names its file rows
name, and the usage ``Workspace.offload_bytes`` keeps for the quota. The check reports

* **unnamed** stored objects: content neither a file row nor a request's journal row
  (``StagedOffload``) names, invisible to purge and to the quota;
* **missing** content: rows whose stored object is gone, which read as a storage failure;
* a **usage** that differs from the bytes of the distinct content the rows name, as the
  storage holds them.

Content only a journal row names belongs to a request storing at that moment, or to one
that died and that ``records.reclaim`` has not reclaimed yet: it is counted by the quota,
and reported apart (``staged``), not as a fault. It changes nothing; ``manage.py
offload_check`` prints it. Reading every stored object's
size is one storage call each: on S3, one request per object.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from django.core.files.storage import Storage

from reduction_app.models import OffloadedFile, StagedOffload, Workspace
from reduction_app.records.storage import offload_storage

__all__ = ["WorkspaceCheck", "offload_check", "stored_names"]


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

    @property
    def consistent(self) -> bool:
        return not self.unnamed and not self.missing and self.usage_recorded == self.usage_stored


def stored_names(workspace: Workspace, storage: Storage | None = None) -> Iterator[str]:
    """Every stored object under the workspace's prefix, as storage names."""
    storage = storage or offload_storage()
    pending = [f"ws{workspace.pk}"]
    while pending:
        folder = pending.pop()
        try:
            folders, files = storage.listdir(folder)
        except FileNotFoundError:
            continue
        pending.extend(f"{folder}/{name}" for name in folders)
        yield from (f"{folder}/{name}" for name in files)


def offload_check(*, workspace: Workspace, storage: Storage | None = None) -> WorkspaceCheck:
    storage = storage or offload_storage()
    rows = OffloadedFile.objects.filter(workspace=workspace)
    paths: dict[str, list[str]] = {}
    # Conversations that offloaded the same content to the same path each have a row.
    named = rows.values_list("storage_name", "path").order_by("storage_name", "path").distinct()
    for name, path in named:
        paths.setdefault(name, []).append(path)
    stored = {name: storage.size(name) for name in stored_names(workspace, storage)}
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
    )
