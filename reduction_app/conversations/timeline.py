"""What the conversation page shows: the replayed context window of a conversation
without recorded clear passes, and the message timeline with its truncated and cleared
tool results. Nothing here writes; the database reads are in ``conversations.selectors``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reduction_app.charts import CONTEXT_LABEL, ContextSeries, series_from_run
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.engine import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    Message,
    Reasoning,
    UserInputText,
    get_token_counter,
)
from reduction_app.engine.inspect import (
    classify,
    is_clear_placeholder,
    tool_calls_of,
    truncation_file_path,
)
from reduction_app.models import Conversation
from simulator.pricing import DEFAULT_PRICING, engine_measure
from simulator.replay import replay
from simulator.stored import ReplayRun

__all__ = ["MessagePart", "TimelineRow", "message_parts", "series_from_replay", "timeline_rows"]

ENGINE_MEASURE = engine_measure(DEFAULT_PRICING)
"""The chart reads the replay's clear passes, in the config's counter whatever the price
preset; counting the provider's measure as well would only cost time."""

PREVIEW_CHARS = 400
"""Characters of a message shown in the timeline; the whole text is in the transcript."""

INLINE_CHARS = 20_000
"""A clipped message up to this many characters opens in place on the conversation page;
a longer one opens on its own page, which keeps the conversation page light."""

# The offloaded clear placeholder names its file after "saved to:" (the recogniser in the
# engine only says yes or no; paths never hold whitespace, docs/behaviour.md, decision 7).
_PLACEHOLDER_PATH = re.compile(r"(?:Tool result saved to|工具结果已保存至): (\S+)")


def series_from_replay(
    conversation: Conversation, config: Mapping[str, Any], *, label: str = CONTEXT_LABEL
) -> ContextSeries:
    """The series of a simulator replay of the stored transcript under ``config``, for a
    conversation without recorded clear summaries (one per ``POST /clear``, that is per
    model call); those that have them are charted by ``charts.series_from_events``.

    Raises ``ValueError`` when the stored transcript cannot be read.
    """
    result = replay(recorded_conversation(conversation), config, pricing=ENGINE_MEASURE)
    return series_from_run(ReplayRun.of(result), label=label)


# The timeline -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Badge:
    kind: str
    """``truncated`` or ``cleared``."""
    path: str | None
    """The offloaded file, when there is one."""


@dataclass(frozen=True)
class TimelineRow:
    number: int
    """1-based position in the conversation."""
    role: str
    """``system``, ``user``, ``assistant`` or ``tool``."""
    tool_name: str
    tokens: int
    text: str
    """The start of the message's text (plain; the template escapes it)."""
    clipped: bool
    chars: int
    """Characters of the message's whole text (tool calls included)."""
    badges: list[Badge] = field(default_factory=list)


def _result_texts(msg: Any) -> list[tuple[str, str]]:
    """``(tool name, text)`` of each tool result text in ``msg``."""
    if isinstance(msg, Message):
        texts = [msg.content] if msg.content else []
        texts += [p.text for p in msg.user_input_multi_content if p.type == "text"]
        return [(msg.tool_name, t) for t in texts]
    return [
        (block.name, piece.text)
        for block in msg.content_blocks
        if isinstance(block, FunctionToolResult)
        for piece in block.content
        if piece.type == "text"
    ]


def _text(msg: Any) -> str:
    if isinstance(msg, Message):
        parts = [msg.reasoning_content, msg.content]
        parts += [p.text for p in msg.user_input_multi_content if p.type == "text"]
        parts += [p.text for p in msg.assistant_gen_multi_content if p.type == "text"]
        parts += [f"→ {c.name}({c.arguments})" for c in msg.tool_calls]
        return "\n".join(p for p in parts if p)
    out = []
    for block in msg.content_blocks:
        if isinstance(block, UserInputText | AssistantGenText | Reasoning):
            out.append(block.text)
        elif isinstance(block, FunctionToolCall):
            out.append(f"→ {block.name}({block.arguments})")
        elif isinstance(block, FunctionToolResult):
            out += [c.text for c in block.content if c.type == "text"]
    return "\n".join(t for t in out if t)


