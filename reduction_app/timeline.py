"""What the conversation page shows: the context window call by call, and the message
timeline with its truncated and cleared tool results.

The context series comes from the conversation's recorded clear summaries (one per
``POST /clear``, that is per model call) when it has them; otherwise the stored
transcript is replayed through the simulator. The timeline reads the stored transcript
through the engine's formats and recognises the engine's own notices in it. Nothing
here writes; the database reads are in ``selectors``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

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
from reduction_app.simulations import recorded_conversation
from simulator.pricing import DEFAULT_PRICING, engine_measure
from simulator.replay import replay

__all__ = [
    "CallPoint",
    "ContextSeries",
    "TimelineRow",
    "context_chart",
    "series_from_events",
    "series_from_replay",
    "timeline_rows",
]

ENGINE_MEASURE = engine_measure(DEFAULT_PRICING)
"""Replays for the chart count as the clear phase does, so every point is in the unit of
the threshold it is drawn against."""

PREVIEW_CHARS = 400
"""Characters of a message shown in the timeline; the whole text is in the transcript."""

# The offloaded clear placeholder names its file after "saved to:" (the recogniser in the
# engine only says yes or no; paths never hold whitespace, see engine/paths.py).
_PLACEHOLDER_PATH = re.compile(r"(?:Tool result saved to|工具结果已保存至): (\S+)")


@dataclass(frozen=True)
class CallPoint:
    """One model call: the context before and after the clear pass, in tokens."""

    call: int
    """1-based."""
    before: int
    after: int
    threshold: int | None
    truncations: int = 0
    """Tool results truncated since the previous call."""
    cleared: bool = False
    calls_cleared: int = 0


@dataclass(frozen=True)
class ContextSeries:
    source: str
    """``recorded`` (the conversation's clear events) or ``replay``."""
    points: list[CallPoint]
    trailing_truncations: int = 0
    """Truncations recorded after the last model call."""

    @property
    def peak(self) -> int:
        return max((p.after for p in self.points), default=0)

    @property
    def clears(self) -> int:
        return sum(1 for p in self.points if p.cleared)

    @property
    def truncations(self) -> int:
        return sum(p.truncations for p in self.points) + self.trailing_truncations


def series_from_events(rows: Iterable[Mapping[str, Any]]) -> ContextSeries:
    """The series from recorded events in id order (truncations and clear summaries):
    truncations between two summaries arrived before the second one's model call."""
    points: list[CallPoint] = []
    pending = 0
    for row in rows:
        if row["kind"] == "summary":
            points.append(
                CallPoint(
                    call=len(points) + 1,
                    before=row["tokens_before"],
                    after=row["tokens_after"],
                    threshold=row["threshold"] or None,
                    truncations=pending,
                    cleared=row["reason"] == "applied",
                    calls_cleared=row["calls_cleared"],
                )
            )
            pending = 0
        elif row["phase"] == "truncation":
            pending += 1
    return ContextSeries("recorded", points, trailing_truncations=pending)


def series_from_replay(conversation: Conversation, config: Mapping[str, Any]) -> ContextSeries:
    """The series of a simulator replay of the stored transcript under ``config``.

    Raises ``ValueError`` when the stored transcript cannot be read.
    """
    result = replay(recorded_conversation(conversation), config, pricing=ENGINE_MEASURE)
    points = []
    for call in result.calls:
        summary = next((e for e in call.events if e.kind == "summary"), None)
        truncations = sum(1 for e in call.events if e.phase == "truncation")
        if summary is None:  # skip_clear: no pass ran, the context went out as it was
            before = after = call.context_tokens
            points.append(CallPoint(call.index + 1, before, after, None, truncations))
            continue
        points.append(
            CallPoint(
                call=call.index + 1,
                before=summary.tokens_before,
                after=summary.tokens_after,
                threshold=summary.threshold or None,
                truncations=truncations,
                cleared=summary.reason == "applied",
                calls_cleared=summary.calls_cleared,
            )
        )
    return ContextSeries("replay", points)


def context_chart(series: ContextSeries) -> dict[str, Any]:
    """The Chart.js config of the context-window chart: the context sent and before the
    clear pass, the ``max_tokens_for_clear`` line, and markers for truncations and clears."""
    points = series.points
    warn, accent, red, grey = "#a2520a", "#2f5bd3", "#a1121a", "#9aa7bd"
    marker = {"type": "line", "showLine": False, "pointRadius": 7, "pointHoverRadius": 9}
    return {
        "type": "line",
        "data": {
            "labels": [p.call for p in points],
            "datasets": [
                {
                    "label": "context sent (tokens)",
                    "data": [p.after for p in points],
                    "borderColor": accent,
                    "backgroundColor": accent,
                    "pointRadius": 2,
                    "order": 3,
                },
                {
                    "label": "before the clear pass",
                    "data": [p.before for p in points],
                    "borderColor": grey,
                    "backgroundColor": grey,
                    "borderDash": [4, 3],
                    "pointRadius": 0,
                    "order": 4,
                },
                {
                    "label": "max_tokens_for_clear",
                    "data": [p.threshold for p in points],
                    "borderColor": red,
                    "backgroundColor": red,
                    "borderDash": [8, 4],
                    "pointRadius": 0,
                    "stepped": True,
                    "order": 5,
                },
                {
                    **marker,
                    "label": "truncation before this call",
                    "data": [p.after if p.truncations else None for p in points],
                    "pointStyle": "triangle",
                    "borderColor": warn,
                    "backgroundColor": warn,
                    "order": 1,
                },
                {
                    **marker,
                    "label": "clear applied",
                    "data": [p.before if p.cleared else None for p in points],
                    "pointStyle": "rectRot",
                    "borderColor": accent,
                    "backgroundColor": "#e8f0ff",
                    "order": 2,
                },
            ],
        },
        "options": {
            "interaction": {"mode": "index", "intersect": False},
            "scales": {
                "x": {"title": {"display": True, "text": "model call"}},
                "y": {"beginAtZero": True, "title": {"display": True, "text": "tokens"}},
            },
            "plugins": {"legend": {"position": "bottom"}},
        },
    }


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
    names of results come from the calls before them, so the walk starts at 0)."""
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
                badges=_badges(texts),
            )
        )
    return rows


def _first_call_id(msg: AgenticMessage) -> str:
    return next((b.call_id for b in msg.content_blocks if isinstance(b, FunctionToolResult)), "")
