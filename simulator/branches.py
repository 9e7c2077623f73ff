"""Replaying configs together: one walk of the conversation per context they share.

Configs that truncate alike send the same context until one of their clear passes
changes it, so a :class:`Branch` walks that context once for all of them, each config
running only its own clear pass; a config whose pass changes the context leaves on a
fork (:meth:`Branch._fork` says why a fork is exactly that config's replay alone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from reduction_app.engine import (
    ChatModelAgentState,
    Message,
    ReductionEvent,
    ReductionMiddleware,
    ToolContext,
    ToolInfo,
    ToolResult,
    new,
    stringify,
    truncate_output,
)
from reduction_app.engine.inspect import read_result, write_result
from simulator.members import Files, Member
from simulator.misses import RECOVERY, Misses
from simulator.prepared import Arrival, Prepared, Truncated
from simulator.pricing import Pricing
from simulator.refetch import Repeats
from simulator.tracking import Tracker

__all__ = ["Branch", "Measure", "Miss", "call_tokens", "recovery_cost"]


@dataclass(frozen=True, slots=True)
class Measure:
    """What the simulator measured of the context sent at one model call."""

    message_index: int
    context_tokens: int
    cached_tokens: int
    new_tokens: int
    cache_write_tokens: int
    share: float | None


@dataclass(frozen=True, slots=True)
class Miss:
    """A part a model call missed (see :mod:`simulator.misses`), and what reading it back
    would have cost."""

    call: int
    tool: str
    string: str
    recovery_usd: float
    """One more call on this call's context (its prefix served by the prompt cache as the
    preset allows) with the part's tokens as new input."""


def call_tokens(
    tracker: Tracker,
    tools: Sequence[ToolInfo],
    previous: Sequence[Any],
    same: int,
    pricing: Pricing,
    min_prefix: int,
    omitted: int = 0,
) -> tuple[int, int, int, int]:
    """What a model call is billed for, once ``tracker`` has been sent its context:
    context tokens, those a prompt cache serves (the prefix shared with ``previous``, the
    context sent before it, when at least ``min_prefix`` tokens), new tokens, and of those
    the ones written to the cache (where ``pricing`` bills cache writes). ``omitted``:
    the tokens of what the recording left out (:mod:`simulator.prefix`), which go first,
    before the tools: the same in every request, so the prompt cache serves them as it
    serves the tools."""
    meter = tracker.meter
    overhead = omitted + meter.tools(tools)
    context_tokens = overhead + tracker.body + meter.reply_tokens
    cached = 0
    if previous and pricing.prompt_cache:
        prefix = overhead + tracker.cached_body(previous, same)
        cached = prefix if prefix >= min_prefix else 0
    new_tokens = context_tokens - cached
    writes_cache = pricing.cache_write_per_mtok is not None
    writes = new_tokens if writes_cache and context_tokens >= min_prefix else 0
    return context_tokens, cached, new_tokens, writes


