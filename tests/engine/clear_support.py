"""Shared builders for the clear-phase tests: docs/behaviour.md §8.2 conversations, small real
collaborators (a character counter, failing backends), and a tau-bench loader."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from reduction_app.engine import ChatModelAgentState, InMemoryBackend, WriteRequest
from reduction_app.engine.blocks import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    ToolResultContent,
    UserInputText,
)
from reduction_app.engine.config import ReductionConfig
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.messages import Message, ToolCall
from reduction_app.engine.middleware import ReductionMiddleware, new
from reduction_app.engine.notices import clear_placeholder
from tests.conftest import CONVERSATIONS, skip_without_recordings

ARGS = '{"location": "London, UK", "unit": "c"}'
QUESTION = (
    "My thermostat reads 21 degrees but the house feels cold. Is it the weather outside in Paris?"
)
ID1 = "call_987654321"
ID2 = "call_123456789"
PLACEHOLDER_ID1 = (
    "<persisted-output>Tool result saved to: /tmp/clear/call_987654321\n"
    "Use read_file to view</persisted-output>"
)
DROPPED = "[Old tool result content cleared]"
TAU_BENCH = CONVERSATIONS / "tau-bench-airline-gpt-4o.json"


def call_msg(*calls: tuple[str, str] | tuple[str, str, str]) -> Message:
    """An assistant message with tool calls given as ``(id, name[, arguments])``."""
    return Message.assistant(
        tool_calls=tuple(
            ToolCall(id=c[0], name=c[1], arguments=c[2] if len(c) > 2 else ARGS)  # type: ignore[misc]
            for c in calls
        )
    )


def c2() -> list[Message]:
    """docs/behaviour.md §8.2 conversation C2 (default counter: 9, 24, 15, 3, 15, 3 = 69)."""
    return [
        Message.system("you are a helpful assistant"),
        Message.user(QUESTION),
        call_msg((ID1, "get_weather")),
        Message.tool("Sunny", ID1),
        call_msg((ID2, "get_weather")),
        Message.tool("Sunny", ID2),
    ]


def agentic_call(*calls: tuple[str, str] | tuple[str, str, str]) -> AgenticMessage:
    return AgenticMessage(
        role="assistant",
        content_blocks=tuple(
            FunctionToolCall(call_id=c[0], name=c[1], arguments=c[2] if len(c) > 2 else ARGS)  # type: ignore[misc]
            for c in calls
        ),
    )


def agentic_results(*results: tuple[str, str]) -> AgenticMessage:
    """A user message holding one ``function_tool_result`` block per ``(call_id, text)``."""
    return AgenticMessage(
        role="user",
        content_blocks=tuple(
            FunctionToolResult(call_id=cid, name="", content=(ToolResultContent(text=text),))
            for cid, text in results
        ),
    )


def agentic_text(role: str, text: str) -> AgenticMessage:
    block = UserInputText(text=text) if role != "assistant" else AssistantGenText(text=text)
    return AgenticMessage(role=role, content_blocks=(block,))


def chars(messages: Sequence[Any], tools: Sequence[Any]) -> int:
    """One token per character of every message's repr-free text (content + arguments)."""
    total = 0
    for m in messages:
        if isinstance(m, Message):
            total += len(m.content) + sum(len(tc.arguments) for tc in m.tool_calls)
        else:
            total += sum(len(getattr(b, "text", "")) for b in m.content_blocks)
            for b in m.content_blocks:
                if isinstance(b, FunctionToolResult):
                    total += sum(len(c.text) for c in b.content)
                if isinstance(b, FunctionToolCall):
                    total += len(b.arguments)
    return total


def constant(value: int) -> Callable[[Sequence[Any], Sequence[Any]], int]:
    def counter(messages: Sequence[Any], tools: Sequence[Any]) -> int:
        return value

    return counter


class FailingBackend(InMemoryBackend):
    """Stores files like :class:`InMemoryBackend`; the ``fail_on``-th write raises."""

    def __init__(self, fail_on: int = 1) -> None:
        super().__init__()
        self.fail_on = fail_on
        self.writes = 0

    def write(self, request: WriteRequest) -> None:
        self.writes += 1
        if self.writes == self.fail_on:
            raise OSError("disk full")
        super().write(request)


class CountingBackend(InMemoryBackend):
    """An in-memory backend that remembers every write in order."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[tuple[str, str]] = []

    def write(self, request: WriteRequest) -> None:
        self.log.append((request.file_path, request.content))
        super().write(request)


def middleware(
    backend: Any = None, **fields: Any
) -> tuple[ReductionMiddleware, list[ReductionEvent]]:
    """A middleware recording its events (unless ``on_event`` is given); ``skip_truncation``
    is implied, as these are clear tests."""
    events: list[ReductionEvent] = []
    fields.setdefault("skip_truncation", True)
    fields.setdefault("on_event", events.append)
    mw = new(ReductionConfig(backend=backend, **fields))
    return mw, events


def state(messages: Sequence[Any]) -> ChatModelAgentState:
    return ChatModelAgentState(messages=list(messages))


def snapshot(s: ChatModelAgentState) -> tuple[int, list[Any], list[Any]]:
    """What the caller holds: the list's identity, its items, and a deep copy of them."""
    return id(s.messages), list(s.messages), copy.deepcopy(list(s.messages))


def assert_untouched(s: ChatModelAgentState, snap: tuple[int, list[Any], list[Any]]) -> None:
    list_id, items, deep = snap
    assert id(s.messages) == list_id
    assert len(s.messages) == len(items)
    assert all(a is b for a, b in zip(s.messages, items, strict=True))
    assert list(s.messages) == deep


def summary(events: Sequence[ReductionEvent]) -> ReductionEvent:
    summaries = [e for e in events if e.kind == "summary"]
    assert len(summaries) == 1
    return summaries[0]


def message_from_openai(raw: dict[str, Any]) -> Message:
    """A chat message from one OpenAI chat message dict (the fields tau-bench uses)."""
    calls = tuple(
        ToolCall(id=tc["id"], name=tc["function"]["name"], arguments=tc["function"]["arguments"])
        for tc in raw.get("tool_calls") or ()
    )
    content = raw.get("content") or ""
    if raw["role"] == "tool":
        return Message.tool(content, raw["tool_call_id"], raw.get("name", ""))
    return Message(role=raw["role"], content=content, tool_calls=calls)


@cache
def _tau_runs() -> list[dict[str, Any]]:
    skip_without_recordings()
    return json.loads(TAU_BENCH.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def tau_bench_traj(index: int) -> list[Message]:
    return [message_from_openai(m) for m in _tau_runs()[index]["traj"]]


def exactly(text: str) -> str:
    """A ``pytest.raises(match=...)`` pattern for exactly ``text``."""
    return f"^{re.escape(text)}$"


def starting(text: str) -> str:
    return f"^{re.escape(text)}"


def ending(text: str) -> str:
    return f"{re.escape(text)}$"


def containing(text: str) -> str:
    return re.escape(text)


def offload_placeholder(call_id: str) -> str:
    """The default placeholder of a result cleared to ``/tmp/clear/<call_id>``."""
    return clear_placeholder(file_path=f"/tmp/clear/{call_id}", read_tool_name="read_file")


def applied_summary(before: int, after: int, calls: int, threshold: int) -> ReductionEvent:
    """The summary event of an applied pass."""
    return ReductionEvent(
        phase="clear",
        kind="summary",
        tokens_before=before,
        tokens_after=after,
        tokens_saved=before - after,
        applied=True,
        calls_cleared=calls,
        reason="applied",
        threshold=threshold,
    )
