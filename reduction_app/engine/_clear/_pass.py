"""One clear pass's working copy and what is done to it: the call groups cleared and
their handlers, the superseded results, the counting of what the pass would return with
the offload manifest in place, and the pairing check (docs/behaviour.md §4.6, §4.7,
§4.10, §4.12, §4.13). The mechanics, not the decisions: those are ``_phase``'s.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reduction_app.engine._clear._landmarks import range_end
from reduction_app.engine._clear._manifest import with_manifest
from reduction_app.engine._clear._pairing import check_edit
from reduction_app.engine._clear._superseded import Readers, superseded_calls
from reduction_app.engine._steps import Steps, call, invoke
from reduction_app.engine._storage._backends import Backend
from reduction_app.engine._tokens._counters import CachingCounter
from reduction_app.engine._truncation._buffered import text_of
from reduction_app.engine.access import (
    AnyMessage,
    CallRef,
    call_results,
    is_cleared,
    mark_processed,
    read_result,
    result_ids,
    write_arguments,
    write_result,
)
from reduction_app.engine.errors import NoBackendError, ReductionError
from reduction_app.engine.events import STRATEGY_SUPERSEDED
from reduction_app.engine.messages import ToolInfo
from reduction_app.engine.tool_io import (
    ClearResult,
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
)

if TYPE_CHECKING:
    from reduction_app.engine.runtime import Resolved, Runtime

__all__ = [
    "Cleared",
    "Pass",
    "check_pass",
    "checked_tokens",
    "count_steps",
    "counted",
    "first_difference",
    "group_steps",
    "superseded_steps",
]


@dataclass(frozen=True, slots=True)
class Cleared:
    """One call the pass cleared, with what its event needs (``clear_figures.figures``)."""

    ref: CallRef
    original: tuple[ToolOutputPart, ...]
    """The result's parts before the pass."""
    parts: tuple[ToolOutputPart, ...]
    """The result's parts after."""
    arguments: str
    """The call's arguments after (``ref.arguments`` before)."""
    path: str
    messages: tuple[AnyMessage, AnyMessage] | None = None
    """The result message before and after, when it holds this one result and the call's
    arguments did not change: its token counts are then already in the counter's cache."""
    strategy: str = ""
    """The event's ``strategy``: empty for the reference's clearing."""

    # The texts are joined only for an event, which is made only when someone listens.
    @property
    def before(self) -> str:
        """What the event measures before: the arguments when they changed, and the
        result's text."""
        changed = self.arguments != self.ref.arguments
        return (self.ref.arguments if changed else "") + text_of(self.original)

    @property
    def after(self) -> str:
        """What the event measures after, as :attr:`before`."""
        changed = self.arguments != self.ref.arguments
        return (self.arguments if changed else "") + text_of(self.parts)


def first_difference(a: Sequence[AnyMessage], b: Sequence[AnyMessage]) -> int | None:
    """The first position where ``a`` and ``b`` hold different messages (or one ends)."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x is not y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def check_pass(ps: Pass, given: Sequence[AnyMessage], end: int) -> None:
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
class Pass:
    """What one clear pass has done so far to its working copy."""

    rt: Runtime
    edit: list[AnyMessage]
    stash: bool
    """``clear_at_least_tokens`` is set: offloads wait until the saving is known."""
    stashed: list[tuple[Backend | None, str, str]] = field(default_factory=list)
    cleared: list[Cleared] = field(default_factory=list)
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
    with the manifest in place, as last counted (:func:`count_steps`)."""

    def __post_init__(self) -> None:
        self.out = self.edit

    def changed(self, index: int) -> None:
        """Note that the pass changed the content at ``index`` (keeps the first)."""
        if self.first_change is None or index < self.first_change:
            self.first_change = index


def group_steps(ps: Pass, idx: int, only: Collection[int] | None = None) -> Steps[None]:
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
            Cleared(
                ref,
                tuple(original.parts),
                tuple(new_parts),
                new_args,
                # A placeholder may name a file written earlier (a truncated result).
                result.offload_file_path,
                (before_msg, edit[ridx]) if single else None,
                "" if only is None else STRATEGY_SUPERSEDED,
            )
        )
    edit[idx] = msg if only is not None else mark_processed(msg)
    ps.written.append(idx)


def superseded_steps(
    ps: Pass, start: int, end: int, tools: list[ToolInfo], readers: Readers
) -> Steps[int | None]:
    """Clear the superseded results in ``[start, end)`` (docs/behaviour.md §4.12); the
    conversation's tokens afterwards, or ``None`` when none was cleared."""
    targets = superseded_calls(ps.edit, start, end, readers)
    for idx, positions in targets.items():
        yield from group_steps(ps, idx, positions)
    if not ps.cleared:
        return None
    return (yield from count_steps(ps, tools))


def count_steps(ps: Pass, tools: list[ToolInfo]) -> Steps[int]:
    """The tokens of what the pass would return now (kept as ``ps.out``): the working copy,
    with the offload manifest right before the retained rounds when the config asks for
    one (docs/behaviour.md §4.13), so thresholds and events count it."""
    cfg = ps.rt.config
    ps.out = ps.edit
    key = object()
    if cfg.clear_offload_manifest:
        end = range_end(ps.edit, cfg.clear_retention_suffix_limit)
        ps.out = with_manifest(
            ps.edit, end, read_tool_name=cfg.read_file_tool_name, language=cfg.language
        )
    if ps.out is not ps.edit:  # messages moved: the counter searches for what is shared
        count = yield from counted(ps.rt, ps.out, tools, known=None, key=key)
    else:
        # Before the first change the counts are the last list's: flags are not measured.
        same = len(ps.edit) if ps.first_change is None else ps.first_change
        flagged = [i for i in ps.written if i < same]
        count = yield from counted(
            ps.rt, ps.out, tools, known=ps.counted, same=same, key=key, relabelled=flagged
        )
    ps.counted = key
    return count


def counted(
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
        return checked_tokens((yield call(counter, messages, tools)))
    return counter.count_after(
        messages, tools, known=known, same=same, key=key, relabelled=relabelled
    )


def checked_tokens(count: object) -> int:
    """``count``, what a counter of the caller's returned, once it is known to be an int
    (a ``bool`` is not one here); otherwise a :class:`ReductionError` quoting it."""
    if isinstance(count, bool) or not isinstance(count, int):
        raise ReductionError(f"token_counter returned {count!r}, not an int")
    return count
