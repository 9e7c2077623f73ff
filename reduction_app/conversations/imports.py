"""Importing recordings: agent runs in any format the simulator reads, stored as
conversations to replay and compare.

Reading is ``simulator.importers``'; this module owns the ids, the limits and the writes:
all of one import in one transaction, so any error writes nothing. Small uploads are
imported inside the request, bigger ones by the task workers as a
:class:`~reduction_app.models.RecordingImport` job.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_tasks import task

from reduction_app.conversations.services import conversation_create, conversation_delete
from reduction_app.conversations.timeline import ENGINE_MEASURE
from reduction_app.engine import formats
from reduction_app.errors import LimitExceeded, ServiceError
from reduction_app.jobs.lease import claim_fields, heartbeat, lease_seconds
from reduction_app.jobs.watch import (
    JobKind,
    job_check,
    register,
    untaken_reason,
    watch_enqueue,
)
from reduction_app.models import (
    Conversation,
    JobStatus,
    RecordingImport,
    RecordingUpload,
    Workspace,
)
from reduction_app.schemas import ApiError, parse_conversation
from simulator.importers import (
    FORMATS,
    TITLE_CHARS,
    ImportError_,
    RecordedConversation,
    recording_omits,
    recording_title,
)
from simulator.importers import load_conversations_bytes as read_recording
from simulator.prefix import omitted_tokens

__all__ = [
    "IMPORTS",
    "DuplicateConversation",
    "RecordingImportError",
    "UploadedFile",
    "conversation_slug",
    "lost_worker_error",
    "recording_id",
    "recording_import_check",
    "recording_import_create",
    "recording_import_enqueue",
    "recording_import_inline",
    "recording_import_run",
    "recordings_import",
    "run_recording_import",
    "runs_inline",
    "untaken_error",
]

logger = logging.getLogger(__name__)

UploadedFile = tuple[str, bytes]
"""``(file name, content)`` of one recording."""
Progress = Callable[[int, int], None]
"""Called with ``(files read, files)`` as the import goes."""
Pick = Callable[[str, RecordedConversation], bool]
"""Whether to import a recording, given its file's name and the recording."""

ID_CHARS = 200
"""The longest conversation id (``Conversation.client_id``)."""

PROGRESS_EVERY_SECONDS = 0.5
# What a recording's file name ends with; left out of the conversation ids made from it.
_EXTENSIONS = (".traj.json", ".jsonl", ".json", ".traj", ".eval")
_UNSAFE = re.compile(r"[^a-z0-9._-]+")


class RecordingImportError(ValueError):
    """A recording that cannot be imported; nothing of the import was written. The message
    names the file (with its line and field where one is at fault)."""

    def __init__(self, message: str, *, field: str = "file") -> None:
        super().__init__(message)
        self.field = field
        """The input at fault: ``file`` (a file's content) or ``format``."""


class DuplicateConversation(ServiceError):
    """An imported conversation's id is taken in the workspace, and replacing was not
    asked for; nothing of the import was written."""


@dataclass(frozen=True)
class _Read:
    filename: str
    conversations: list[RecordedConversation]


def runs_inline(files: Sequence[UploadedFile]) -> bool:
    """Whether an upload is imported inside the request (``REDUCTION_IMPORT_INLINE_BYTES``
    in all), rather than by the task workers."""
    return sum(len(raw) for _, raw in files) <= settings.REDUCTION_IMPORT_INLINE_BYTES


def check_format(fmt: str | None) -> str | None:
    """``fmt``, or ``None`` for "detect"; an unknown one raises naming the allowed ones."""
    if fmt in (None, ""):
        return None
    if fmt not in FORMATS:
        raise RecordingImportError(
            f"format: unknown format {fmt!r}; expected one of {list(FORMATS)}", field="format"
        )
    return fmt


def conversation_slug(label: str) -> str:
    """The id imports gave a recording before they named its agent and model, from its
    label (``FILE[:LINE][#ID]``): the file's name without its extension, then the line,
    then the recording's own id when it says more than the file's name; lower case, with
    anything but letters, digits, ``.``, ``_`` and ``-`` made a ``-``. Conversations
    imported so keep their ids (:func:`recordings_import` finds them again)."""
    head, _, ident = label.partition("#")
    stem, colon, line = head.rpartition(":")
    if not (colon and line.isdigit()):
        stem, line = head, ""
    lowered = stem.lower()
    for extension in _EXTENSIONS:
        if lowered.endswith(extension) and len(lowered) > len(extension):
            stem = stem[: -len(extension)]
            break
    parts = [stem, line]
    if ident and ident.lower() != stem.lower():
        parts.append(ident)
    slug = _UNSAFE.sub("-", "-".join(p for p in parts if p).lower()).strip("-.")
    return slug[:ID_CHARS].rstrip("-.") or "recording"


