"""The engine over HTTP: ``/truncate`` after each tool result, ``/clear`` before each
model call, and the ``read_file`` tool definition that lets a model read offloads back."""

# No `from __future__ import annotations`: django-ninja reads these signatures at import
# time, and Query[...] parameters must be real types then.

import json
from typing import Any

from django.conf import settings
from ninja import Router, Status

from reduction_app import engine
from reduction_app.configs.selectors import config_get, config_latest
from reduction_app.conversations.selectors import (
    context_get,
    context_messages,
    context_revisions_after,
)
from reduction_app.conversations.services import (
    client_context_answered,
    conversation_continue,
    conversation_upsert,
)
from reduction_app.engine import formats, get_token_counter, inspect
from reduction_app.engine.formats import parts_from_json, parts_to_json
from reduction_app.errors import LimitExceeded, StaleRevision
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import (
    ConfigVersion,
    ContextRevision,
    Conversation,
    EventRecord,
    Workspace,
)
from reduction_app.records.schemas import event_answers
from reduction_app.reductions import contexts
from reduction_app.reductions.schemas import (
    ClearIn,
    ClearOut,
    ConfigRef,
    ToolDefinitionOut,
    TruncateIn,
    TruncateOut,
)
from reduction_app.reductions.services import (
    EngineSession,
    engine_session,
    engine_session_record,
)
from reduction_app.schemas import (
    AUTH_ERRORS,
    BODY_ERRORS,
    ApiError,
    ConflictOut,
    ErrorOut,
    parse_conversation,
)

router = Router(tags=["engine"])

# 404: a config_id of no config; 409: another request wrote the same records first, or
# (/clear) a stale previous_revision; 503: the offload storage or the database failed.
ERRORS = {**BODY_ERRORS, 404: ErrorOut, 409: ConflictOut, 503: ErrorOut}

READ_FILE_TOOL = engine.read_file_tool()


def _config_version(workspace: Workspace, payload: ConfigRef) -> ConfigVersion | None:
    if payload.config is not None and payload.config_id is not None:
        raise ApiError(422, "give either config or config_id, not both", "config_id")
    if payload.config_id is None:
        return None
    profile = config_get(workspace=workspace, profile_id=payload.config_id)
    if profile is None:
        raise ApiError(404, f"config {payload.config_id} not found", "config_id")
    return config_latest(profile=profile)


@router.post("/truncate", response={200: TruncateOut, **ERRORS}, url_name="truncate")
def truncate(request: ApiRequest, payload: TruncateIn) -> Status[dict[str, Any]]:
    """Run the truncation phase on one tool result, as the engine does after a tool returns."""
    workspace = api_workspace(request)
    version = _config_version(workspace, payload)
    ctx = engine.ToolContext(name=payload.tool_name, call_id=payload.tool_call_id)
    with engine_session(
        workspace=workspace,
        config_data=payload.config,
        config_version=version,
        conversation_id=payload.conversation_id,
    ) as session:
        mw = session.middleware
        result: str | dict[str, Any]
        if isinstance(payload.result, str):
            result = engine.truncate_output(mw, payload.result, ctx, payload.arguments)
        else:
            parts = engine.ToolResult(parts=parts_from_json(payload.result.parts, "result.parts"))
            out = engine.truncate_output(mw, parts, ctx, payload.arguments)
            result = {"parts": parts_to_json(out.parts)}
        rows = engine_session_record(session=session, conversation_id=payload.conversation_id)
    offloads = [e.offload_path for e in session.events if e.offload_path]
    return Status(
        200,
        {
            "truncated": bool(session.events),
            "result": result,
            "offload_path": offloads[0] if offloads else None,
            "events": event_answers(rows),
        },
    )


# The formats that take a system parameter, as the 422 for the others names them.


