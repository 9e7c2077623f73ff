"""The clear phase's entry and its decisions (docs/behaviour.md §4): whether a pass runs,
over which range, which steps it takes, when it stops and what it commits, and what it
keeps from one pass to the next (:class:`ClearMemory`). What a pass does to its working
copy is ``_pass``'s, the rewriter's run ``_rewriter``'s, its events ``_figures``'s.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reduction_app.engine._clear._cache_aware import cache_ceiling
from reduction_app.engine._clear._figures import cache_estimate, figures, summary_event
from reduction_app.engine._clear._landmarks import (
    Landmarks,
    carry_landmarks,
    find_landmarks,
    range_end,
)
from reduction_app.engine._clear._pairing import check_edit, shared_tail
from reduction_app.engine._clear._pass import (
    Pass,
    check_pass,
    count_steps,
    counted,
    first_difference,
    group_steps,
    superseded_steps,
)
from reduction_app.engine._clear._rewriter import rewrite_steps
from reduction_app.engine._clear._superseded import Readers
from reduction_app.engine._steps import Steps, call
from reduction_app.engine._tokens._counters import CachingCounter
from reduction_app.engine.access import (
    AnyMessage,
    conversation_kind,
    has_tool_calls,
    is_processed,
)
from reduction_app.engine.errors import MessageError
from reduction_app.engine.events import (
    REASON_APPLIED,
    REASON_BELOW_AT_LEAST,
    REASON_BELOW_CACHE_BREAK_EVEN,
    REASON_BELOW_THRESHOLD,
    REASON_NOTHING_CLEARED,
    REASON_NOTHING_IN_RANGE,
)
from reduction_app.engine.messages import ToolInfo

if TYPE_CHECKING:
    from reduction_app.engine.config import ReductionConfig
    from reduction_app.engine.runtime import Runtime

__all__ = ["ChatModelAgentState", "ClearMemory", "clear_range", "clear_steps"]


@dataclass(frozen=True, kw_only=True)
class ChatModelAgentState:
    """What an agent sends to the model: the conversation and the tools it offers."""

    messages: Sequence[AnyMessage]
    tool_infos: Sequence[ToolInfo] = field(default_factory=tuple)
    deferred_tool_infos: Sequence[ToolInfo] = field(default_factory=tuple)


class ClearMemory:
    """What the clear phase keeps from one pass to the next, for one middleware."""

    def __init__(self, config: ReductionConfig) -> None:
        self.readers = Readers.of(config.read_file_tool_name, config.tool_config)
        """Which tools read and edit files (the ``clear_superseded`` strategy)."""
        self.landmarks: Landmarks | None = None
        """Where the last pass's work stood (see :mod:`._landmarks`). A pass takes them
        (:meth:`take_landmarks`) and puts back its own when it is done."""
        self._lock = threading.Lock()

    def take_landmarks(self) -> Landmarks | None:
        """The landmarks the last pass left, leaving none: their mirror is edited by the pass
        that took them, so a pass running at the same time (threads, or coroutines that
        interleave) starts afresh instead."""
        with self._lock:
            marks, self.landmarks = self.landmarks, None
        return marks


def clear_range(messages: Sequence[AnyMessage], retention: int) -> tuple[int, int]:
    """``[start, end)``: from the first unprocessed assistant message up to (not
    including) the ``retention``-th latest assistant message with tool calls."""
    return find_landmarks(messages, None).start, range_end(messages, retention)


def clear_steps(
    rt: Runtime, memory: ClearMemory, state: ChatModelAgentState
) -> Steps[ChatModelAgentState]:
    """The whole clear phase over ``state``; returns ``state`` itself when nothing applies."""
    cfg = rt.config
    if not rt.clear_enabled:
        return state
    if isinstance(state.messages, str) or not isinstance(state.messages, Sequence):
        raise MessageError(f"state.messages must be a list of messages, got {state.messages!r}")
    given = state.messages if isinstance(state.messages, list) else list(state.messages)
    # The style, the range's start and, past call groups already gone through, where its
    # work starts: found from what the last pass left, so only what arrived since is read.
    # From here on the pass reads the landmarks' mirror (the caller's content, private to
    # this pass), never the caller's list again.
    marks = carry_landmarks(given, memory.take_landmarks())
    try:
        done = yield from _pass_steps(rt, state, marks, memory.readers)
    except BaseException:
        memory.landmarks = marks  # the mirror still holds what the caller passed
        raise
    if done is None:
        memory.landmarks = marks
        return state
    ps, before, after = done
    mirror = marks.messages
    assert isinstance(mirror, list)
    hook = cfg.clear_post_process
    returned_before_hook = tuple(ps.out) if hook is not None else ()
    # Positions carry over when no message moved (a rewriter or a manifest may move them);
    # the mirror then takes what the pass wrote, and holds what the caller gets.
    if cfg.clear_message_rewriter is None and ps.out is ps.edit:
        for i in ps.written:
            mirror[i] = ps.edit[i]
        memory.landmarks = marks.after_pass(mirror, counted=ps.counted)
    new_state = dataclasses.replace(state, messages=ps.out)
    threshold = cfg.max_tokens_for_clear
    if hook is not None:
        yield call(hook, new_state)
        # The hook's return value is ignored, but it holds the list the phase returns.
        returned = tuple(ps.out)
        if returned != returned_before_hook:
            conversation_kind(returned)
            check_edit("clear_post_process", returned_before_hook, returned)
    if rt.listening():
        for item in ps.cleared:
            event = yield from figures(rt, item, marks.kind or "chat")
            yield from rt.emit(event)
    reason = REASON_APPLIED if ps.cleared or ps.rewritten else REASON_NOTHING_CLEARED
    yield from _summary(
        rt,
        threshold,
        reason,
        before,
        after,
        applied=True,
        calls_cleared=len(ps.cleared),
    )
    return new_state


def _summary(
    rt: Runtime, threshold: int, reason: str, before: int, after: int, **fields: Any
) -> Steps[None]:
    """Emit the summary event (:func:`summary_event`), made only when it goes somewhere:
    every call ends with one, and most go nowhere."""
    if rt.listening():
        yield from rt.emit(summary_event(threshold, reason, before, after, **fields))


def _pass_steps(
    rt: Runtime, state: ChatModelAgentState, marks: Landmarks, readers: Readers
) -> Steps[tuple[Pass, int, int] | None]:
    """The clear pass over ``marks.messages`` (the caller's messages), up to the state it
    would return: the pass, with the tokens before and after; ``None`` when the caller's
    state stays as it is. The offloads are written; nothing else is changed."""
    cfg = rt.config
    messages = marks.messages
    kind = marks.kind or "chat"
    tools = list(state.tool_infos)
    threshold = cfg.max_tokens_for_clear
    # A counter of the caller's gets a list of its own; a built-in one reads the mirror.
    measured = messages if isinstance(rt.counter, CachingCounter) else list(messages)
    before = yield from counted(
        rt, measured, tools, known=marks.found_from, same=marks.shared, key=marks.counted
    )
    if before <= threshold:
        yield from _summary(rt, threshold, REASON_BELOW_THRESHOLD, before, before)
        return None
    start, end = marks.start, range_end(messages, cfg.clear_retention_suffix_limit)
    if start >= end:
        yield from _summary(rt, threshold, REASON_NOTHING_IN_RANGE, before, before)
        return None
    at_least = cfg.clear_at_least_tokens
    # The one copy of the conversation a pass makes: the list it returns.
    ps = Pass(rt=rt, edit=list(messages), stash=at_least > 0 or cfg.clear_cache_aware)
    ps.counted = marks.counted
    try:
        after = None
        if cfg.clear_superseded:
            after = yield from superseded_steps(
                ps, max(start, marks.calls_from), end, tools, readers
            )
        # The pass stops after the superseded results only when that alone brought the
        # conversation down to the threshold and freed what clear_at_least_tokens asks.
        if after is None or after > threshold or before - after < at_least:
            work_from, work_to = max(start, marks.calls_from), end
            if cfg.clear_message_rewriter is not None:
                part = ps.edit[start:end]
                new_part = yield from rewrite_steps(rt, part, kind)
                differs = first_difference(new_part, part)
                before_rewrite = ps.edit
                ps.edit = [*ps.edit[:start], *new_part, *ps.edit[end:]]
                if differs is not None:
                    ps.rewritten = True
                    ps.changed(start + differs)
                    tail = shared_tail(part, new_part, differs)
                    region = (start + differs, end - tail, start + len(new_part) - tail)
                    check_edit("clear_message_rewriter", before_rewrite, ps.edit, region)
                work_from, work_to = start, start + len(new_part)
            for idx in range(work_from, work_to):
                if has_tool_calls(ps.edit[idx]) and not is_processed(ps.edit[idx]):
                    yield from group_steps(ps, idx)
            after = yield from count_steps(ps, tools)
        if at_least > 0 and before - after < at_least:
            yield from _summary(rt, threshold, REASON_BELOW_AT_LEAST, before, before)
            return None
        if cfg.clear_cache_aware and before <= cache_ceiling(
            cfg.clear_cache_ceiling_tokens, threshold
        ):
            estimate = yield from cache_estimate(ps, messages, tools, before - after)
            if not estimate.pays:
                yield from _summary(rt, threshold, REASON_BELOW_CACHE_BREAK_EVEN, before, before)
                return None
        check_pass(ps, messages, end)
        if ps.stash:
            while ps.stashed:
                backend, path, content = ps.stashed.pop(0)
                yield from rt.offload("clear", backend, path, content)
    finally:
        # Paths chosen for writes that will not happen are free again (offload() frees
        # the ones it wrote), so a later pass picks the same paths a fresh middleware would.
        for _, path, _ in ps.stashed:
            rt.registry.release(path)
    return ps, before, after
