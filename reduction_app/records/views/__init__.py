"""The records' dashboard pages: overview, events, files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reduction_app.models import Conversation, Workspace
from reduction_app.records.selectors import conversation_named


def filtered_to(workspace: Workspace, filters: Mapping[str, Any]) -> Conversation | None:
    """The conversation a list is filtered to (``conversation``, a client id), if it exists:
    its page says so when it is a recording."""
    client_id = filters.get("conversation")
    return conversation_named(workspace=workspace, client_id=client_id) if client_id else None
