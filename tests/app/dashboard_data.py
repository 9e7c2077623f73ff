"""Records for the dashboard pages' tests: a signed-in member, an agent run recorded
through the engine as the REST API records it, and plain rows made directly."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.core.files.base import ContentFile
from django.test import Client

from reduction_app import engine
from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation, EventRecord, OffloadedFile, Workspace
from reduction_app.records.storage import offload_storage, storage_name_for
from reduction_app.reductions.services import engine_session, engine_session_record
from reduction_app.workspaces.services import workspace_get_or_create

# Small on purpose: outputs over 200 characters are truncated, a conversation over 150
# tokens is cleared, keeping the latest tool round.
RUN_CONFIG: dict[str, Any] = {
    "max_length_for_trunc": 200,
    "max_tokens_for_clear": 150,
    "clear_retention_suffix_limit": 1,
}
HX = {"HX-Request": "true"}


def member_client(name: str = "ada", workspace: str = "Demo") -> tuple[Client, Workspace]:
    user = User.objects.create_user(name, password="correct horse battery")
    ws = workspace_get_or_create(name=workspace, user=user)
    client = Client()
    client.force_login(user)
    return client, ws


def _clear(workspace: Workspace, client_id: str, messages: list[Any]) -> list[Any]:
    """One model call: the clear phase on the conversation so far, recorded."""
    with engine_session(workspace=workspace, config_data=RUN_CONFIG, config_version=None) as s:
        state = engine.ChatModelAgentState(messages=engine.messages_from_openai(messages))
        out = engine.messages_to_openai(s.middleware.before_model_rewrite_state(state).messages)
        engine_session_record(session=s, conversation_id=client_id, transcript=messages)
    return out


def agent_run(
    workspace: Workspace,
    client_id: str,
    outputs: Sequence[tuple[str, str]],
    title: str = "",
) -> Conversation:
    """An agent loop as an agent runs it against the API: before each model call the
    clear phase, after each tool call the truncation phase; ``outputs`` are the tools'
    ``(name, output)`` in order. The conversation ends with a final answer."""
    messages: list[Any] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Find where the tokens are counted."},
    ]
    for index, (tool, text) in enumerate(outputs):
        messages = _clear(workspace, client_id, messages)
        call_id = f"call_{index + 1}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": "{}"},
                    }
                ],
            }
        )
        with engine_session(
            workspace=workspace, config_data=RUN_CONFIG, config_version=None
        ) as session:
            ctx = engine.ToolContext(name=tool, call_id=call_id)
            result = session.middleware.wrap_invokable_tool_call(lambda _, t=text: t, ctx)("{}")
            engine_session_record(session=session, conversation_id=client_id)
        messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    messages = _clear(workspace, client_id, messages)
    messages.append({"role": "assistant", "content": "Done."})
    # The last answer and a title, as a client's POST /conversations would store them.
    return conversation_upsert(
        workspace=workspace,
        client_id=client_id,
        message_format="openai_chat",
        transcript=messages,
        title=title,
    )


def stored_file(
    workspace: Workspace,
    path: str,
    content: str,
    conversation: Conversation | None = None,
    **fields: Any,
) -> OffloadedFile:
    """An offloaded file row with its content in the offload storage."""
    data = content.encode("utf-8")
    digest = hashlib.sha256(data).hexdigest()
    name = storage_name_for(workspace.pk, digest)
    storage = offload_storage()
    if not storage.exists(name):
        storage.save(name, ContentFile(data))
    values = {"phase": "truncation", "tool_name": "read_file", "call_id": "call_1", **fields}
    return OffloadedFile.objects.create(
        workspace=workspace,
        conversation=conversation,
        path=path,
        storage_name=name,
        size_chars=len(content),
        tokens=len(content) // 4,
        sha256=digest,
        **values,
    )


def event_row(workspace: Workspace, **fields: Any) -> EventRecord:
    values = {"phase": "truncation", "kind": "tool", "tool_name": "grep", **fields}
    return EventRecord.objects.create(workspace=workspace, **values)


def expected_tokens(workspace: Workspace) -> dict[int | None, tuple[int, int, int]]:
    """Per conversation id: model calls, tokens sent, tokens kept out. Read from the rows
    in the order they were recorded: a call (a clear pass's summary) sent its
    ``tokens_after``; every reduction (a ``tool`` event) recorded before it in the same
    conversation kept its ``tokens_saved`` out of it."""
    kept: dict[int | None, int] = defaultdict(int)
    sums: dict[int | None, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in EventRecord.objects.filter(workspace=workspace).order_by("id"):
        key = row.conversation_id
        if row.kind == "tool":
            kept[key] += row.tokens_saved
            continue
        sums[key][0] += 1
        sums[key][1] += row.tokens_after
        # An event of no conversation: its call kept out what its own pass cleared.
        sums[key][2] += kept[key] if key is not None else row.tokens_saved
    return {key: (c, s, k) for key, (c, s, k) in sums.items()}