@router.post("/clear", response={200: ClearOut, **ERRORS}, url_name="clear")
def clear(request: ApiRequest, payload: ClearIn) -> Status[dict[str, Any]]:
    """Run the clear phase on a conversation, as the engine does right before a model call.

    The messages come back in the format they were sent in, ready for that model API.
    With ``previous_revision`` (the ``revision`` of this conversation's last answer),
    send only the messages that follow your last context: the answer gives the messages
    from ``from_index`` on, and your next context is your last one up to ``from_index``,
    then those. A stale revision answers 409 with the current one: send the whole
    context then.
    """
    workspace = api_workspace(request)
    version = _config_version(workspace, payload)
    if payload.previous_revision is not None:
        return _clear_continued(workspace, version, payload)
    tools_in = payload.tools or []
    messages, tools = parse_conversation(payload.format, payload.messages, tools_in, payload.system)
    revisions: list[int] = []
    with engine_session(
        workspace=workspace,
        config_data=payload.config,
        config_version=version,
        conversation_id=payload.conversation_id,
    ) as session:
        # The paths the pass will check, looked up in one query rather than one each.
        root_dir = session.middleware.config.root_dir
        session.backend.expect(inspect.first_clear_paths(messages, root_dir))
        state = engine.ChatModelAgentState(messages=messages, tool_infos=tools)
        new_state = session.middleware.before_model_rewrite_state(state)
        system_out, out = formats.dump(payload.format, new_state.messages)
        client_id = payload.conversation_id

        def write() -> Conversation:
            assert client_id
            conversation = conversation_upsert(
                workspace=workspace,
                client_id=client_id,
                message_format=payload.format,
                transcript=payload.messages,
                tools=tools_in,
                system=payload.system,
            )
            sent = payload.messages
            revisions.append(
                client_context_answered(conversation=conversation, sent=sent, answer=out)
            )
            return conversation

        rows = engine_session_record(
            session=session,
            conversation_id=client_id,
            write_conversation=write if client_id else None,
        )
    return _answer(
        session, rows, messages, tools, out, system_out, revisions[0] if revisions else None, 0
    )


def _clear_continued(
    workspace: Workspace, version: ConfigVersion | None, payload: ClearIn
) -> Status[dict[str, Any]]:
    """``/clear`` with ``previous_revision``: the context that revision answered, from this
    process's warm contexts or else the database, plus the new messages."""
    client_id = payload.conversation_id
    if not client_id:
        raise ApiError(422, "previous_revision needs conversation_id", "conversation_id")
    if payload.system is not None:
        detail = "system is sent with the whole context; a call that continues it keeps it"
        raise ApiError(422, detail, "system")
    stored = context_get(workspace=workspace, client_id=client_id)
    if stored is None or stored.revision != payload.previous_revision:
        raise StaleRevision(None if stored is None else stored.revision)
    conversation = stored.conversation
    if payload.format != conversation.message_format:
        detail = f"the conversation is in format {conversation.message_format!r}"
        raise ApiError(422, detail, "format")
    wire = formats.get_format(payload.format)
    data = version.data if version is not None else (payload.config or {})
    key = contexts.config_key(payload.format, data, version)
    warm = contexts.take(conversation.pk, key)
    if warm is not None and warm.revision != stored.revision:
        warm = _caught_up(warm, stored, payload.format)
    if warm is None:
        # Nothing warm here to start from: rebuilt once from the stored transcript.
        kept = context_messages(context=stored)
        parsed = wire.parse_messages(kept, conversation.system)
        warm = contexts.WarmContext(
            conversation=conversation.pk,
            config=key,
            revision=stored.revision,
            middleware=None,
            relay=contexts.Relay(),
            messages=parsed,
            sizes=contexts.wire_sizes(payload.format, parsed),
        )
    tools_in = payload.tools if payload.tools is not None else conversation.tools
    limit = settings.REDUCTION_MAX_MESSAGES
    total = sum(warm.sizes) + len(payload.messages)
    if limit and total > limit:
        detail = (
            f"{total} messages is over the limit of {limit} messages per request "
            "(REDUCTION_MAX_MESSAGES), counting the context this call continues"
        )
        raise LimitExceeded(detail, field="messages")
    new_messages, tools = parse_conversation(
        payload.format, payload.messages, tools_in, None, earlier=warm.messages
    )
    given = [*warm.messages, *new_messages]
    sizes = [*warm.sizes, *contexts.wire_sizes(payload.format, new_messages)]
    with engine_session(
        workspace=workspace,
        config_data=payload.config,
        config_version=version,
        conversation_id=client_id,
        relay=warm.relay,
        middleware=warm.middleware,
    ) as session:
        middleware = session.middleware
        root_dir = middleware.config.root_dir
        reads_from = middleware.clear_reads_from if warm.middleware is not None else 0
        # Worked out only when the pass reads a path: a call below the threshold never.
        session.backend.expect(lambda: inspect.first_clear_paths(given[reads_from:], root_dir))
        state = engine.ChatModelAgentState(messages=given, tool_infos=tools)
        out_messages = list(session.middleware.before_model_rewrite_state(state).messages)
        # The first message the pass changed; the new ones come back in any case.
        first = _first_changed(wire, given, out_messages, len(warm.messages))
        from_index = sum(sizes[:first])
        _, out = formats.dump(payload.format, out_messages[first:])
        revisions: list[int] = []

        def write() -> Conversation:
            written, revision = conversation_continue(
                workspace=workspace,
                client_id=client_id,
                previous_revision=stored.revision,
                new_messages=payload.messages,
                tools=payload.tools,
                from_index=from_index,
                tail=out,
            )
            revisions.append(revision)
            return written

        rows = engine_session_record(
            session=session, conversation_id=client_id, write_conversation=write
        )
    warm.middleware = middleware
    warm.revision = revisions[0]
    warm.messages = out_messages
    warm.sizes = [*sizes[:first], *contexts.wire_sizes(payload.format, out_messages[first:])]
    contexts.keep(warm)
    return _answer(session, rows, given, tools, out, None, revisions[0], from_index)


