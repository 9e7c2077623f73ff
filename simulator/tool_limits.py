"""Which limits per tool and per shell command kind a corpus calls for.

:func:`dimensions` reads a corpus once and names the tools and command kinds whose long
outputs hold a large share of its characters (a shell tool by its commands' kinds);
:func:`with_limit` gives a config such a limit, and :mod:`simulator.recommend` searches
each along :data:`LADDER`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reduction_app.engine import (
    AgenticMessage,
    FunctionToolCall,
    FunctionToolResult,
    Message,
    command_kind,
    shell_command,
)
from simulator.recording import RecordedConversation

__all__ = [
    "FIELDS",
    "LADDER",
    "MAX_DIMENSIONS",
    "MIN_SHARE",
    "Dimension",
    "dimensions",
    "with_limit",
]

TOOL_FIELD = "trunc_tool_limits"
KIND_FIELD = "trunc_command_limits"
FIELDS = (TOOL_FIELD, KIND_FIELD)
"""The config fields the limits are set in."""
LADDER = (1000, 2000, 4000, 8000, 16000, 32000)
"""The limits (characters) each dimension is tried at."""
MIN_SHARE = 0.05
"""The least share of the characters a tool or kind must hold to be searched."""
MAX_DIMENSIONS = 6
"""The most tools and kinds searched."""


@dataclass(frozen=True)
class Dimension:
    """One limit to search: ``field`` (one of :data:`FIELDS`) at ``key``."""

    field: str
    key: str
    outputs: int
    """Outputs longer than the smallest limit of :data:`LADDER`."""
    chars: int
    """Their characters."""
    share: float
    """Their share of the characters of all such outputs."""

    @property
    def label(self) -> str:
        return f"{'tool' if self.field == TOOL_FIELD else 'command kind'} {self.key}"


def _calls_and_results(msg: Any) -> tuple[list[tuple[str, str, str]], list[tuple[str, int]]]:
    """A message's tool calls as ``(id, name, arguments)`` and its results as ``(id,
    length)``."""
    if isinstance(msg, Message):
        calls = [(c.id, c.name, c.arguments) for c in msg.tool_calls]
        if msg.role == "tool":
            length = len(msg.content) + sum(
                len(p.text or "") for p in msg.user_input_multi_content if p.type == "text"
            )
            return calls, [(msg.tool_call_id, length)]
        return calls, []
    assert isinstance(msg, AgenticMessage)
    calls = [
        (b.call_id, b.name, b.arguments)
        for b in msg.content_blocks
        if isinstance(b, FunctionToolCall)
    ]
    results = [
        (b.call_id, sum(len(c.text or "") for c in b.content))
        for b in msg.content_blocks
        if isinstance(b, FunctionToolResult)
    ]
    return calls, results


def dimensions(conversations: Sequence[RecordedConversation]) -> list[Dimension]:
    """The limits worth searching on ``conversations`` (see the module docstring)."""
    least = LADDER[0]
    by_tool: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    shell_only: dict[str, bool] = {}
    total = 0
    for conversation in conversations:
        calls: dict[str, tuple[str, str | None]] = {}
        for msg in conversation.messages:
            made, results = _calls_and_results(msg)
            for call_id, name, arguments in made:
                command = shell_command(arguments)
                calls[call_id] = (name, None if command is None else command_kind(command))
                shell_only[name] = shell_only.get(name, True) and command is not None
            for call_id, length in results:
                if length <= least or call_id not in calls:
                    continue
                name, kind = calls[call_id]
                total += length
                by_tool[name][0] += 1
                by_tool[name][1] += length
                if kind is not None:
                    by_kind[kind][0] += 1
                    by_kind[kind][1] += length
    found = [
        Dimension(TOOL_FIELD, name, n, chars, chars / total)
        for name, (n, chars) in by_tool.items()
        if not shell_only.get(name, False)
    ]
    found += [
        Dimension(KIND_FIELD, kind, n, chars, chars / total) for kind, (n, chars) in by_kind.items()
    ]
    found = [d for d in found if d.share >= MIN_SHARE]
    found.sort(key=lambda d: (-d.chars, d.field, d.key))
    return found[:MAX_DIMENSIONS]


def with_limit(config: Mapping[str, Any], dimension: Dimension, limit: int) -> dict[str, Any]:
    """``config`` with ``dimension`` limited to ``limit`` characters."""
    limits = dict(config.get(dimension.field) or {})
    limits[dimension.key] = limit
    return {**config, dimension.field: dict(sorted(limits.items()))}
