"""What a recorded transcript's messages mean to a replay, apart from the engine.

Stable ids for calls recorded without one, which assistant messages were model calls,
when two calls are the same call, and when two messages look the same to a model (for
prompt caching).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from reduction_app.engine import (
    PROCESSED_FLAG,
    AgenticMessage,
    FunctionToolCall,
    FunctionToolResult,
    Message,
)
from reduction_app.engine.inspect import classify

__all__ = ["Key", "call_key", "model_calls", "result_blocks", "unflagged", "with_stable_ids"]

Key = tuple[str, str]
"""A call's tool name and its arguments as canonical JSON: what makes two calls the same."""


def call_key(name: str, arguments: str) -> Key:
    """``(name, arguments)``, the arguments re-dumped with sorted keys when they are JSON."""
    try:
        return name, json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return name, arguments


def model_calls(messages: Sequence[Any]) -> list[int]:
    """Indices of the assistant messages a model produced: those after some input (a
    user message or a tool result). An assistant message before any input (a fixed
    greeting an agent framework sends on its own) was never a model call."""
    out = []
    seen_input = False
    for index, msg in enumerate(messages):
        kind = classify(msg)
        if kind == "assistant":
            if seen_input:
                out.append(index)
        elif kind in ("user", "tool_result"):
            seen_input = True
    return out


def with_stable_ids(messages: Sequence[Any]) -> list[Any]:
    """Give calls and results with an empty id a stable one (``sim-<message>-<position>``),
    results taking their call's in order, so replays are deterministic: the engine would
    otherwise name their offload files with a random id."""
    out: list[Any] = []
    pending: list[str] = []

    def result_id(index: int) -> str:
        return pending.pop(0) if pending else f"sim-{index}"

    for index, msg in enumerate(messages):
        if isinstance(msg, Message):
            if any(not c.id for c in msg.tool_calls):
                calls = []
                for j, c in enumerate(msg.tool_calls):
                    if not c.id:
                        c = dataclasses.replace(c, id=f"sim-{index}-{j}")
                        pending.append(c.id)
                    calls.append(c)
                msg = dataclasses.replace(msg, tool_calls=tuple(calls))
            elif msg.role == "tool" and not msg.tool_call_id:
                msg = dataclasses.replace(msg, tool_call_id=result_id(index))
        elif isinstance(msg, AgenticMessage):
            blocks: list[Any] = []
            for j, b in enumerate(msg.content_blocks):
                if isinstance(b, FunctionToolCall) and not b.call_id:
                    b = dataclasses.replace(b, call_id=f"sim-{index}-{j}")
                    pending.append(b.call_id)
                elif isinstance(b, FunctionToolResult) and not b.call_id:
                    b = dataclasses.replace(b, call_id=result_id(index))
                blocks.append(b)
            if any(a is not b for a, b in zip(blocks, msg.content_blocks, strict=True)):
                msg = dataclasses.replace(msg, content_blocks=tuple(blocks))
        out.append(msg)
    return out


def unflagged(msg: Any) -> Any:
    """``msg`` without the clear phase's processed flag: engine bookkeeping that is never
    sent to a model, so it must not break a prompt-cache prefix."""
    if PROCESSED_FLAG not in msg.extra:
        return msg
    extra = {k: v for k, v in msg.extra.items() if k != PROCESSED_FLAG}
    return dataclasses.replace(msg, extra=extra)


def result_blocks(msg: AgenticMessage) -> list[tuple[int, FunctionToolResult]]:
    """The result blocks of ``msg``, each with its occurrence among blocks of the same id
    (models do reuse ids)."""
    seen: dict[str, int] = {}
    out = []
    for block in msg.content_blocks:
        if isinstance(block, FunctionToolResult):
            out.append((seen.get(block.call_id, 0), block))
            seen[block.call_id] = seen.get(block.call_id, 0) + 1
    return out