class Branch:
    """Members that have sent the same contexts so far, and what they share."""

    def __init__(
        self, prepared: Prepared, members: list[Member], min_prefix: int, contexts: Collection[int]
    ) -> None:
        lead = members[0]
        self.prepared = prepared
        self.members = members
        self.min_prefix = min_prefix
        self.wanted_contexts = frozenset(contexts)
        self.contexts: dict[int, tuple[Any, ...]] = {}
        """The messages sent at the calls of ``wanted_contexts``, by call index."""
        self.key = lead.key
        self.meter = prepared.meter(lead.counter)
        self.tracker = Tracker(self.meter)
        self.repeats = Repeats()
        self.misses = Misses(prepared.strings)
        self.missed: list[Miss] = []
        self.measures: list[Measure] = []
        self.context: list[Any] = []
        self.next_index = 0
        self.files = Files() if lead.files is not None else None
        self._truncations: list[ReductionEvent] = []
        self.trunc_mw = self._truncation_middleware()

    def _truncation_middleware(self) -> ReductionMiddleware:
        lead = self.members[0]
        if self.files is None:
            return lead.mw
        for member in self.members:
            assert member.files is not None
            member.files.files = self.files
        config = dataclasses.replace(
            lead.config, backend=self.files, on_event=self._truncations.append
        )
        return new(config)

    def run(self, fork: Callable[[Branch], None]) -> None:
        """Walk the rest of the conversation; ``fork`` takes each branch split off."""
        messages = self.prepared.messages
        kinds = self.prepared.kinds
        calls = self.prepared.calls
        for index in range(self.next_index, len(messages)):
            msg = messages[index]
            kind = kinds[index]
            if kind != "assistant":
                self.context.append(self._truncate(index, msg) if kind == "tool_result" else msg)
            elif index not in calls:
                self.context.append(msg)  # a greeting sent before any input: no model call
            else:
                for branch in self._model_call(index):
                    branch.next_index = index + 1
                    fork(branch)
        self.repeats.close()

    # Tool results ---------------------------------------------------------------------

    def _truncate(self, index: int, msg: Any) -> Any:
        """The result message as it enters the context, after the truncation phase.

        A branch with files of its own (configs given as JSON fields) truncates a message
        once per truncation key: what truncation makes of it (the message, its events, the
        files written) depends only on the result, the fields in the key, and the files
        truncation wrote before, which are the same in every branch of that key (clear
        passes write under another folder, ``{root_dir}/clear/``, than truncation's
        ``{root_dir}/trunc/``). Later branches of the key take the same message object, so
        its counts are shared too."""
        arrivals = self.prepared.arrivals[index]
        memo = None
        if self.files is not None and self.prepared.share_truncation:
            memo = self.prepared.truncated
        done = memo.get((self.key, index)) if memo is not None else None
        if done is None:
            done = self._run_truncation(msg, arrivals)
            if memo is not None:
                memo[(self.key, index)] = done
        elif self.files is not None:
            for path, content in done.writes:
                self.files.files[path] = content
                self.files.chars += len(content)
            self._truncations.extend(done.events)
        for arrival, text in zip(arrivals, done.texts, strict=True):
            tokens = self.prepared.result_tokens(self.meter, arrival)
            self.tracker.arrived(arrival.item, arrival.key, tokens)
            if text is not None:
                self.tracker.answered(arrival.item, text)
                self.repeats.answered(arrival.call_id, text)
        return done.message

    def _run_truncation(self, msg: Any, arrivals: list[Arrival]) -> Truncated:
        files = self.files
        mark = len(self._truncations)
        if files is not None:
            files.log = []
        new_msg = msg
        texts: list[str | None] = []
        for arrival in arrivals:
            occurrence = 0 if arrival.occurrence is None else arrival.occurrence
            read = read_result(new_msg, arrival.call_id, occurrence)
            if read is None:
                assert not isinstance(msg, Message)
                texts.append(None)
                continue
            texts.append(stringify(read[0].parts))
            result = self._run_tool(arrival, read[0])
            if result is not read[0]:
                new_msg = write_result(new_msg, arrival.call_id, result.parts, read[1], occurrence)
        writes = tuple(files.log or ()) if files is not None else ()
        if files is not None:
            files.log = None
        events = tuple(self._truncations[mark:])
        return Truncated(message=new_msg, texts=tuple(texts), writes=writes, events=events)

    def _run_tool(self, arrival: Arrival, result: ToolResult) -> ToolResult:
        ctx = ToolContext(name=arrival.name, call_id=arrival.call_id)
        return truncate_output(self.trunc_mw, result, ctx, arrival.arguments)

    # Model calls ----------------------------------------------------------------------

    def _model_call(self, index: int) -> list[Branch]:
        """Every member's clear pass on the shared context; members whose pass changed it
        leave on forks (returned). Then each branch measures what it sends."""
        tools = self.prepared.tools
        state = ChatModelAgentState(messages=self.context, tool_infos=tools)
        truncations, self._truncations[:] = list(self._truncations), []
        stay: list[Member] = []
        moved: list[tuple[Member, list[Any]]] = []
        for member in self.members:
            member.events.extend(truncations)
            out = member.mw.before_model_rewrite_state(state)
            if out is state and (member.files is None or not member.files.pending):
                stay.append(member)
            else:
                moved.append((member, list(out.messages)))
        # Forks copy the branch as it was before any pass; then, when every member's pass
        # changed the context, the first of them carries on in this branch.
        forks = [self._fork(member, context) for member, context in moved[0 if stay else 1 :]]
        if stay:
            self.members = stay
        else:
            self._take(*moved[0])
        for branch in (self, *forks):
            branch._measure(index)
            branch.context.append(self.prepared.messages[index])
        return forks

    def _take(self, member: Member, context: list[Any]) -> None:
        """``member`` alone carries on in this branch, with the context its pass made."""
        self.members = [member]
        self.context = context
        if member.files is not None and self.files is not None:
            self.files.files.update(member.files.pending)
            self.files.chars += member.files.pending_chars
            member.files.pending = {}
            member.files.pending_chars = 0

    def _fork(self, member: Member, context: list[Any]) -> Branch:
        """``member`` on a copy of this branch with its own ``context``.

        The fork is exactly the state that member's replay alone would be in. A replay
        alone holds, between two messages, its context, its backend's files, its
        middleware and the simulator's measures. The context and the measures are the
        branch's; so are the files: truncation, the same for every member of a branch,
        wrote them, and a clear pass that writes anything forks (one that returns the
        context it was given writes nothing). The middleware holds nothing else between
        two operations: the engine's path registry promises a path only until it is
        written or given up, and the rest is the config, resolved. Truncation depends only
        on the fields :data:`~simulator.members.CLEAR_ONLY` leaves out, so the branch's
        middleware truncates as each member's own would. Configs with a backend or hooks
        of their own cannot be copied, so each gets a branch of its own from the start.
        """
        assert member.files is not None and self.files is not None
        other = Branch.__new__(Branch)
        other.__dict__.update(self.__dict__)
        other.members = [member]
        other.context = context
        other.contexts = dict(self.contexts)
        other.tracker = self.tracker.copy()
        other.repeats = self.repeats.copy()
        other.misses = self.misses.copy()
        other.missed = list(self.missed)
        other.measures = list(self.measures)
        files = {**self.files.files, **member.files.pending}
        other.files = Files(files, self.files.chars + member.files.pending_chars)
        member.files.pending = {}
        member.files.pending_chars = 0
        other._truncations = []
        other.trunc_mw = other._truncation_middleware()
        return other

    def _measure(self, index: int) -> None:
        tools = self.prepared.tools
        meter = self.meter
        previous = self.tracker.sent
        same = self.tracker.send(self.context)
        self.misses.send(self.context, same)
        context_tokens, cached, new_tokens, writes = call_tokens(
            self.tracker,
            tools,
            previous,
            same,
            self.prepared.pricing,
            self.min_prefix,
            self.prepared.prefix,
        )
        share = self.tracker.share
        for call_id, key in self.prepared.call_keys[index]:
            earlier = self.tracker.hidden(key)
            if earlier is not None:
                self.repeats.asked(call_id, earlier)
        call = len(self.measures)
        for part, string in self.misses.missed_at(index):
            tokens = self.prepared.result_tokens(meter, part.arrival)
            cost = self._recovery(context_tokens, tokens)
            self.missed.append(Miss(call, part.arrival.name, string, cost))
        if call in self.wanted_contexts:
            self.contexts[call] = tuple(self.context)
        self.measures.append(Measure(index, context_tokens, cached, new_tokens, writes, share))
        for member in self.members:
            member.record(self.context, tools)

    def _recovery(self, context_tokens: int, part_tokens: int) -> float:
        return recovery_cost(
            self.prepared.pricing,
            self.meter.reply_tokens,
            self.min_prefix,
            context_tokens,
            part_tokens,
        )