@dataclass(frozen=True)
class MessagePart:
    """One piece of a message as its own page shows it, whole."""

    kind: str
    """``reasoning``, ``text``, ``tool call`` or ``tool result``."""
    name: str
    """The tool's name (tool calls and results)."""
    call_id: str
    text: str
    """The text; a tool call's arguments as indented JSON when they parse."""


def _arguments(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments  # shown as the model wrote them


def message_parts(msg: Any, *, result_name: str = "") -> list[MessagePart]:
    """Every piece of ``msg``, whole and in order, tool call arguments pretty-printed.
    ``result_name`` names the tool of a result that does not name it (the call before it
    does: see :func:`timeline_rows`)."""
    if isinstance(msg, Message):
        texts = [("reasoning", msg.reasoning_content), ("text", msg.content)]
        texts += [("text", p.text) for p in msg.user_input_multi_content if p.type == "text"]
        texts += [("text", p.text) for p in msg.assistant_gen_multi_content if p.type == "text"]
        kind = "tool result" if msg.role == "tool" else ""
        parts = [
            MessagePart(
                kind or k, (msg.tool_name or result_name) if kind else "", msg.tool_call_id, t
            )
            for k, t in texts
            if t
        ]
        parts += [
            MessagePart("tool call", c.name, c.id, _arguments(c.arguments)) for c in msg.tool_calls
        ]
        return parts
    parts = []
    for block in msg.content_blocks:
        if isinstance(block, Reasoning) and block.text:
            parts.append(MessagePart("reasoning", "", "", block.text))
        elif isinstance(block, UserInputText | AssistantGenText) and block.text:
            parts.append(MessagePart("text", "", "", block.text))
        elif isinstance(block, FunctionToolCall):
            parts.append(
                MessagePart("tool call", block.name, block.call_id, _arguments(block.arguments))
            )
        elif isinstance(block, FunctionToolResult):
            parts += [
                MessagePart("tool result", block.name or result_name, block.call_id, c.text)
                for c in block.content
                if c.type == "text"
            ]
    return parts


def _badges(texts: Sequence[tuple[str, str]]) -> list[Badge]:
    badges = []
    for _, text in texts:
        path = truncation_file_path(text)
        if path is not None:
            badges.append(Badge("truncated", path))
        elif is_clear_placeholder(text):
            found = _PLACEHOLDER_PATH.search(text)
            badges.append(Badge("cleared", found.group(1) if found else None))
    return badges


def timeline_rows(
    messages: Sequence[Any], start: int, stop: int, token_counter: str = "approx"
) -> list[TimelineRow]:
    """Rows for ``messages[start:stop]``; only those are counted and read in full (tool
    names of results come from the calls before them, so the walk starts at 0). The
    stored transcript is read through the engine's formats, and the engine's own
    notices in it are recognised as truncated and cleared results."""
    counter: Any = get_token_counter(token_counter)
    names: dict[str, str] = {}
    rows = []
    for index, msg in enumerate(messages[:stop]):
        for ref in tool_calls_of(msg):
            names[ref.call_id] = ref.name
        if index < start:
            continue
        kind = classify(msg)
        texts = _result_texts(msg) if kind == "tool_result" else []
        tool = ""
        if kind == "tool_result":
            first = texts[0][0] if texts else ""
            call_id = msg.tool_call_id if isinstance(msg, Message) else _first_call_id(msg)
            tool = first or names.get(call_id, "")
        elif kind == "assistant":
            tool = ", ".join(ref.name for ref in tool_calls_of(msg))
        text = _text(msg)
        rows.append(
            TimelineRow(
                number=index + 1,
                role="tool" if kind == "tool_result" else msg.role,
                tool_name=tool,
                tokens=int(counter.count_message(msg)),
                text=text[:PREVIEW_CHARS],
                clipped=len(text) > PREVIEW_CHARS,
                chars=len(text),
                badges=_badges(texts),
            )
        )
    return rows


def _first_call_id(msg: AgenticMessage) -> str:
    return next((b.call_id for b in msg.content_blocks if isinstance(b, FunctionToolResult)), "")
