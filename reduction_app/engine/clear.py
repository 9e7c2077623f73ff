"""The clear phase: before a model call, old tool results are offloaded and replaced
by placeholders once the conversation is over ``max_tokens_for_clear`` tokens.

Follows docs/behaviour.md §4 (the reference with our decisions): strictly-greater trigger; results
found by call id among the tool-result messages right after their call; a call
already cleared (flagged, or holding one of our placeholders) is never cleared
again; nothing the caller passed is changed; every offload is written before the
state that points at it is returned, and a failure leaves the caller's state as
it was. The rewriter's window is the run of tool results after each call, so it
never swallows a user message, and results with no call are kept, not dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from reduction_app.engine._steps import Steps, call, invoke
from reduction_app.engine.access import (
    AnyMessage,
    CallRef,
    call_results,
    classify,
    conversation_kind,
    is_cleared,
    is_processed,
    mark_processed,
    read_result,
    result_ids,
    tool_calls_of,
    write_arguments,
    write_result,
)
from reduction_app.engine.backends import Backend
from reduction_app.engine.cache_aware import (
    CacheEstimate,
    cache_ceiling,
    cached_end,
    calls_so_far,
)
from reduction_app.engine.errors import MessageError, NoBackendError, ReductionError
from reduction_app.engine.events import (
    REASON_APPLIED,
    REASON_BELOW_AT_LEAST,
    REASON_BELOW_CACHE_BREAK_EVEN,
    REASON_BELOW_THRESHOLD,
    REASON_NOTHING_CLEARED,
    REASON_NOTHING_IN_RANGE,
    STRATEGY_SUPERSEDED,
    ReductionEvent,
)
from reduction_app.engine.landmarks import Landmarks, carry_landmarks, find_landmarks
from reduction_app.engine.manifest import with_manifest
from reduction_app.engine.messages import ToolInfo
from reduction_app.engine.pairing import check_edit, shared_tail
from reduction_app.engine.runtime import Resolved, Runtime
from reduction_app.engine.superseded import superseded_calls
from reduction_app.engine.tokens import CachingCounter
from reduction_app.engine.tool_io import (
    ClearResult,
    ToolArgument,
    ToolContext,
    ToolDetail,
)
from reduction_app.engine.truncation import text_of

__all__ = ["ChatModelAgentState", "clear_range", "clear_steps"]


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
    messages: tuple[AnyMessage, AnyMessage] | None = None
    """The result message before and after, when it holds this one result and the call's
    arguments did not change: its token counts are then already in the counter's cache."""
    strategy: str = ""
    """The event's ``strategy``: empty for the reference's clearing."""


def clear_range(messages: Sequence[AnyMessage], retention: int) -> tuple[int, int]:
    """``[start, end)``: from the first unprocessed assistant message up to (not
    including) the ``retention``-th latest assistant message with tool calls."""
    return find_landmarks(messages, None).start, _range_end(messages, retention)


def _range_end(messages: Sequence[AnyMessage], retention: int) -> int:
    """Where the retained rounds begin: the ``retention``-th latest assistant message with
    tool calls (the end of the list when ``retention`` keeps none)."""
    end, left = len(messages), retention
    while left > 0 and end > 0:
        if tool_calls_of(messages[end - 1]):
            left -= 1
        end -= 1
    return end


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


def _first_difference(a: Sequence[AnyMessage], b: Sequence[AnyMessage]) -> int | None:
    """The first position where ``a`` and ``b`` hold different messages (or one ends)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x is not y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def _check_pass(ps: _Pass, given: Sequence[AnyMessage], end: int) -> None:
    """What the pass returns keeps every call with its result wherever ``given`` did.
    Cleared results are rewritten in place, so without a rewriter only the positions
    from the first change to the range's end are compared; the manifest's moves are
    checked against the pass's list before it (both already cost a walk of the list)."""
    if ps.rewritten:
        check_edit("the clear pass", tuple(given), tuple(ps.edit))
    elif ps.first_change is not None:
        check_edit("the clear pass", given, ps.edit, (ps.first_change, end, end))
    if ps.out is not ps.edit:
        check_edit("clear_offload_manifest", tuple(ps.edit), tuple(ps.out))