def _caught_up(
    warm: contexts.WarmContext, latest: ContextRevision, message_format: str
) -> contexts.WarmContext | None:
    """``warm`` brought to ``latest`` by the revisions other processes answered since, or
    ``None`` when some of them are gone or sent a whole context."""
    if warm.revision > latest.revision:
        return None
    steps = context_revisions_after(revision=latest, since=warm.revision)
    if len(steps) != latest.revision - warm.revision or not all(s.continued for s in steps):
        return None
    for step in steps:
        if not warm.catch_up(message_format, step.from_index, json.loads(step.tail)):
            return None
    warm.revision = latest.revision
    return warm


def _first_changed(wire: formats.WireFormat, given: list[Any], out: list[Any], kept: int) -> int:
    """The first position where ``out`` holds a message that goes on the wire otherwise
    than ``given``'s, at most ``kept``: the client's context before its new messages.

    The pass returns the very objects it left alone. One it only flagged as gone through
    (the flag is the engine's own, and no wire format carries it) is the same message
    to the client, so it is not sent back: a call that clears one old result answers that
    result, not everything from the first call the pass flagged."""
    if out is given:
        return kept
    for i in range(min(kept, len(given), len(out))):
        before, after = given[i], out[i]
        if after is not before and wire.dump_messages([after]) != wire.dump_messages([before]):
            return i
    return min(kept, len(out))


def _answer(
    session: EngineSession,
    rows: list[EventRecord],
    messages: list[Any],
    tools: list[Any],
    out: list[Any],
    system_out: Any,
    revision: int | None,
    from_index: int,
) -> Status[dict[str, Any]]:
    summary = next((e for e in reversed(session.events) if e.kind == "summary"), None)
    if summary is not None:
        tokens_before, tokens_after = summary.tokens_before, summary.tokens_after
    else:
        # The clear phase is off (skip_clear): no pass ran, but the size is still news.
        counter = get_token_counter(session.middleware.config.token_counter)
        tokens_before = tokens_after = counter(messages, tools)
    return Status(
        200,
        {
            "messages": out,
            "system": system_out,
            "revision": revision,
            "from_index": from_index,
            "applied": summary is not None and summary.reason == "applied",
            "tokens_before": tokens_before,
            "tokens_after": tokens_after,
            "events": event_answers(rows),
        },
    )


@router.get(
    "/tools/read_file", response={200: ToolDefinitionOut, **AUTH_ERRORS}, url_name="read_file_tool"
)
def read_file_tool(request: ApiRequest) -> Status[dict[str, Any]]:
    """The read_file tool, ready to add to an agent's tool list (OpenAI chat, Anthropic,
    OpenAI Responses). Answer its calls with ``GET /api/v1/files/read``."""
    return Status(
        200, {wire.key: wire.dump_tools([READ_FILE_TOOL])[0] for wire in formats.FORMATS.values()}
    )


__all__ = ["router"]
