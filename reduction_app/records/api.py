"""What the engine left behind, over HTTP: offloaded files (listing them, reading them
back, their raw bytes) and events.

A file read back is checked against the SHA-256 its row recorded: content the storage
holds damaged (truncated, emptied, changed) is answered 503 naming the path, as content
missing from the storage is, never served as the file."""

import logging
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from ninja import P, Query, QueryEx, Router, Schema, Status
from ninja.pagination import paginate

from reduction_app.cursors import LIST_ERRORS, MAX_ID, PAGE, IdCursorPagination
from reduction_app.engine import read_page
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import OffloadedFile
from reduction_app.records import services
from reduction_app.records.schemas import EventOut, FileOut, FileReadOut, FileWriteIn
from reduction_app.records.selectors import event_list, file_get, file_list
from reduction_app.records.storage import DamagedContent, offload_storage, read_verified
from reduction_app.schemas import BODY_ERRORS, PARAM_ERRORS, ApiError, ErrorOut

router = Router()
logger = logging.getLogger(__name__)

MAX_READ_LINES = 10_000

# django-ninja documents a 200 of ``None`` with no content; the raw file is text, with its
# digest in a header.
RAW_FILE_OPENAPI: dict[str, Any] = {
    # Keyed by int as django-ninja keys its own responses, so the two merge into one.
    "responses": {
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "headers": {
                "X-Content-SHA256": {
                    "description": "The SHA-256 of the content, in hex.",
                    "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                    "required": True,
                }
            },
        }
    }
}


class FileFilter(Schema):
    conversation_id: str | None = None
    path_prefix: str | None = None
    phase: str | None = None
    tool: str | None = None


@router.get(
    "/files", response={200: list[FileOut], **LIST_ERRORS}, tags=["files"], url_name="file_list"
)
@paginate(IdCursorPagination, **PAGE)
def list_files(request: ApiRequest, filters: Query[FileFilter]) -> Any:
    """Offloaded files, newest first."""
    rows = file_list(
        workspace=api_workspace(request),
        conversation=filters.conversation_id,
        path_prefix=filters.path_prefix,
        phase=filters.phase,
        tool=filters.tool,
    )
    return rows


@router.post(
    "/files",
    response={
        200: FileOut,
        201: FileOut,
        **BODY_ERRORS,
        409: ErrorOut,
        429: ErrorOut,
        503: ErrorOut,
    },
    tags=["files"],
    url_name="file_write",
)
def write_file(request: ApiRequest, payload: FileWriteIn) -> Status[OffloadedFile]:
    """Store a file an agent offloaded itself (the engine in its own process, with the
    Lab as its storage): 201 with the new file, 200 with the same file when this path
    already holds this content, 409 when it holds other content (files are never
    overwritten), 429 over the workspace's offload quota; nothing is stored on failure."""
    row, created = services.file_write(
        workspace=api_workspace(request),
        path=payload.path,
        content=payload.content,
        conversation_id=payload.conversation_id,
    )
    return Status(HTTPStatus.CREATED if created else HTTPStatus.OK, row)


def _file_or_404(request: ApiRequest, path: str, conversation_id: str | None) -> OffloadedFile:
    row = file_get(workspace=api_workspace(request), path=path, conversation=conversation_id)
    if row is None:
        raise ApiError(404, f"file not found: {path}", "path")
    return row


def _content(row: OffloadedFile) -> bytes:
    """The file's stored bytes, as recorded; a 503 naming the path when they are not."""
    try:
        return read_verified(offload_storage(), row.storage_name, row.sha256)
    except DamagedContent as exc:
        # The operator's offload_check names it too, with every row that points at it.
        logger.error("damaged offloaded content %s (%s)", exc.name, row.path)
        raise ApiError(
            HTTPStatus.SERVICE_UNAVAILABLE,
            f"the stored content of {row.path} is damaged (it does not match its recorded "
            "SHA-256); it is not served",
            "path",
        ) from exc


@router.get(
    "/files/read",
    response={200: FileReadOut, **PARAM_ERRORS, 404: ErrorOut, 503: ErrorOut},
    tags=["files"],
    url_name="file_read",
)
def read_file(
    request: ApiRequest,
    path: str,
    offset: QueryEx[int, P(ge=0, le=MAX_ID)] = 0,
    limit: QueryEx[int, P(ge=1, le=MAX_READ_LINES)] = 2000,
    conversation_id: str | None = None,
) -> Status[dict[str, Any]]:
    """The read_file tool: ``limit`` numbered lines from line ``offset`` (0-based), of the
    file of ``conversation_id`` when given (a 404 if it names no such path); a 503 when
    the stored content is missing or damaged."""
    row = _file_or_404(request, path, conversation_id)
    content = _content(row).decode("utf-8", "surrogatepass")
    page = read_page(content, row.path, offset=offset, limit=limit)
    services.file_mark_read(file=row)
    return Status(
        200,
        {
            "path": row.path,
            "offset": offset,
            "limit": limit,
            "total_lines": page.total_lines,
            "content": page.lines,
        },
    )


@router.get(
    "/files/raw",
    response={200: None, **PARAM_ERRORS, 404: ErrorOut, 503: ErrorOut},
    openapi_extra=RAW_FILE_OPENAPI,
    tags=["files"],
    url_name="file_raw",
)
def raw_file(request: ApiRequest, path: str, conversation_id: str | None = None) -> HttpResponse:
    """The exact content of an offloaded file, as UTF-8 text; of the file of
    ``conversation_id`` when given (a 404 if it names no such path). A lone surrogate in
    it (a tool's undecodable byte, read with surrogateescape) is written as UTF-8 writes
    any other code point, three bytes: decode with ``surrogatepass`` to get it back. The
    bytes served always have the SHA-256 of ``X-Content-SHA256``: stored content missing
    or damaged is answered 503."""
    row = _file_or_404(request, path, conversation_id)
    content = _content(row)
    services.file_mark_read(file=row)
    response = HttpResponse(content, content_type="text/plain; charset=utf-8")
    response["X-Content-SHA256"] = row.sha256
    return response


class EventFilter(Schema):
    conversation_id: str | None = None
    phase: str | None = None
    tool: str | None = None
    since: datetime | None = None
    """From this time on (inclusive); a time without a zone is UTC."""
    until: datetime | None = None
    """Before this time (exclusive); a time without a zone is UTC."""


def _aware(moment: datetime | None) -> datetime | None:
    if moment is None or timezone.is_aware(moment):
        return moment
    return moment.replace(tzinfo=UTC)


@router.get(
    "/events", response={200: list[EventOut], **LIST_ERRORS}, tags=["events"], url_name="event_list"
)
@paginate(IdCursorPagination, **PAGE)
def list_events(request: ApiRequest, filters: Query[EventFilter]) -> Any:
    """Engine events, newest first."""
    rows = event_list(
        workspace=api_workspace(request),
        conversation=filters.conversation_id,
        phase=filters.phase,
        tool=filters.tool,
        since=_aware(filters.since),
        until=_aware(filters.until),
    )
    return rows
