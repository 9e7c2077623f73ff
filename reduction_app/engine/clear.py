"""The clear phase: before a model call, old tool results are offloaded and replaced
by placeholders once the conversation is over ``max_tokens_for_clear`` tokens.

Follows the reference (§4) with our decisions: strictly-greater trigger; results
found by call id among the tool-result messages right after their call; a call
already cleared (flagged, or holding one of our placeholders) is never cleared
again; nothing the caller passed is changed; every offload is written before the
state that points at it is returned, and a failure leaves the caller's state as
it was. The rewriter's window is the run of tool results after each call, so it
never swallows a user message, and results with no call are kept, not dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reduction_app.engine._steps import Steps, call, invoke
from reduction_app.engine.access import (
    AnyMessage,
    CallRef,
    classify,
    conversation_kind,
    is_processed,
    mark_processed,
    read_result,
    result_ids,
    tool_calls_of,
    write_arguments,
    write_result,
)
from reduction_app.engine.errors import MessageError, NoBackendError, ReductionError
from reduction_app.engine.events import (
    REASON_APPLIED,
    REASON_BELOW_AT_LEAST,
    REASON_BELOW_THRESHOLD,
    REASON_NOTHING_CLEARED,
    REASON_NOTHING_IN_RANGE,
    ReductionEvent,
)
from reduction_app.engine.messages import ToolInfo
from reduction_app.engine.notices import is_clear_placeholder
from reduction_app.engine.runtime import Resolved, Runtime
from reduction_app.engine.tool_io import ClearResult, ToolArgument, ToolContext, ToolDetail, ToolResult
from reduction_app.engine.truncation import text_of

__all__ = ["ChatModelAgentState", "clear_range", "clear_steps", "find_result"]


@dataclass(frozen=True, kw_only=True)
class ChatModelAgentState:
    """What an agent sends to the model: the conversation and the tools it offers."""

    messages: Sequence[AnyMessage]
    tool_infos: Sequence[ToolInfo] = field(default_factory=tuple)
    deferred_tool_infos: Sequence[ToolInfo] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True)
class _Cleared:
    ref: CallRef
    before: str
    after: str
    path: str


def clear_range(messages: Sequence[AnyMessage], retention: int) -> tuple[int, int]:
    """``[start, end)``: from the first unprocessed assistant message up to (not
    including) the ``retention``-th latest assistant message with tool calls."""
    start = next(
        (i for i, m in enumerate(messages) if m.role == "assistant" and not is_processed(m)),
        len(messages),
    )
    end, left = len(messages), retention
    while left > 0 and end > 0:
        if tool_calls_of(messages[end - 1]):
            left -= 1
        end -= 1
    return start, end


def find_result(messages: Sequence[AnyMessage], index: int, call_id: str) -> int | None:
    """The index of the result of ``call_id`` among the tool results right after ``index``."""
    j = index + 1
    while j < len(messages) and classify(messages[j]) == "tool_result":
        if call_id in result_ids(messages[j]):
            return j
        j += 1
    return None


def _already_cleared(result: ToolResult) -> bool:
    texts = [p.text for p in result.parts if p.type == "text"]
    return bool(texts) and all(is_clear_placeholder(t) for t in texts)


def _group_done(msg: AnyMessage, results: Sequence[AnyMessage]) -> bool:
    if is_processed(msg):
        return True
    if not results:
        return False
    for ref in tool_calls_of(msg):
        for res in results:
            if ref.call_id in result_ids(res):
                read = read_result(res, ref.call_id)
                if read is not None and not _already_cleared(read[0]):
                    return False
    return True


def _rewrite_steps(rt: Runtime, part: list[AnyMessage], kind: str) -> Steps[list[AnyMessage]]:
    rewriter = rt.config.clear_message_rewriter
    assert rewriter is not None
    out: list[AnyMessage] = []
    i = 0
    while i < len(part):
        msg = part[i]
        role = classify(msg)
        calls = tool_calls_of(msg)
        if role in ("system", "user", "tool_result") or (role == "assistant" and not calls):
            out.append(msg)
            i += 1
            continue
        if role != "assistant":
            raise MessageError(f"[applyClearRewrite] unexpected message: {msg!r}")
        j = i + 1
        while j < len(part) and classify(part[j]) == "tool_result":
            j += 1
        window = part[i + 1 : j]
        if _group_done(msg, window):
            out.extend(part[i:j])
        else:
            replaced = yield call(rewriter, msg, list(window))
            out.extend(_check_rewritten(replaced, kind))
        i = j
    return out


def _check_rewritten(replaced: Any, kind: str) -> list[AnyMessage]:
    if replaced is None:
        return []
    if not isinstance(replaced, list | tuple):
        raise MessageError(f"clear_message_rewriter must return a list of messages or None, got {replaced!r}")
    for msg in replaced:
        if getattr(msg, "kind", None) != kind:
            raise MessageError(f"clear_message_rewriter returned {msg!r}, not a {kind} message")
    return list(replaced)


def _summary(threshold: int, reason: str, before: int, after: int, **fields: Any) -> ReductionEvent:
    return ReductionEvent(
        phase="clear", kind="summary", reason=reason, threshold=threshold,
        tokens_before=before, tokens_after=after, tokens_saved=before - after, **fields,
    )


def _handle_steps(resolved: Resolved, detail: ToolDetail) -> Steps[ClearResult | None]:
    assert resolved.handler is not None
    result = yield from invoke(resolved.handler, detail)
    name = detail.tool_context.name
    if not isinstance(result, ClearResult):
        raise ReductionError(f"clear_handler for tool {name!r} returned {result!r}, not a ClearResult")
    if not result.need_clear:
        return None
    if result.tool_argument is None or result.tool_result is None:
        raise ReductionError(
            f"clear_handler for tool {name!r} set need_clear without tool_argument and tool_result"
        )
    if result.need_offload and resolved.backend is None:
        raise NoBackendError("clear")
    return result


def clear_steps(rt: Runtime, state: ChatModelAgentState) -> Steps[ChatModelAgentState]:
    """The whole clear phase over ``state``; returns ``state`` itself when nothing applies."""
    cfg = rt.config
    if not rt.clear_enabled:
        return state
    messages = list(state.messages)
    kind = conversation_kind(messages) or "chat"
    tools = list(state.tool_infos)
    threshold = cfg.max_tokens_for_clear
    before = yield call(rt.counter, messages, tools)
    if before <= threshold:
        yield from rt.emit(_summary(threshold, REASON_BELOW_THRESHOLD, before, before))
        return state
    start, end = clear_range(messages, cfg.clear_retention_suffix_limit)
    if start >= end:
        yield from rt.emit(_summary(threshold, REASON_NOTHING_IN_RANGE, before, before))
        return state
    part = messages[start:end]
    rewritten = False
    if cfg.clear_message_rewriter is not None:
        new_part = yield from _rewrite_steps(rt, part, kind)
        rewritten = len(new_part) != len(part) or any(a is not b for a, b in zip(new_part, part, strict=False))
        part = new_part
    edit = messages[:start] + part + messages[end:]
    at_least = cfg.clear_at_least_tokens
    stashed: list[tuple[Resolved, str, str]] = []
    cleared: list[_Cleared] = []
    for idx in range(start, start + len(part)):
        msg = edit[idx]
        calls = tool_calls_of(msg)
        if not calls or is_processed(msg):
            continue
        for ref in calls:
            ridx = find_result(edit, idx, ref.call_id)
            resolved = rt.clear_for(ref.name) if ridx is not None else None
            if ridx is None or resolved is None:
                continue
            read = read_result(edit[ridx], ref.call_id)
            if read is None or _already_cleared(read[0]):
                continue
            original, from_content = read
            detail = ToolDetail(
                tool_context=ToolContext(name=ref.name, call_id=ref.call_id),
                tool_argument=ToolArgument(text=ref.arguments),
                tool_result=original,
            )
            result = yield from _handle_steps(resolved, detail)
            if result is None:
                continue
            assert result.tool_argument is not None and result.tool_result is not None
            path = result.offload_file_path if result.need_offload else ""
            if result.need_offload:
                if at_least > 0:
                    stashed.append((resolved, path, result.offload_content))
                else:
                    yield from rt.offload("clear", resolved.backend, path, result.offload_content)
            new_args = result.tool_argument.text
            msg = write_arguments(msg, ref, new_args)
            edit[ridx] = write_result(edit[ridx], ref.call_id, result.tool_result.parts, from_content)
            args_changed = new_args != ref.arguments
            cleared.append(
                _Cleared(
                    ref,
                    (ref.arguments if args_changed else "") + text_of(original.parts),
                    (new_args if args_changed else "") + text_of(result.tool_result.parts),
                    # A placeholder may name a file written earlier (a truncated result).
                    result.offload_file_path,
                )
            )
        edit[idx] = mark_processed(msg)
    after = yield call(rt.counter, edit, tools)
    if at_least > 0:
        if before - after < at_least:
            yield from rt.emit(_summary(threshold, REASON_BELOW_AT_LEAST, before, before))
            return state
        for resolved, path, content in stashed:
            yield from rt.offload("clear", resolved.backend, path, content)
    new_state = dataclasses.replace(state, messages=edit)
    if cfg.clear_post_process is not None:
        yield call(cfg.clear_post_process, new_state)
    for item in cleared:
        event = ReductionEvent(
            phase="clear", kind="tool", tool_name=item.ref.name, call_id=item.ref.call_id,
            offload_path=item.path,
        )
        event = yield from rt.with_figures(event, item.before, item.after, kind)
        yield from rt.emit(event)
    reason = REASON_APPLIED if cleared or rewritten else REASON_NOTHING_CLEARED
    yield from rt.emit(
        _summary(threshold, reason, before, after, applied=True, calls_cleared=len(cleared))
    )
    return new_state

