"""The engine over HTTP: ``/truncate`` after each tool result, ``/clear`` before each
model call, and the ``read_file`` tool definition that lets a model read offloads back."""

# No `from __future__ import annotations`: django-ninja reads these signatures at import
# time, and Query[...] parameters must be real types then.

from typing import Any

from ninja import Router, Status

from reduction_app import engine
from reduction_app.configs.selectors import config_get, config_latest
from reduction_app.engine import formats, get_token_counter, inspect
from reduction_app.engine.formats import parts_from_json, parts_to_json
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import ConfigVersion, Workspace
from reduction_app.records.schemas import event_answers
from reduction_app.reductions.schemas import (
    ClearIn,
    ClearOut,
    ConfigRef,
    ToolDefinitionOut,
    TruncateIn,
    TruncateOut,
)
from reduction_app.reductions.services import engine_session, engine_session_record
from reduction_app.schemas import AUTH_ERRORS, BODY_ERRORS, ApiError, ErrorOut, parse_conversation

router = Router(tags=["engine"])

# 404: a config_id of no config; 409: another request wrote the same records first;
# 503: the offload storage or the database failed.
ERRORS = {**BODY_ERRORS, 404: ErrorOut, 409: ErrorOut, 503: ErrorOut}

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
    """
    workspace = api_workspace(request)
    version = _config_version(workspace, payload)
    messages, tools = parse_conversation(
        payload.format, payload.messages, payload.tools, payload.system
    )
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
        rows = engine_session_record(
            session=session,
            conversation_id=payload.conversation_id,
            message_format=payload.format,
            transcript=payload.messages,
            tools=payload.tools,
            system=payload.system,
        )
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