def _summary(threshold: int, reason: str, before: int, after: int, **fields: Any) -> ReductionEvent:
    return ReductionEvent(
        phase="clear",
        kind="summary",
        reason=reason,
        threshold=threshold,
        tokens_before=before,
        tokens_after=after,
        tokens_saved=before - after,
        **fields,
    )


def _handle_steps(resolved: Resolved, detail: ToolDetail) -> Steps[ClearResult | None]:
    assert resolved.handler is not None
    result = yield from invoke(resolved.handler, detail)
    name = detail.tool_context.name
    if not isinstance(result, ClearResult):
        raise ReductionError(
            f"clear_handler for tool {name!r} returned {result!r}, not a ClearResult"
        )
    if not result.need_clear:
        return None
    if result.tool_argument is None or result.tool_result is None:
        raise ReductionError(
            f"clear_handler for tool {name!r} set need_clear without tool_argument and tool_result"
        )
    if result.need_offload and resolved.backend is None:
        raise NoBackendError("clear")
    return result


@dataclass
class _Pass:
    """What one clear pass has done so far to its working copy."""

    rt: Runtime
    edit: list[AnyMessage]
    stash: bool
    """``clear_at_least_tokens`` is set: offloads wait until the saving is known."""
    stashed: list[tuple[Backend | None, str, str]] = field(default_factory=list)
    cleared: list[_Cleared] = field(default_factory=list)
    first_change: int | None = None
    """The first position of the working copy whose content the pass changed."""
    counted: object = None
    """What names the list the built-in counter last counted for this pass (its ``key``)."""
    written: list[int] = field(default_factory=list)
    """The positions of ``edit`` the pass assigned (cleared results, flagged calls)."""
    rewritten: bool = False
    """The rewriter changed the range."""
    out: list[AnyMessage] = field(init=False)
    """What the pass returns: ``edit`` itself, or under ``clear_offload_manifest`` a copy
    with the manifest in place, as last counted (:func:`_count_steps`)."""

    def __post_init__(self) -> None:
        self.out = self.edit

    def changed(self, index: int) -> None:
        if self.first_change is None or index < self.first_change:
            self.first_change = index


def _group_steps(ps: _Pass, idx: int, only: Collection[int] | None = None) -> Steps[None]:
    """Clear the results of the assistant message at ``idx`` and flag it; with ``only``,
    clear just the superseded calls at those positions and leave the message unflagged
    (the rest of its calls are still to be gone through)."""
    edit = ps.edit
    msg = edit[idx]
    for ref, slot in call_results(edit, idx):
        resolved = ps.rt.clear_for(ref.name) if slot is not None else None
        if slot is None or resolved is None:
            continue
        # A tool's own handler may write something other than our placeholder, which only
        # the flag would then mark as cleared: such tools are left to the reference's pass.
        if only is not None and (ref.position not in only or not resolved.is_default):
            continue
        ridx, occurrence = slot
        read = read_result(edit[ridx], ref.call_id, occurrence)
        # Nothing to replace in a result without text (media stay in context anyway), and
        # a result already holding our placeholder is never cleared twice (decision 5).
        if read is None or is_cleared(read[0]) or not any(p.type == "text" for p in read[0].parts):
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
        if result.need_offload:
            offload = (resolved.backend, result.offload_file_path, result.offload_content)
            if ps.stash:
                ps.stashed.append(offload)
            else:
                yield from ps.rt.offload("clear", *offload)
        new_args = result.tool_argument.text
        new_parts = result.tool_result.parts
        msg = write_arguments(msg, ref, new_args)
        before_msg = edit[ridx]
        edit[ridx] = write_result(edit[ridx], ref.call_id, new_parts, from_content, occurrence)
        ps.written.append(ridx)
        changed = new_args != ref.arguments
        ps.changed(idx if changed else ridx)
        single = not changed and len(result_ids(before_msg)) == 1
        ps.cleared.append(
            _Cleared(
                ref,
                (ref.arguments if changed else "") + text_of(original.parts),
                (new_args if changed else "") + text_of(new_parts),
                # A placeholder may name a file written earlier (a truncated result).
                result.offload_file_path,
                (before_msg, edit[ridx]) if single else None,
                "" if only is None else STRATEGY_SUPERSEDED,
            )
        )
    edit[idx] = msg if only is not None else mark_processed(msg)
    ps.written.append(idx)


