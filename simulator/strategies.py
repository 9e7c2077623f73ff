"""Agents' own context strategies, rebuilt from the engine's knobs.

A recording made under its agent's own strategy is replayed under the same one, so the
simulator's numbers start from what the agent really sent; so far SWE-agent's
``last_n_observations``. :func:`keep_last_observations` also computes it without the
engine, so the two can be held against each other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reduction_app.engine import (
    ClearResult,
    InMemoryBackend,
    Message,
    ReductionConfig,
    ToolDetail,
    ToolOutputPart,
    ToolReductionConfig,
    ToolResult,
    stringify,
)
from reduction_app.engine.inspect import classify, tool_calls_of

__all__ = ["elided_observation", "keep_last_observations", "strategy_config", "tool_names"]


def elided_observation(text: str) -> str:
    """What SWE-agent puts in place of an old observation."""
    return f"Old environment output: ({len(text.splitlines())} lines omitted)"


def _elide(detail: ToolDetail) -> ClearResult:
    original = stringify(detail.tool_result.parts) if detail.tool_result else ""
    replacement = ToolResult(
        parts=(ToolOutputPart(type="text", text=elided_observation(original)),)
    )
    return ClearResult(need_clear=True, tool_argument=detail.tool_argument, tool_result=replacement)


def strategy_config(strategy: Mapping[str, Any], tool_names: Iterable[str]) -> ReductionConfig:
    """The engine config that runs ``strategy`` over a conversation calling ``tool_names``.

    Raises ``ValueError`` for a strategy it does not know.
    """
    n = strategy.get("keep_last_observations")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or len(strategy) != 1:
        raise ValueError(f"unknown strategy {dict(strategy)!r}; known: keep_last_observations")
    handler = ToolReductionConfig(clear_handler=_elide)
    return ReductionConfig(
        backend=InMemoryBackend(),
        skip_truncation=True,
        max_tokens_for_clear=1,
        clear_retention_suffix_limit=n,
        tool_config={name: handler for name in sorted(set(tool_names))},
    )


def tool_names(messages: Sequence[Any]) -> set[str]:
    """Every tool a conversation calls."""
    return {ref.name for m in messages for ref in tool_calls_of(m)}


def keep_last_observations(messages: Sequence[Any], n: int) -> list[Any]:
    """``messages`` (a chat context) as SWE-agent's processor would send them: every tool
    result but the last ``n`` elided. Computed directly, for comparison."""
    results = [i for i, m in enumerate(messages) if classify(m) == "tool_result"]
    old = set(results[: max(len(results) - n, 0)])
    out = []
    for i, msg in enumerate(messages):
        if i in old and isinstance(msg, Message):
            msg = dataclasses.replace(msg, content=elided_observation(msg.content))
        out.append(msg)
    return out
