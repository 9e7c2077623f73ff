"""The message rewriter's run over the clear range (docs/behaviour.md §4.5): each call
group not cleared before goes, with its window of results, to ``clear_message_rewriter``,
and what it returns replaces the group. ``_phase`` puts the new range in place and
checks that no call was split from its result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from reduction_app.engine._steps import Steps, call
from reduction_app.engine.access import (
    AnyMessage,
    call_results,
    classify,
    is_cleared,
    is_processed,
    read_result,
    tool_calls_of,
)
from reduction_app.engine.errors import MessageError

if TYPE_CHECKING:
    from reduction_app.engine.runtime import Runtime

__all__ = ["rewrite_steps"]


def _group_done(part: Sequence[AnyMessage], index: int) -> bool:
    """Whether the call group at ``index`` was cleared before: flagged, or every result it
    has holds one of our placeholders (a conversation sent back without its flags)."""
    if is_processed(part[index]):
        return True
    found = [(ref, slot) for ref, slot in call_results(part, index) if slot is not None]
    for ref, (ridx, occurrence) in found:
        read = read_result(part[ridx], ref.call_id, occurrence)
        if read is not None and not is_cleared(read[0]):
            return False
    return bool(found)


def rewrite_steps(rt: Runtime, part: list[AnyMessage], kind: str) -> Steps[list[AnyMessage]]:
    """``part`` (the range) through ``clear_message_rewriter`` (docs/behaviour.md §4.5):
    each call group not cleared before, with its window, is replaced by what the rewriter
    returns; every other message is kept."""
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
        if _group_done(part, i):
            out.extend(part[i:j])
        else:
            replaced = yield call(rewriter, msg, list(part[i + 1 : j]))
            out.extend(_check_rewritten(replaced, kind))
        i = j
    return out


def _check_rewritten(replaced: Any, kind: str) -> list[AnyMessage]:
    if replaced is None:
        return []
    if not isinstance(replaced, list | tuple):
        raise MessageError(
            f"clear_message_rewriter must return a list of messages or None, got {replaced!r}"
        )
    for msg in replaced:
        if getattr(msg, "kind", None) != kind:
            raise MessageError(f"clear_message_rewriter returned {msg!r}, not a {kind} message")
    return list(replaced)
