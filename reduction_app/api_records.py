"""What was recorded, over HTTP: offloaded files (and reading them back), events,
conversations and config profiles. Lists use cursor pagination (``?cursor=``)."""

# No `from __future__ import annotations`: django-ninja reads these signatures at import
# time, and Query[...] parameters must be real types then.

import binascii
from datetime import UTC, datetime
from typing import Any

import pydantic
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from ninja import P, Query, QueryEx, Router, Schema, Status
from ninja.errors import ValidationError
from ninja.pagination import CursorPagination, paginate

from reduction_app import services
from reduction_app.models import ConfigProfile, Conversation, OffloadedFile, Workspace
from reduction_app.schemas import (
    ApiError,
    ConfigIn,
    ConfigOut,
    ConfigUpdateIn,
    ConversationDetailOut,
    ConversationIn,
    ConversationOut,
    ErrorOut,
    EventOut,
    FileOut,
    FileReadOut,
)
from reduction_app.selectors import (
    config_get,
    config_list,
    conversation_get,
    conversation_list,
    event_list,
    file_get,
    file_list,
)
from reduction_app.storage import offload_storage, read_stored

router = Router()

MAX_READ_LINES = 10_000
MAX_ID = 2**63 - 1
LIST_ERRORS = {401: ErrorOut, 422: ErrorOut}


class IdCursorPagination(CursorPagination):
    """Cursor pagination on ``-id`` that answers 422 for a cursor it did not make.

    django-ninja lets a hand-made cursor through to pydantic and the queryset
    (``p=abc``, ``o=-1``), which would be a 500.
    """

    def paginate_queryset(
        self, queryset: Any, pagination: Any, request: HttpRequest, **params: Any
    ) -> Any:
        _check_cursor(pagination.cursor)
        return super().paginate_queryset(queryset, pagination, request, **params)


def _check_cursor(encoded: str | None) -> None:
    if not encoded:
        return
    try:
        cursor = CursorPagination.Cursor.from_encoded_param(encoded)
    except (ValidationError, pydantic.ValidationError, UnicodeError, binascii.Error):
        cursor = None
    position = cursor.p if cursor is not None else None
    if cursor is None or (
        position is not None
        and not (position.isascii() and position.isdigit() and int(position) <= MAX_ID)
    ):
        raise ApiError(
            422, "cursor: not a cursor from this API; follow the next and previous links", "cursor"
        )


PAGE = {"ordering": ("-id",), "page_size": 50, "max_page_size": 500}


def _workspace(request: HttpRequest) -> Workspace:
    return request.auth.workspace  # type: ignore[attr-defined, no-any-return]


# Files -----------------------------------------------------------------------------------


class FileFilter(Schema):
    conversation_id: str | None = None
    path_prefix: str | None = None
    phase: str | None = None
    tool: str | None = None


@router.get(
    "/files", response={200: list[FileOut], **LIST_ERRORS}, tags=["files"], url_name="file_list"
)
@paginate(IdCursorPagination, **PAGE)
def list_files(request: HttpRequest, filters: Query[FileFilter]) -> Any:
    """Offloaded files, newest first."""
    rows = file_list(
        workspace=_workspace(request),
        conversation=filters.conversation_id,
        path_prefix=filters.path_prefix,
        phase=filters.phase,
        tool=filters.tool,
    )
    return rows


def _file_or_404(request: HttpRequest, path: str) -> OffloadedFile:
    row = file_get(workspace=_workspace(request), path=path)
    if row is None:
        raise ApiError(404, f"file not found: {path}", "path")
    return row


def numbered_lines(content: str, offset: int, limit: int) -> tuple[str, int]:
    """``limit`` lines from line ``offset`` (0-based), each as ``<number>\\t<text>``.

    Lines end at ``\\n``; the ``\\r`` of a ``\\r\\n`` ending is a line ending too and is
    not shown (``/files/raw`` has the exact content).
    """
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    chosen = lines[offset : offset + limit]
    body = "".join(
        f"{offset + i + 1}\t{line.removesuffix(chr(13))}\n" for i, line in enumerate(chosen)
    )
    return body, len(lines)


@router.get(
    "/files/read",
    response={200: FileReadOut, 401: ErrorOut, 404: ErrorOut, 422: ErrorOut},
    tags=["files"],
    url_name="file_read",
)
def read_file(
    request: HttpRequest,
    path: str,
    offset: QueryEx[int, P(ge=0, le=MAX_ID)] = 0,
    limit: QueryEx[int, P(ge=1, le=MAX_READ_LINES)] = 2000,
) -> Status[dict[str, Any]]:
    """The read_file tool: ``limit`` numbered lines from line ``offset`` (0-based)."""
    row = _file_or_404(request, path)
    content = read_stored(offload_storage(), row.storage_name)
    body, total = numbered_lines(content, offset, limit)
    services.file_mark_read(file=row)
    return Status(
        200,
        {"path": row.path, "offset": offset, "limit": limit, "total_lines": total, "content": body},
    )


