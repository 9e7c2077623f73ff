"""Helpers of the Configs, Compare and Tune page tests: a signed-in member of a
workspace, and a real recorded conversation stored in it."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation, Workspace
from reduction_app.workspaces.services import workspace_get_or_create
from tests.conftest import CONVERSATIONS, skip_without_recordings

PASSWORD = "correct horse battery"


@cache
def openhands_run(index: int = 0) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """OpenHands run ``index`` as OpenAI chat messages and tools (the simulator's importer)."""
    from simulator.importers import openhands_to_openai

    skip_without_recordings()
    path = CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl"
    line = path.read_text().splitlines()[index]
    return openhands_to_openai(json.loads(line))


def record_conversation(
    workspace: Workspace, client_id: str = "ponyc-4595", title: str = "", index: int = 0
) -> Conversation:
    messages, tools = openhands_run(index)
    return conversation_upsert(
        workspace=workspace,
        client_id=client_id,
        message_format="openai_chat",
        transcript=json.loads(json.dumps(messages)),
        tools=json.loads(json.dumps(tools)),
        title=title,
    )


def member_client(name: str = "ada", workspace: str = "Demo") -> tuple[Client, Workspace]:
    user = User.objects.create_user(name, password=PASSWORD)
    ws = workspace_get_or_create(name=workspace, user=user)
    client = Client()
    client.force_login(user)
    return client, ws


def html(response: Any) -> str:
    return response.content.decode()
