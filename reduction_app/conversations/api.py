"""Recorded conversations over HTTP: list, create or replace, read, delete; and import
recordings of agent runs as conversations (inline when small, else on the task workers,
polled with ``GET /imports/{id}``)."""

from typing import Any

from django.http.multipartparser import MultiPartParserError
from ninja import Router, Status
from ninja.pagination import paginate

from reduction_app.conversations import imports, services
from reduction_app.conversations.schemas import (
    ConversationDetailOut,
    ConversationIn,
    ConversationOut,
    RecordingImportOut,
)
from reduction_app.conversations.selectors import (
    conversation_get,
    conversation_list,
    recording_import_get,
)
from reduction_app.cursors import LIST_ERRORS, PAGE, IdCursorPagination
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import Conversation, RecordingImport
from reduction_app.schemas import (
    BODY_ERRORS,
    PARAM_ERRORS,
    ApiError,
    ErrorOut,
    Text,
    parse_conversation,
    response_links,
)
from simulator.importers import FORMATS

router = Router()


def _conversation_or_404(request: ApiRequest, conversation_id: str) -> Conversation:
    row = conversation_get(workspace=api_workspace(request), client_id=conversation_id)
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
def list_conversations(request: ApiRequest, search: str = "") -> Any:
    return conversation_list(workspace=api_workspace(request), search=search).defer(
        "tools", "system", "provider_usage"
    )


@router.post(
    "/conversations",
    response={201: ConversationDetailOut, **BODY_ERRORS},
    openapi_extra=response_links(
        (201,),
        "conversation_id",
        "conversation_id",
        (
            "reduction_app_api_records_get_conversation",
            "reduction_app_api_records_delete_conversation",
            "reduction_app_api_records_list_events",
            "reduction_app_api_records_list_files",
        ),
    ),
    tags=["conversations"],
    url_name="conversation_create",
)
def create_conversation(request: ApiRequest, payload: ConversationIn) -> Status[Conversation]:
    """Record a conversation (for example a finished transcript to replay later)."""

    parse_conversation(payload.format, payload.messages, payload.tools, payload.system)
    row = services.conversation_upsert(
        workspace=api_workspace(request),
        client_id=payload.conversation_id,
        message_format=payload.format,
        transcript=payload.messages,
        tools=payload.tools,
        title=payload.title,
        system=payload.system,
    )
    return Status(201, row)


# The body of an import, described by hand: the operation reads the request itself, as
# one raw file or as multipart parts.
_IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/octet-stream": {
                "schema": {"type": "string", "format": "binary"},
            },
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "array", "items": {"type": "string", "format": "binary"}},
                        "format": {"type": "string", "enum": ["", *FORMATS]},
                        "replace": {"type": "boolean"},
                    },
                },
            },
        },
    }
}


FILENAME_CHARS = 300
"""The longest file name kept (``Conversation.imported_from``)."""


def _uploaded(request: ApiRequest, filename: str) -> list[imports.UploadedFile]:
    if request.content_type == "multipart/form-data":
        try:
            parts = request.FILES.getlist("file")
        except MultiPartParserError as exc:
            raise ApiError(400, f"request body: not a multipart body ({exc})") from exc
        if not parts:
            raise ApiError(422, "file: send at least one file part named 'file'", "file")
        return [(part.name or "recording", part.read()) for part in parts]
    if not 1 <= len(filename) <= FILENAME_CHARS:
        problem = f"filename: must be 1 to {FILENAME_CHARS} characters"
        raise ApiError(422, problem, "filename")
    if not request.body:
        raise ApiError(422, "request body: empty; send a recording as the body", "file")
    return [(filename, request.body)]


@router.post(
    "/conversations/import",
    response={201: RecordingImportOut, 202: RecordingImportOut, **BODY_ERRORS, 409: ErrorOut},
    openapi_extra={
        **_IMPORT_BODY,
        **response_links((201, 202), "import_id", "id", ("reduction_app_api_records_get_import",)),
    },
    tags=["conversations"],
    url_name="recording_import_create",
)
def import_recordings(
    request: ApiRequest,
    format: Text = "",
    filename: Text = "recording.json",
    replace: bool = False,
) -> Status[RecordingImport]:
    """Import recordings of agent runs (any format the simulator reads) as conversations:
    one file as the body (``?filename=``), or multipart ``file`` parts. All of them, or on
    any error none. Small uploads answer 201, done; bigger ones 202, to poll."""
    if request.content_type == "multipart/form-data":
        format = request.POST.get("format", format)
        replace = request.POST.get("replace", "") in ("1", "true", "on") or replace
    files = _uploaded(request, filename)
    workspace = api_workspace(request)
    try:
        if imports.runs_inline(files):
            done = imports.recording_import_inline(
                workspace=workspace, files=files, fmt=format, replace=replace
            )
            return Status(201, done)
        queued = imports.recording_import_create(
            workspace=workspace, files=files, fmt=format, replace=replace
        )
    except imports.RecordingImportError as exc:
        raise ApiError(422, str(exc), exc.field) from exc
    imports.recording_import_enqueue(recording_import=queued)
    return Status(202, queued)


@router.get(
    "/imports/{import_id}",
    response={200: RecordingImportOut, **PARAM_ERRORS, 404: ErrorOut},
    tags=["conversations"],
    url_name="recording_import_detail",
)
def get_import(request: ApiRequest, import_id: int) -> Status[RecordingImport]:
    """An import of recordings: how far it is, and once done what it imported."""
    row = recording_import_get(workspace=api_workspace(request), import_id=import_id)
    if row is None:
        raise ApiError(404, f"import {import_id} not found", "import_id")
    return Status(200, imports.recording_import_check(recording_import=row))


@router.get(
    "/conversations/{path:conversation_id}",
    response={200: ConversationDetailOut, **PARAM_ERRORS, 404: ErrorOut},
    tags=["conversations"],
    url_name="conversation_detail",
)
def get_conversation(request: ApiRequest, conversation_id: Text) -> Status[Conversation]:
    return Status(200, _conversation_or_404(request, conversation_id))


@router.delete(
    "/conversations/{path:conversation_id}",
    response={204: None, **PARAM_ERRORS, 404: ErrorOut},
    tags=["conversations"],
    url_name="conversation_delete",
)
def delete_conversation(request: ApiRequest, conversation_id: Text) -> Status[None]:
    """Delete the conversation with its events and its offloaded files."""
    services.conversation_delete(conversation=_conversation_or_404(request, conversation_id))
    return Status(204, None)
