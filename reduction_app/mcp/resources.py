"""A conversation's recorded reductions as MCP resources: one JSON resource per
conversation of the key's workspace, ``lab://conversations/{id}/events``, listing what
was truncated and cleared (the events of ``GET /api/v1/events?conversation_id=``)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, unquote

from django.core.serializers.json import DjangoJSONEncoder

from reduction_app.conversations.selectors import conversation_get
from reduction_app.cursors import MAX_ID
from reduction_app.models import Conversation, EventRecord, Workspace
from reduction_app.records.schemas import event_answers

SCHEME = "lab"
TEMPLATE = f"{SCHEME}://conversations/{{conversation_id}}/events"
"""The resources' URI template (RFC 6570): the conversation id is percent-encoded."""
MIME = "application/json"
PAGE = 50
"""Conversations per ``resources/list`` page."""
MAX_EVENTS = 1_000
"""The most events one read gives, the latest ones; the resource says when it left some out."""


class NotFound(LookupError):
    """No such resource in the workspace (another workspace's is not found either)."""


class BadCursor(ValueError):
    """A cursor ``resources/list`` did not give."""


def uri(client_id: str) -> str:
    return TEMPLATE.format(conversation_id=quote(client_id, safe=""))


def client_id_of(resource_uri: str) -> str:
    """The conversation id a resource URI names; :class:`NotFound` for any other URI."""
    prefix, suffix = f"{SCHEME}://conversations/", "/events"
    if not (resource_uri.startswith(prefix) and resource_uri.endswith(suffix)):
        raise NotFound(resource_uri)
    quoted = resource_uri[len(prefix) : -len(suffix)]
    if not quoted or "/" in quoted:
        raise NotFound(resource_uri)
    return unquote(quoted)


def listed(workspace: Workspace, cursor: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """A page of the workspace's conversations, newest first, as resource fields; and the
    cursor of the next page (``None`` on the last)."""
    rows = Conversation.objects.filter(workspace=workspace).order_by("-pk")
    if cursor is not None:
        if not (cursor.isascii() and cursor.isdigit() and 0 < int(cursor) <= MAX_ID):
            raise BadCursor(cursor)
        rows = rows.filter(pk__lt=int(cursor))
    page = list(rows.only("pk", "client_id", "title")[: PAGE + 1])
    more = len(page) > PAGE
    page = page[:PAGE]
    resources = [
        {
            "uri": uri(c.client_id),
            "name": c.client_id,
            "title": c.title or c.client_id,
            "description": "What was truncated and cleared in this conversation (JSON).",
            "mime_type": MIME,
        }
        for c in page
    ]
    return resources, (str(page[-1].pk) if more else None)


def read(workspace: Workspace, resource_uri: str) -> str:
    """The conversation's events, oldest first, as JSON; :class:`NotFound` for a URI
    naming no conversation of the workspace."""
    conversation = conversation_get(workspace=workspace, client_id=client_id_of(resource_uri))
    if conversation is None:
        raise NotFound(resource_uri)
    rows = EventRecord.objects.filter(conversation=conversation).select_related(
        "conversation", "config_version"
    )
    latest = list(rows.order_by("-pk")[: MAX_EVENTS + 1])
    left_out = len(latest) > MAX_EVENTS
    events = event_answers(list(reversed(latest[:MAX_EVENTS])))
    body = {
        "conversation_id": conversation.client_id,
        "events": events,
        "left_out": (
            f"only the latest {MAX_EVENTS} events are given; GET /api/v1/events pages "
            "through all of them"
            if left_out
            else None
        ),
    }
    return json.dumps(body, cls=DjangoJSONEncoder, ensure_ascii=False)
