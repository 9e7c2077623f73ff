"""Writes of the records themselves (the engine's events and files are written by
``reductions.services``): a file an agent offloaded itself (:func:`file_write`), reads,
and the removal of offloaded content no file row uses any more (for deletes of
conversations and for retention's purge)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from django.core.files.storage import Storage
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from reduction_app.engine import PathEscapeError, WriteRequest, get_token_counter
from reduction_app.engine.inspect import count_text
from reduction_app.errors import ServiceError
from reduction_app.models import Conversation, OffloadedFile, StagedOffload, Workspace
from reduction_app.records.reclaim import reclaim_later
from reduction_app.records.storage import DjangoStorageBackend, names_in_use, offload_storage
from reduction_app.workspaces.quotas import lock_workspace, offload_bytes_add

logger = logging.getLogger(__name__)


WRITE_COUNTER = "approx"
"""The counter of a written file's ``tokens`` (no config comes with a write)."""


def _check_write_path(path: str) -> None:
    """Refuse a path with a ``..`` piece: paths name files under the offload root, as the
    engine's own do, and never leave it (NUL, empty and overlong paths are the storage
    backend's to refuse)."""
    if ".." in PurePosixPath(path.replace("\\", "/")).parts:
        raise PathEscapeError(path)


def _conflict(path: str, sha256: str, found: str | None) -> None:
    if found is not None and found != sha256:
        raise ServiceError(
            f"{path} already holds other content (SHA-256 {found}); an offloaded file is "
            "never overwritten: write it under another path"
        )


def file_write(
    *, workspace: Workspace, path: str, content: str, conversation_id: str | None = None
) -> tuple[OffloadedFile, bool]:
    """Store ``content`` at ``path`` as an offloaded file of the workspace (of the
    conversation ``conversation_id``, made when new); the row, and whether it is new.

    Idempotent: the same path with the same content changes nothing and gives the row
    back. A path already holding other content, in any conversation of the workspace,
    raises :class:`ServiceError` (409). Stored as ``/truncate`` stores its offloads:
    journaled and counted against the offload quota (:class:`QuotaExceeded` before any
    byte is stored), then the row written in one transaction; on any failure the stored
    content is removed and no row is written.
    """
    _check_write_path(path)
    backend = DjangoStorageBackend(
        workspace, conversation_id=conversation_id, max_writes=1, on_dead_rows=reclaim_later
    )
    backend.write(WriteRequest(file_path=path, content=content))
    staged = backend.staged[path]
    rows = OffloadedFile.objects.filter(workspace=workspace, path=path)
    mine = (
        rows.filter(conversation__client_id=conversation_id)
        if conversation_id
        else rows.filter(conversation=None)
    )
    own = mine.select_related("conversation").first()
    if own is not None:
        _conflict(path, staged.digest, own.sha256)
        return own, False
    _conflict(path, staged.digest, rows.values_list("sha256", flat=True).first())
    try:
        backend.store(phases={path: "offload"})
        with transaction.atomic():
            conversation = None
            if conversation_id:
                conversation, _ = Conversation.objects.get_or_create(
                    workspace=workspace, client_id=conversation_id
                )
            held = offload_bytes_add(
                workspace=workspace, new_sizes={staged.storage_name: staged.size_bytes}
            )
            # Under the workspace's lock: no other request records this path meanwhile.
            _conflict(path, staged.digest, rows.values_list("sha256", flat=True).first())
            if staged.storage_name not in held | backend.journaled:
                raise ServiceError(
                    f"the content of {path} was removed meanwhile; send this request again"
                )
            row = OffloadedFile.objects.create(
                workspace=workspace,
                path=path,
                conversation=conversation,
                storage_name=staged.storage_name,
                size_chars=len(content),
                size_bytes=staged.size_bytes,
                tokens=count_text(get_token_counter(WRITE_COUNTER), content),
                sha256=staged.digest,
                phase="",
            )
            StagedOffload.objects.filter(request=backend.request).delete()
    except BaseException:
        backend.discard()
        raise
    return row, True


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