def _part(text: str, limit: int = ID_CHARS) -> str:
    """``text`` as one part of an id: lower case, anything but letters, digits, ``.``,
    ``_`` and ``-`` made a ``-``, runs of ``-`` made one (``--`` parts them)."""
    slug = re.sub(r"-{2,}", "-", _UNSAFE.sub("-", text.lower())).strip("-.")
    return slug[:limit].rstrip("-.")


def _stem(filename: str) -> str:
    """``filename`` without its folders and its extension."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1]
    lowered = name.lower()
    for extension in _EXTENSIONS:
        if lowered.endswith(extension) and len(lowered) > len(extension):
            return name[: -len(extension)]
    return name


def recording_id(recorded: RecordedConversation, filename: str) -> str:
    """The id of a conversation imported from ``filename``: ``AGENT--TASK--MODEL``, so
    that two agents' or two models' runs of one task sit side by side.

    Each part is what the recording says (``importers.recording_title`` names the same
    three), made safe as in :func:`conversation_slug` with runs of ``-`` made one: the
    agent (none for a wire format), the task (else the recording's label, as
    :func:`conversation_slug` makes it), the model (else the file's name without its
    extension, when that is not the task already). ``mini-swe-agent--django__django-14017
    --google-gemini-3-pro-preview``; the same file gives the same ids every time."""
    # Each part cut so that the three, with their separators, fit in ID_CHARS.
    agent = _part(recorded.agent, 60)
    task = _part(recorded.task, 100) or conversation_slug(recorded.name)
    model = _part(recorded.model, 60)
    if not model and _part(_stem(filename)) not in task:
        model = _part(_stem(filename), 60)
    slug = "--".join(part for part in (agent, task, model) if part)
    return slug[:ID_CHARS].rstrip("-.") or "recording"


def _unique(slug: str, taken: set[str]) -> str:
    out, n = slug, 1
    while out in taken:
        n += 1
        suffix = f"-{n}"
        out = slug[: ID_CHARS - len(suffix)] + suffix
    taken.add(out)
    return out


def _legacy_title(recorded: RecordedConversation) -> str:
    """The title imports gave a recording with the ids of :func:`conversation_slug`."""
    title = recorded.name + (f" ({recorded.model})" if recorded.model else "")
    return title[:TITLE_CHARS]


def _legacy_ids(
    workspace: Workspace, chosen: Sequence[tuple[str, RecordedConversation]]
) -> list[str | None]:
    """Per ``(file name, recording)``, the id an import gave it before ids named the agent
    and the model (:func:`conversation_slug`), when the workspace holds that conversation
    (imported from the same file, in the same format, with the title it then got)."""
    old = [conversation_slug(recorded.name) for _, recorded in chosen]
    rows = Conversation.objects.filter(workspace=workspace, client_id__in=set(old)).exclude(
        source=""
    )
    found = set(rows.values_list("client_id", "imported_from", "source", "title"))
    return [
        slug if (slug, filename[:300], recorded.source, _legacy_title(recorded)) in found else None
        for slug, (filename, recorded) in zip(old, chosen, strict=True)
    ]


def _read_all(
    files: Sequence[UploadedFile], fmt: str | None, progress: Progress | None
) -> list[_Read]:
    read = []
    for done, (filename, raw) in enumerate(files, start=1):
        try:
            conversations = read_recording(raw, name=filename, fmt=fmt)
        except ImportError_ as exc:
            raise RecordingImportError(str(exc)) from exc
        except RecursionError as exc:
            raise RecordingImportError(f"{filename}: nested too deeply to read") from exc
        read.append(_Read(filename, conversations))
        if progress is not None:
            progress(done, len(files))
    return read


def stored_form(recorded: RecordedConversation, filename: str) -> dict[str, Any]:
    """The conversation as ``conversation_create`` takes it, checked as
    ``POST /conversations`` checks a body (the message limit, what JSON columns hold)."""
    system, messages = formats.dump(recorded.format, recorded.messages)
    tools = formats.dump_tools(recorded.format, recorded.tools)
    try:
        parse_conversation(recorded.format, messages, tools, system)
    except LimitExceeded as exc:
        raise LimitExceeded(f"{filename}: {recorded.name}: {exc}", field="file") from exc
    except ApiError as exc:
        raise RecordingImportError(f"{filename}: {recorded.name}: {exc.message}") from exc
    return {
        "message_format": recorded.format,
        "transcript": messages,
        "tools": tools,
        "system": system,
        # The provider's figures, keyed by message index: a replay infers from them the
        # prefix a recording left out (simulator.prefix), as the simulator's own does.
        "provider_usage": recorded.usage.to_json() if recorded.usage is not None else None,
    }


def recordings_import(
    *,
    workspace: Workspace,
    files: Sequence[UploadedFile],
    fmt: str | None = None,
    replace: bool = False,
    progress: Progress | None = None,
    finish: Callable[[list[dict[str, Any]]], None] | None = None,
    pick: Pick | None = None,
) -> list[dict[str, Any]]:
    """Import every conversation of ``files`` into ``workspace`` (those ``pick`` takes,
    when given), all or nothing.

    Each file is read in ``fmt`` (``None``: detected per file). Returns per file its name,
    the format it was read as and the conversations made (id, title, messages, what the
    recording left out of what the model was sent and about how many tokens that was a
    request, where the provider's counts show it). Ids are :func:`recording_id`'s, but
    a recording imported before with the ids of :func:`conversation_slug` (the same
    file, format and title) is found under its old id. Raises
    :class:`RecordingImportError` for a file that cannot be read, ``LimitExceeded`` for a
    conversation over ``REDUCTION_MAX_MESSAGES``, and :class:`DuplicateConversation` for an
    id already in the workspace unless ``replace``; then nothing is written. ``finish``
    is called with the results inside the transaction that writes the conversations,
    last: what it writes commits with them, and what it raises undoes them.
    """
    fmt = check_format(fmt)
    if not files:
        raise RecordingImportError("no file to import")
    read = _read_all(files, fmt, progress)
    chosen = [
        (index, recorded)
        for index, item in enumerate(read)
        for recorded in item.conversations
        if pick is None or pick(item.filename, recorded)
    ]
    legacy = _legacy_ids(workspace, [(read[i].filename, r) for i, r in chosen])
    taken = {old for old in legacy if old}
    planned = []
    for (index, recorded), old in zip(chosen, legacy, strict=True):
        filename = read[index].filename
        client_id = old or _unique(recording_id(recorded, filename), taken)
        planned.append((index, client_id, recorded, stored_form(recorded, filename)))
    results: list[dict[str, Any]] = [
        {
            "filename": item.filename,
            "format": item.conversations[0].source if item.conversations else "",
            "conversations": [],
        }
        for item in read
    ]
    with transaction.atomic():
        existing = {
            c.client_id: c
            for c in Conversation.objects.filter(workspace=workspace, client_id__in=taken).only(
                "pk", "client_id", "workspace"
            )
        }
        if existing and not replace:
            index, first = next((i, c) for i, c, _, _ in planned if c in existing)
            raise DuplicateConversation(
                f"{read[index].filename}: conversation {first!r} already exists in this "
                "workspace (import with replace to overwrite it)"
            )
        for row in existing.values():
            conversation_delete(conversation=row)
        for index, client_id, recorded, stored in planned:
            filename = read[index].filename
            omits = list(recording_omits(recorded))
            conversation = conversation_create(
                workspace=workspace,
                client_id=client_id,
                title=recording_title(recorded),
                source=recorded.source,
                imported_from=filename[:300],
                omits=omits,
                **stored,
            )
            if conversation is None:  # made by another request since the check above
                raise DuplicateConversation(
                    f"{filename}: conversation {client_id!r} already exists in this "
                    "workspace (import with replace to overwrite it)"
                )
            results[index]["conversations"].append(
                {
                    "conversation_id": client_id,
                    "title": conversation.title,
                    "message_count": conversation.message_count,
                    "omits": omits,
                    "omitted_tokens": omitted_tokens(recorded, ENGINE_MEASURE) if omits else None,
                }
            )
        if finish is not None:
            finish(results)
    return results


def recording_import_inline(
    *,
    workspace: Workspace,
    files: Sequence[UploadedFile],
    fmt: str | None,
    replace: bool,
    pick: Pick | None = None,
) -> RecordingImport:
    """Import ``files`` now (:func:`recordings_import`, ``pick`` choosing among their
    recordings) and record the import, done; an error leaves neither conversations nor
    the record."""
    started = timezone.now()
    with transaction.atomic():
        result = recordings_import(
            workspace=workspace, files=files, fmt=fmt, replace=replace, pick=pick
        )
        job = RecordingImport.objects.create(
            workspace=workspace,
            format=fmt or "",
            replace=replace,
            status=JobStatus.DONE,
            progress_done=len(files),
            progress_total=len(files),
            result=result,
            started_at=started,
        )
        # Finished once recorded: never before it was created.
        job.finished_at = job.created_at
        job.save(update_fields=["finished_at"])
        return job


# In the background ----------------------------------------------------------------------


def recording_import_create(
    *, workspace: Workspace, files: Sequence[UploadedFile], fmt: str | None, replace: bool
) -> RecordingImport:
    """Record an import for the task workers, with its files; nothing is read yet."""
    fmt = check_format(fmt)
    if not files:
        raise RecordingImportError("no file to import")
    with transaction.atomic():
        job = RecordingImport.objects.create(
            workspace=workspace, format=fmt or "", replace=replace, progress_total=len(files)
        )
        RecordingUpload.objects.bulk_create(
            RecordingUpload(recording_import=job, position=i, filename=name[:300], content=raw)
            for i, (name, raw) in enumerate(files)
        )
    return job


def recording_import_enqueue(*, recording_import: RecordingImport) -> None:
    """Hand a queued import to the task workers; the watcher fails it if its worker stops
    answering or no worker takes it in time (:data:`IMPORTS`)."""
    run_recording_import.enqueue(recording_import.pk)
    watch_enqueue()


def _progress(import_id: int) -> Progress:
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= PROGRESS_EVERY_SECONDS:
            last[0] = now
            RecordingImport.objects.filter(pk=import_id).update(
                progress_done=done, progress_total=total
            )

    return report


def recording_import_run(*, import_id: int) -> RecordingImport:
    """Carry out a queued import; its outcome (or its error) is recorded on it, never
    raised. Its uploaded files are deleted once it ends either way.

    While it runs, a heartbeat keeps its lease. The import is marked done in the
    transaction that writes its conversations, and only while it is still running: one
    the watcher gave up on meanwhile (its worker presumed dead) writes nothing."""
    with transaction.atomic():
        job = RecordingImport.objects.select_for_update().get(pk=import_id)
        if job.status != JobStatus.QUEUED:
            return job
        job.save(update_fields=claim_fields(job, timezone.now()))
    uploads = [
        (u.filename, bytes(u.content))
        for u in RecordingUpload.objects.filter(recording_import=job).order_by("position")
    ]

    def finish(result: list[dict[str, Any]]) -> None:
        if not _still_running(job.pk):
            raise _GivenUp
        job.result, job.status = result, JobStatus.DONE
        job.progress_done = job.progress_total
        _ended(job, ["result", "progress_done"])

    try:
        with heartbeat(job):
            recordings_import(
                workspace=job.workspace,
                files=uploads,
                fmt=job.format or None,
                replace=job.replace,
                progress=_progress(job.pk),
                finish=finish,
            )
    except _GivenUp:
        pass
    except (RecordingImportError, ServiceError) as exc:
        _failed(job.pk, str(exc))
    except Exception as exc:  # recorded for the person waiting; the log names the type only
        logger.error("import %s failed (%s)", job.pk, type(exc).__name__)
        _failed(job.pk, f"the import failed ({type(exc).__name__}); nothing was imported")
    job.refresh_from_db()
    return job


@task()
def run_recording_import(import_id: int) -> str:
    """Import the recordings of a queued import; its outcome is stored on the row."""
    watch_enqueue()  # again, should the watch have been lost with a worker
    return recording_import_run(import_id=import_id).status


class _GivenUp(Exception):
    """The import was given up while it ran: its transaction is undone."""


def _still_running(import_id: int) -> bool:
    """Lock the import's row; whether it is still running."""
    rows = RecordingImport.objects.select_for_update().filter(
        pk=import_id, status=JobStatus.RUNNING
    )
    return rows.exists()


def _ended(job: RecordingImport, fields: list[str]) -> None:
    """Record ``job``'s end (in the caller's transaction) and delete its uploads."""
    job.finished_at = timezone.now()
    RecordingUpload.objects.filter(recording_import=job).delete()
    job.save(update_fields=["status", "error", "finished_at", *fields])


def _failed(import_id: int, error: str) -> None:
    with transaction.atomic():
        if not _still_running(import_id):
            return
        job = RecordingImport.objects.get(pk=import_id)
        job.status, job.error = JobStatus.FAILED, error
        _ended(job, [])


def lost_worker_error() -> str:
    """Why an import whose worker stopped answering failed."""
    return (
        f"the worker importing it stopped answering (no heartbeat for {lease_seconds():g} s); "
        "nothing was imported: import the files again"
    )


def untaken_error() -> str:
    """Why an import no worker took failed."""
    return untaken_reason("import the files again")


def _drop_uploads(import_ids: list[int]) -> None:
    """The uploads of the imports the watcher failed: nothing will read them."""
    RecordingUpload.objects.filter(
        recording_import__in=import_ids, recording_import__status=JobStatus.FAILED
    ).delete()


IMPORTS = register(
    JobKind(
        name="import",
        rows=RecordingImport.objects.all,
        lost_error=lost_worker_error,
        untaken_error=untaken_error,
        ended=_drop_uploads,
    )
)


def recording_import_check(*, recording_import: RecordingImport) -> RecordingImport:
    """The import someone looks at, failed first (and read again) when its worker stopped
    answering or no worker took it."""
    job_check(IMPORTS, recording_import)
    return recording_import