def recovery_cost(
    pricing: Pricing, reply_tokens: int, min_prefix: int, context_tokens: int, part_tokens: int
) -> float:
    """US dollars of recovering a missed part (``part_tokens``) at
    :data:`~simulator.misses.RECOVERY`'s price: one call sending the context of the call
    that missed (``context_tokens``) and the part's share as new input, and each further
    call (a fraction of one on average) that context alone."""
    share = round(part_tokens * RECOVERY.output_share)
    first = read_back_cost(pricing, reply_tokens, min_prefix, context_tokens, share)
    again = read_back_cost(pricing, reply_tokens, min_prefix, context_tokens, 0)
    return first + (RECOVERY.calls - 1) * again


def read_back_cost(
    pricing: Pricing, reply_tokens: int, min_prefix: int, context_tokens: int, part_tokens: int
) -> float:
    """US dollars of one call sending a call's context (``context_tokens``, all but the
    reply primer cached, when long enough and the preset caches) and ``part_tokens`` new,
    at the long-context rates when the two pass the preset's threshold."""
    prefix = context_tokens - reply_tokens
    cached = prefix if pricing.prompt_cache and prefix >= min_prefix else 0
    request = context_tokens + part_tokens
    new_tokens = request - cached
    writes_cache = pricing.cache_write_per_mtok is not None
    writes = new_tokens if writes_cache and request >= min_prefix else 0
    return pricing.cost(
        uncached_tokens=new_tokens,
        cached_tokens=cached,
        cache_write_tokens=writes,
        prompt_tokens=request,
    )