@router.get(
    "/files/raw",
    response={200: None, 401: ErrorOut, 404: ErrorOut},
    tags=["files"],
    url_name="file_raw",
)
def raw_file(request: HttpRequest, path: str) -> HttpResponse:
    """The exact content of an offloaded file, as UTF-8 text."""
    row = _file_or_404(request, path)
    content = read_stored(offload_storage(), row.storage_name)
    services.file_mark_read(file=row)
    response = HttpResponse(
        content.encode("utf-8", "surrogatepass"), content_type="text/plain; charset=utf-8"
    )
    response["X-Content-SHA256"] = row.sha256
    return response


# Events ----------------------------------------------------------------------------------


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
def list_events(request: HttpRequest, filters: Query[EventFilter]) -> Any:
    """Engine events, newest first."""
    rows = event_list(
        workspace=_workspace(request),
        conversation=filters.conversation_id,
        phase=filters.phase,
        tool=filters.tool,
        since=_aware(filters.since),
        until=_aware(filters.until),
    )
    return rows


# Conversations ---------------------------------------------------------------------------


def _conversation_or_404(request: HttpRequest, conversation_id: str) -> Conversation:
    row = conversation_get(workspace=_workspace(request), client_id=conversation_id)
    if row is None:
        raise ApiError(404, f"conversation {conversation_id!r} not found", "conversation_id")
    return row


@router.get(
    "/conversations",
    response={200: list[ConversationOut], **LIST_ERRORS},
    tags=["conversations"],
    url_name="conversation_list",
)
@paginate(IdCursorPagination, **PAGE)
def list_conversations(request: HttpRequest, search: str = "") -> Any:
    return conversation_list(workspace=_workspace(request), search=search).defer(
        "transcript", "tools", "system"
    )


@router.post(
    "/conversations",
    response={201: ConversationDetailOut, 401: ErrorOut, 422: ErrorOut},
    tags=["conversations"],
    url_name="conversation_create",
)
def create_conversation(request: HttpRequest, payload: ConversationIn) -> Status[Conversation]:
    """Record a conversation (for example a finished transcript to replay later)."""
    from reduction_app.api_engine import parse_conversation

    parse_conversation(payload.format, payload.messages, payload.tools, payload.system)
    row = services.conversation_upsert(
        workspace=_workspace(request),
        client_id=payload.conversation_id,
        message_format=payload.format,
        transcript=payload.messages,
        tools=payload.tools,
        title=payload.title,
        system=payload.system,
    )
    return Status(201, row)


@router.get(
    "/conversations/{conversation_id}",
    response={200: ConversationDetailOut, 401: ErrorOut, 404: ErrorOut},
    tags=["conversations"],
    url_name="conversation_detail",
)
def get_conversation(request: HttpRequest, conversation_id: str) -> Status[Conversation]:
    return Status(200, _conversation_or_404(request, conversation_id))


@router.delete(
    "/conversations/{conversation_id}",
    response={204: None, 401: ErrorOut, 404: ErrorOut},
    tags=["conversations"],
    url_name="conversation_delete",
)
def delete_conversation(request: HttpRequest, conversation_id: str) -> Status[None]:
    """Delete the conversation with its events and its offloaded files."""
    services.conversation_delete(conversation=_conversation_or_404(request, conversation_id))
    return Status(204, None)


# Configs ---------------------------------------------------------------------------------


def _config_or_404(request: HttpRequest, config_id: int) -> ConfigProfile:
    profile = config_get(workspace=_workspace(request), profile_id=config_id)
    if profile is None:
        raise ApiError(404, f"config {config_id} not found", "config_id")
    return profile


@router.get(
    "/configs",
    response={200: list[ConfigOut], **LIST_ERRORS},
    tags=["configs"],
    url_name="config_list",
)
@paginate(IdCursorPagination, **PAGE)
def list_configs(request: HttpRequest) -> Any:
    return config_list(workspace=_workspace(request)).prefetch_related("versions")


@router.post(
    "/configs",
    response={201: ConfigOut, 401: ErrorOut, 409: ErrorOut, 422: ErrorOut},
    tags=["configs"],
    url_name="config_create",
)
def create_config(request: HttpRequest, payload: ConfigIn) -> Status[ConfigProfile]:
    version = services.config_create(
        workspace=_workspace(request), name=payload.name, data=payload.config
    )
    return Status(201, version.profile)


@router.get(
    "/configs/{config_id}",
    response={200: ConfigOut, 401: ErrorOut, 404: ErrorOut},
    tags=["configs"],
    url_name="config_detail",
)
def get_config(request: HttpRequest, config_id: int) -> Status[ConfigProfile]:
    profile = _config_or_404(request, config_id)
    return Status(200, profile)


@router.put(
    "/configs/{config_id}",
    response={200: ConfigOut, 401: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut},
    tags=["configs"],
    url_name="config_update",
)
def update_config(
    request: HttpRequest, config_id: int, payload: ConfigUpdateIn
) -> Status[ConfigProfile]:
    """Save a new version; events recorded with earlier versions keep pointing at them."""
    profile = _config_or_404(request, config_id)
    version = services.config_update(profile=profile, data=payload.config, name=payload.name)
    return Status(200, version.profile)


@router.delete(
    "/configs/{config_id}",
    response={204: None, 401: ErrorOut, 404: ErrorOut},
    tags=["configs"],
    url_name="config_delete",
)
def delete_config(request: HttpRequest, config_id: int) -> Status[None]:
    services.config_delete(profile=_config_or_404(request, config_id))
    return Status(204, None)
