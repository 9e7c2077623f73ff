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

from reduction_app.models import OffloadedFile
from reduction_app.records.storage import offload_storage

logger = logging.getLogger(__name__)

NAMES_PER_QUERY = 500
"""Storage names looked up in one ``IN (...)``: far below every database's limit."""


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


def file_content_release(
    *,
    storage_names: Iterable[str],
    freed: ContentFreed | None = None,
    storage: Storage | None = None,
) -> ContentFreed:
    """Remove each of ``storage_names`` from the storage once the current transaction
    commits, unless a file row still names it then.

    Content is stored once per workspace and digest, and several rows (other paths, other
    conversations) may name it; which names are still used is asked after the commit, so
    a row another request added meanwhile keeps its content. The rows are gone by then:
    a storage that fails to remove an object leaves unreferenced bytes, which is logged
    and counted, never raised into the delete that released them.
    """
    names = sorted(set(storage_names))
    freed = freed if freed is not None else ContentFreed()
    if not names:
        return freed
    storage = storage or offload_storage()

    def remove() -> None:
        used: set[str] = set()
        for start in range(0, len(names), NAMES_PER_QUERY):
            chunk = names[start : start + NAMES_PER_QUERY]
            used.update(
                OffloadedFile.objects.filter(storage_name__in=chunk).values_list(
                    "storage_name", flat=True
                )
            )
        for name in names:
            if name in used:
                continue
            try:
                size = storage.size(name)
                storage.delete(name)
            except FileNotFoundError:
                continue  # already gone: nothing to free
            except OSError:
                freed.failures += 1
                logger.warning("could not delete offloaded content %s", name, exc_info=True)
                continue
            freed.objects += 1
            freed.bytes += size

    transaction.on_commit(remove, robust=True)
    return freed
