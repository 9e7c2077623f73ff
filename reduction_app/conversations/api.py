"""Recorded conversations over HTTP: list, create or replace, read, delete."""

from typing import Any

from ninja import Router, Status
from ninja.pagination import paginate

from reduction_app.conversations import services
from reduction_app.conversations.schemas import (
    ConversationDetailOut,
    ConversationIn,
    ConversationOut,
)
from reduction_app.conversations.selectors import conversation_get, conversation_list
from reduction_app.cursors import LIST_ERRORS, PAGE, IdCursorPagination
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import Conversation
from reduction_app.schemas import (
    BODY_ERRORS,
    PARAM_ERRORS,
    ApiError,
    ErrorOut,
    Text,
    parse_conversation,
    response_links,
)

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
        "tools", "system"
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