def _superseded_steps(ps: _Pass, start: int, end: int, tools: list[ToolInfo]) -> Steps[int | None]:
    """Clear the superseded results in ``[start, end)`` (docs/behaviour.md §4.12); the
    conversation's tokens afterwards, or ``None`` when none was cleared."""
    targets = superseded_calls(ps.edit, start, end, ps.rt.readers)
    for idx, positions in targets.items():
        yield from _group_steps(ps, idx, positions)
    if not ps.cleared:
        return None
    return (yield from _count_steps(ps, tools))


def _count_steps(ps: _Pass, tools: list[ToolInfo]) -> Steps[int]:
    """The tokens of what the pass would return now (kept as ``ps.out``): the working copy,
    with the offload manifest right before the retained rounds when the config asks for
    one (docs/behaviour.md §4.13), so thresholds and events count it."""
    cfg = ps.rt.config
    ps.out = ps.edit
    key = object()
    if cfg.clear_offload_manifest:
        end = _range_end(ps.edit, cfg.clear_retention_suffix_limit)
        ps.out = with_manifest(
            ps.edit, end, read_tool_name=cfg.read_file_tool_name, language=cfg.language
        )
    if ps.out is not ps.edit:  # messages moved: the counter searches for what is shared
        count = yield from _counted(ps.rt, ps.out, tools, known=None, key=key)
    else:
        # Before the first change the counts are the last list's: flags are not measured.
        same = len(ps.edit) if ps.first_change is None else ps.first_change
        flagged = [i for i in ps.written if i < same]
        count = yield from _counted(
            ps.rt, ps.out, tools, known=ps.counted, same=same, key=key, relabelled=flagged
        )
    ps.counted = key
    return count


def _counted(
    rt: Runtime,
    messages: Sequence[AnyMessage],
    tools: list[ToolInfo],
    *,
    known: object,
    key: object,
    same: int = 0,
    relabelled: Sequence[int] = (),
) -> Steps[int]:
    """The tokens of ``messages``. A built-in counter keeps running totals for the list it
    counted last, which ``known`` names (``None``: unknown); told how many leading messages
    count as there (``same``), it needs no search for what they share, and it remembers
    ``messages`` as ``key``. A counter of the caller's is simply called with
    ``messages``, which no one changes afterwards."""
    counter = rt.counter
    if not isinstance(counter, CachingCounter):
        return _tokens((yield call(counter, messages, tools)))
    return counter.count_after(
        messages, tools, known=known, same=same, key=key, relabelled=relabelled
    )


def _figures(rt: Runtime, item: _Cleared, kind: str) -> Steps[ReductionEvent]:
    """The event of one cleared call. Token figures come from the result message's counts,
    which the pass's own counting already cached, unless the message holds several results
    or the arguments changed; then the texts are counted."""
    event = ReductionEvent(
        phase="clear",
        kind="tool",
        tool_name=item.ref.name,
        call_id=item.ref.call_id,
        offload_path=item.path,
        strategy=item.strategy,
    )
    count_message = getattr(rt.counter, "count_message", None)
    if item.messages is None or count_message is None:
        return (yield from rt.with_figures(event, item.before, item.after, kind))
    tokens_before = yield call(count_message, item.messages[0])
    tokens_after = yield call(count_message, item.messages[1])
    return dataclasses.replace(
        event,
        chars_before=len(item.before),
        chars_after=len(item.after),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        tokens_saved=tokens_before - tokens_after,
    )


def _tokens(count: object) -> int:
    if isinstance(count, bool) or not isinstance(count, int):
        raise ReductionError(f"token_counter returned {count!r}, not an int")
    return count


