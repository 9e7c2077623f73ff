"""Writes of the records themselves (events and files are written by
``reductions.services``), and the removal of offloaded content no file row uses any more
(for deletes of conversations and for retention's purge)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.files.storage import Storage
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from reduction_app.models import OffloadedFile, Workspace
from reduction_app.records.storage import names_in_use, offload_storage
from reduction_app.workspaces.quotas import lock_workspace

logger = logging.getLogger(__name__)


def file_mark_read(*, file: OffloadedFile) -> None:
    OffloadedFile.objects.filter(pk=file.pk).update(
        read_count=F("read_count") + 1, last_read_at=timezone.now()
    )


@dataclass
class ContentFreed:
    """What :func:`file_content_release` removed from the storage, added up as its
    removals run (once each transaction commits)."""

    objects: int = 0
    bytes: int = 0
    failures: int = 0
    """Stored objects the storage failed to remove (each logged): unreferenced bytes."""


def _workspace_of(storage_name: str) -> int:
    """The workspace id in a storage name (``records.storage.storage_name_for``)."""
    prefix = storage_name.split("/", 1)[0]
    return int(prefix.removeprefix("ws"))


def _remove(storage: Storage, name: str, freed: ContentFreed) -> None:
    try:
        size = storage.size(name)
        storage.delete(name)
    except FileNotFoundError:
        return  # already gone: nothing to free
    except OSError:
        freed.failures += 1
        logger.warning("could not delete offloaded content %s", name, exc_info=True)
        return
    freed.objects += 1
    freed.bytes += size


def file_content_release(
    *,
    storage_names: Iterable[str],
    freed: ContentFreed | None = None,
    storage: Storage | None = None,
) -> ContentFreed:
    """Remove each of ``storage_names`` from the storage once the current transaction
    commits, unless a file row still names it then.

    Content is stored once per workspace and digest, and several rows (other paths, other
    conversations) may name it; which names are still used is asked after the commit,
    holding the workspace's lock, so a row another request added meanwhile, or a request
    journaled meanwhile (``records.storage``), keeps its content. The rows are gone by then:
    a storage that fails to remove an object leaves unreferenced bytes, which is logged
    and counted, never raised into the delete that released them.
    """
    names = sorted(set(storage_names))
    freed = freed if freed is not None else ContentFreed()
    if not names:
        return freed
    storage = storage or offload_storage()

    def remove() -> None:
        by_workspace: dict[int, list[str]] = {}
        for name in names:
            by_workspace.setdefault(_workspace_of(name), []).append(name)
        for workspace in Workspace.objects.filter(pk__in=by_workspace).order_by("pk"):
            # Under the workspace's lock, as a request journals the content it will name:
            # content a request is about to name stays.
            with transaction.atomic():
                lock_workspace(workspace)
                used = names_in_use(workspace, by_workspace[workspace.pk])
                for name in by_workspace[workspace.pk]:
                    if name not in used:
                        _remove(storage, name, freed)

    transaction.on_commit(remove, robust=True)
    return freed