def _cache_estimate(
    ps: _Pass, messages: Sequence[AnyMessage], tools: list[ToolInfo], saved: int
) -> Steps[CacheEstimate]:
    """What the pass saves against the cache rewrite it causes (docs/behaviour.md §4.14).
    The tokens the cache held from the first change to the previous call's end are two
    counts of prefixes, which a built-in counter sums from its per-message cache."""
    cfg = ps.rt.config
    first = len(messages) if ps.first_change is None else ps.first_change
    if ps.out is not ps.edit:  # the offload manifest moved (or appeared) too
        moved = _first_difference(ps.edit, ps.out)
        first = min(first, len(messages) if moved is None else moved)
    end = cached_end(messages)
    rewritten = 0
    if first < end:
        upto_end = _tokens((yield call(ps.rt.counter, messages[:end], tools)))
        upto_first = _tokens((yield call(ps.rt.counter, messages[:first], tools)))
        rewritten = upto_end - upto_first
    return CacheEstimate(
        saved=saved,
        rewritten=rewritten,
        calls_ahead=calls_so_far(messages),
        read_percent=cfg.clear_cache_read_percent,
        write_percent=cfg.clear_cache_write_percent,
    )


def clear_steps(rt: Runtime, state: ChatModelAgentState) -> Steps[ChatModelAgentState]:
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
    marks = carry_landmarks(given, rt.take_landmarks())
    try:
        done = yield from _pass_steps(rt, state, marks)
    except BaseException:
        rt.landmarks = marks  # the mirror still holds what the caller passed
        raise
    if done is None:
        rt.landmarks = marks
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
        rt.landmarks = marks.after_pass(mirror, counted=ps.counted)
    new_state = dataclasses.replace(state, messages=ps.out)
    threshold = cfg.max_tokens_for_clear
    if hook is not None:
        yield call(hook, new_state)
        # The hook's return value is ignored, but it holds the list the phase returns.
        returned = tuple(ps.out)
        if returned != returned_before_hook:
            conversation_kind(returned)
            check_edit("clear_post_process", returned_before_hook, returned)
    if cfg.on_event is not None:
        for item in ps.cleared:
            event = yield from _figures(rt, item, marks.kind or "chat")
            yield from rt.emit(event)
    reason = REASON_APPLIED if ps.cleared or ps.rewritten else REASON_NOTHING_CLEARED
    summary = _summary(
        threshold, reason, before, after, applied=True, calls_cleared=len(ps.cleared)
    )
    yield from rt.emit(summary)
    return new_state


def _pass_steps(
    rt: Runtime, state: ChatModelAgentState, marks: Landmarks
) -> Steps[tuple[_Pass, int, int] | None]:
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
    before = yield from _counted(
        rt, measured, tools, known=marks.found_from, same=marks.shared, key=marks.counted
    )
    if before <= threshold:
        yield from rt.emit(_summary(threshold, REASON_BELOW_THRESHOLD, before, before))
        return None
    start, end = marks.start, _range_end(messages, cfg.clear_retention_suffix_limit)
    if start >= end:
        yield from rt.emit(_summary(threshold, REASON_NOTHING_IN_RANGE, before, before))
        return None
    at_least = cfg.clear_at_least_tokens
    # The one copy of the conversation a pass makes: the list it returns.
    ps = _Pass(rt=rt, edit=list(messages), stash=at_least > 0 or cfg.clear_cache_aware)
    ps.counted = marks.counted
    try:
        after = None
        if cfg.clear_superseded:
            after = yield from _superseded_steps(ps, max(start, marks.calls_from), end, tools)
        # The pass stops after the superseded results only when that alone brought the
        # conversation down to the threshold and freed what clear_at_least_tokens asks.
        if after is None or after > threshold or before - after < at_least:
            work_from, work_to = max(start, marks.calls_from), end
            if cfg.clear_message_rewriter is not None:
                part = ps.edit[start:end]
                new_part = yield from _rewrite_steps(rt, part, kind)
                differs = _first_difference(new_part, part)
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
                if tool_calls_of(ps.edit[idx]) and not is_processed(ps.edit[idx]):
                    yield from _group_steps(ps, idx)
            after = yield from _count_steps(ps, tools)
        if at_least > 0 and before - after < at_least:
            yield from rt.emit(_summary(threshold, REASON_BELOW_AT_LEAST, before, before))
            return None
        if cfg.clear_cache_aware and before <= cache_ceiling(
            cfg.clear_cache_ceiling_tokens, threshold
        ):
            estimate = yield from _cache_estimate(ps, messages, tools, before - after)
            if not estimate.pays:
                yield from rt.emit(
                    _summary(threshold, REASON_BELOW_CACHE_BREAK_EVEN, before, before)
                )
                return None
        _check_pass(ps, messages, end)
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
