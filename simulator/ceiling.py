"""The ceiling: what a clairvoyant reduction would save on a corpus at a price preset.

It knows, for every tool output, which of its strings the recorded agent uses later
(:mod:`simulator.misses`), reduces everything else with the engine's own truncation and
clear placeholder, and takes the cheapest of its clear schedules and read-back plans by
cost with recovery: the limit the configs a sweep or ``recommend`` finds are measured
against (docs/simulator.md, "The ceiling", defines each plan).
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from typing import Any

from reduction_app.engine import (
    Message,
    ReductionMiddleware,
    ToolArgument,
    ToolCall,
    ToolContext,
    ToolDetail,
    ToolResult,
    config_from_dict,
    default_clear_handler,
    get_token_counter,
    new,
    truncate_output,
)
from reduction_app.engine.inspect import first_clear_paths, read_result, write_result
from simulator.branches import call_tokens, recovery_cost
from simulator.members import Files
from simulator.misses import Misses, strings_in
from simulator.prepared import Arrival, Prepared
from simulator.pricing import Pricing
from simulator.recording import RecordedConversation
from simulator.tracking import Tracker

__all__ = [
    "CLEAR_BATCHES",
    "KEPT_WHOLE",
    "LADDER",
    "PLANS",
    "SCHEDULES",
    "UNDER_LADDER",
    "VARIANTS",
    "Ceiling",
    "OutputPlan",
    "RunCeiling",
    "ceiling",
    "run_ceiling",
]

LADDER: tuple[int, ...] = (100, 250, 500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000)
"""Characters: the ``max_length_for_trunc`` steps an output may be truncated at; past the
last, it stays whole."""
CLEAR_BATCHES: tuple[int, ...] = (2_000, 8_000)
"""Tokens: the least a batched clear pass frees, one schedule each."""
SCHEDULES: tuple[str, ...] = (
    "truncate",
    "clear each call",
    *(f"clear ≥ {n // 1000}k" for n in CLEAR_BATCHES),
    "clear when it pays",
)
"""When the clairvoyant reduction clears (see the module docstring)."""
NO_MISS = "no miss"
READ_BACK = "read back"
READ_BACK_ALL = "read back all"
READ_BACK_EVERY = "read back every output"
PLANS: tuple[str, ...] = (NO_MISS, READ_BACK, READ_BACK_ALL, READ_BACK_EVERY)
"""What an output's later uses cost: keeping it for them (no miss); keeping it or
reading it back once, whichever is cheaper, for the uses after the call right after it
arrived (read back) or for all of them (read back all); reading back every output a
call uses (read back every output, truncation at the smallest step)."""
VARIANTS: tuple[str, ...] = tuple(
    schedule if plan == NO_MISS else f"{schedule}, {plan}"
    for plan in PLANS
    for schedule in SCHEDULES
)
"""Every schedule under every plan: the reductions priced on each run."""
KEPT_WHOLE = "whole"
"""Ladder label: every step that cuts the output hides a string used later, or its
notice is no shorter."""
UNDER_LADDER = "under ladder"
"""Ladder label: the output is no longer than the smallest step."""
ROOT_DIR = "/tmp"
"""The engine's default ``root_dir``: placeholders name the paths a default config's would."""


@dataclass(frozen=True, kw_only=True)
class OutputPlan:
    """What the ceiling does to one original tool output."""

    message_index: int
    """Where its message sits in the recorded conversation."""
    call_id: str
    tool: str
    step: str
    """Under the no-miss plan, the ladder step it is truncated at (``"500"`` ...),
    :data:`KEPT_WHOLE` or :data:`UNDER_LADDER`."""
    clear_at: int | None
    """Under the no-miss plan, the message index of the first model call it may be cleared
    at (after the last call that needs it, and after the call right after it arrived);
    ``None``: never."""
    read_back: bool
    """The ``read back`` plan hides it after the call right after it arrived, reading it
    back at a later use."""
    read_back_all: bool
    """The ``read back all`` plan hides it from its arrival on, reading it back at its
    first use."""


@dataclass(frozen=True, kw_only=True)
class RunCeiling:
    """The ceiling of one run."""

    conversation: str
    baseline_cost_usd: float
    """No reduction, cache-aware, at the preset's prices (as a replay's ``cost_usd``)."""
    cost_usd: float
    """The cheapest variant's cost with recovery (its read backs included)."""
    variant: str
    """The cheapest variant (the first of :data:`VARIANTS` on a tie)."""
    no_miss_cost_usd: float
    """The cheapest no-miss variant's cost."""
    no_miss_variant: str
    no_miss_misses: int
    """Misses of the cheapest no-miss variant by the simulator's count: 0 by construction."""
    variants: Mapping[str, float]
    """Each variant's cost with recovery, in the order of :data:`VARIANTS`."""
    steps: Mapping[str, int]
    """Under the no-miss plan, outputs per ladder step they are truncated at (``"500"``
    ...), kept whole (:data:`KEPT_WHOLE`) or too short to cut (:data:`UNDER_LADDER`)."""
    cleared: int
    """Outputs the cheapest variant cleared."""
    passes: int
    """Model calls at which the cheapest variant cleared something."""
    misses: int
    """Misses of the cheapest variant by the simulator's count: its read backs."""
    outputs: tuple[OutputPlan, ...] = ()
    """Per original output, in order: what the plans do with it."""

    def to_dict(self) -> dict[str, Any]:
        """Without :attr:`outputs` (one line per output is too much for a corpus's JSON)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "outputs"}
        return {**data, "variants": dict(self.variants), "steps": dict(self.steps)}


@dataclass(frozen=True, kw_only=True)
class Ceiling:
    """The ceiling of a corpus: each run's cheapest variant, summed."""

    pricing: str
    runs: tuple[RunCeiling, ...]
    seconds: float

    @property
    def cost_usd(self) -> float:
        """The ceiling: cost with recovery, each run at its cheapest variant."""
        return round(sum(r.cost_usd for r in self.runs), 6)

    @property
    def no_miss_cost_usd(self) -> float:
        """Each run at its cheapest no-miss variant."""
        return round(sum(r.no_miss_cost_usd for r in self.runs), 6)

    @property
    def baseline_cost_usd(self) -> float:
        return round(sum(r.baseline_cost_usd for r in self.runs), 6)

    @property
    def saved(self) -> float:
        """The share of no reduction's cost the ceiling saves."""
        return self._saving(self.cost_usd)

    @property
    def no_miss_saved(self) -> float:
        return self._saving(self.no_miss_cost_usd)

    def _saving(self, cost: float) -> float:
        base = self.baseline_cost_usd
        return (base - cost) / base if base else 0.0

    @property
    def variants(self) -> dict[str, float]:
        """Each variant's cost with recovery over every run (the same variant on all)."""
        return {v: round(sum(r.variants[v] for r in self.runs), 6) for v in VARIANTS}

    @property
    def wins(self) -> dict[str, int]:
        """Per variant, the runs it is the ceiling of."""
        return {v: sum(1 for r in self.runs if r.variant == v) for v in VARIANTS}

    @property
    def steps(self) -> dict[str, int]:
        labels = [str(n) for n in LADDER] + [KEPT_WHOLE, UNDER_LADDER]
        return {k: sum(r.steps.get(k, 0) for r in self.runs) for k in labels}

    @property
    def cleared(self) -> int:
        return sum(r.cleared for r in self.runs)

    @property
    def misses(self) -> int:
        return sum(r.misses for r in self.runs)

    def share_of(self, cost_usd: float) -> float | None:
        """How much of the ceiling's saving a reduction costing ``cost_usd`` (with
        recovery) on the same runs achieves (1.0: all of it); ``None`` when the ceiling
        saves nothing."""
        room = self.baseline_cost_usd - self.cost_usd
        return (self.baseline_cost_usd - cost_usd) / room if room > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "pricing": self.pricing,
            "runs": len(self.runs),
            "baseline_cost_usd": self.baseline_cost_usd,
            "cost_usd": self.cost_usd,
            "saved": round(self.saved, 6),
            "no_miss_cost_usd": self.no_miss_cost_usd,
            "no_miss_saved": round(self.no_miss_saved, 6),
            "variants": self.variants,
            "wins": self.wins,
            "ladder": list(LADDER),
            "steps": self.steps,
            "cleared": self.cleared,
            "misses": self.misses,
            "seconds": round(self.seconds, 3),
            "per_run": [r.to_dict() for r in self.runs],
        }


def ceiling(
    conversations: Sequence[RecordedConversation],
    *,
    pricing: Pricing,
    min_cacheable_prefix: int | None = None,
    workers: int = 1,
    progress: Callable[[int, int], None] | None = None,
    inferred_prefix: bool = True,
) -> Ceiling:
    """The ceiling of ``conversations`` at ``pricing`` (see the module docstring).

    ``min_cacheable_prefix``: tokens, ``None`` for the preset's. ``workers`` above 1 works
    out runs in that many processes. ``progress(done, total)`` is called as runs finish.
    ``inferred_prefix``: as :func:`~simulator.replay.replay`.
    """
    started = time.perf_counter()
    total = len(conversations)
    if workers <= 1 or total < 2:
        runs = []
        for n, conv in enumerate(conversations):
            runs.append(
                run_ceiling(
                    conv,
                    pricing=pricing,
                    min_cacheable_prefix=min_cacheable_prefix,
                    inferred_prefix=inferred_prefix,
                )
            )
            if progress is not None:
                progress(n + 1, total)
    else:
        runs = _pooled(
            conversations, pricing, min_cacheable_prefix, workers, progress, inferred_prefix
        )
    return Ceiling(pricing=pricing.name, runs=tuple(runs), seconds=time.perf_counter() - started)


def run_ceiling(
    conversation: RecordedConversation,
    *,
    pricing: Pricing,
    min_cacheable_prefix: int | None = None,
    inferred_prefix: bool = True,
) -> RunCeiling:
    """The ceiling of one run."""
    run = _Run(conversation, pricing, min_cacheable_prefix, inferred_prefix)
    baseline = run.walk(NO_MISS, None, reduce=False)
    run.plan_read_backs(baseline.context_tokens)
    walks = {}
    for variant in VARIANTS:
        schedule, _, plan = variant.partition(", ")
        walks[variant] = run.walk(plan or NO_MISS, schedule)
    best = min(VARIANTS, key=lambda v: walks[v].cost)
    no_miss = min(VARIANTS[: len(SCHEDULES)], key=lambda v: walks[v].cost)
    won = walks[best]
    return RunCeiling(
        conversation=conversation.name,
        baseline_cost_usd=round(baseline.cost, 6),
        cost_usd=round(won.cost, 6),
        variant=best,
        no_miss_cost_usd=round(walks[no_miss].cost, 6),
        no_miss_variant=no_miss,
        no_miss_misses=walks[no_miss].misses,
        variants={v: round(walks[v].cost, 6) for v in VARIANTS},
        steps=run.steps(),
        cleared=won.cleared,
        passes=won.passes,
        misses=won.misses,
        outputs=run.plans(),
    )


@dataclass
class _Walk:
    cost: float = 0.0
    """With recovery."""
    cleared: int = 0
    passes: int = 0
    misses: int = 0
    context_tokens: dict[int, int] = field(default_factory=dict)
    """Per model call (its message index), the tokens sent."""


@dataclass
class _Choice:
    """What one plan does to an output."""

    needed: set[str] = field(default_factory=set)
    last_use: int = -1
    """The message index of the last call that needs it (-1: none)."""
    clear_at: int | None = None
    """The first call it may be cleared at (``None``: no call comes after its last use)."""
    label: str = UNDER_LADDER
    truncated: tuple[Any, bool] | None = None
    """The engine's truncated result (its parts, whether from plain content) when cut."""
    kept: float = 1.0
    """The share of the output's characters its truncation keeps."""


@dataclass
class _Output:
    """One original output, and what each plan does to it."""

    message_index: int
    slot: int
    """Its place among its message's arrivals."""
    arrival: Arrival
    first_call: int
    """The first model call after it arrived, which sees it whatever the plan."""
    uses: dict[int, set[str]] = field(default_factory=dict)
    """Per model call that needs it, the strings it needs."""
    plans: dict[str, _Choice] = field(default_factory=dict)


class _Run:
    """One conversation, its outputs' ladder steps and clear points, and its walks."""

    def __init__(
        self,
        conv: RecordedConversation,
        pricing: Pricing,
        min_prefix: int | None,
        inferred_prefix: bool = True,
    ):
        self.prepared = prepared = Prepared(conv, pricing, inferred_prefix=inferred_prefix)
        self.pricing = pricing
        self.min_prefix = pricing.min_cacheable_prefix if min_prefix is None else min_prefix
        self.meter = prepared.meter(get_token_counter("approx"))
        self.calls = sorted(prepared.calls)
        self.outputs: dict[int, list[_Output]] = {
            index: [
                _Output(index, slot, a, _next(self.calls, index)) for slot, a in enumerate(arrivals)
            ]
            for index, arrivals in prepared.arrivals.items()
        }
        self._versions: dict[tuple[str, int, frozenset[int]], Any] = {}
        self._clear = default_clear_handler(self._clear_path, True, "read_file")
        files = Files()
        self._mws = [
            new(config_from_dict({"max_length_for_trunc": n, "skip_clear": True}, backend=files))
            for n in LADDER
        ]
        self._uses()
        for outs in self.outputs.values():
            for output in outs:
                self._choose(output, NO_MISS, set(output.uses))
                for plan in PLANS[1:]:
                    output.plans[plan] = output.plans[NO_MISS]

    # What each output must show, and until when ---------------------------------------

    def _uses(self) -> None:
        prepared = self.prepared
        strings = prepared.strings
        by_arrival = {id(o.arrival): o for outs in self.outputs.values() for o in outs}
        shown: set[str] = set(strings.tools)
        for index, msg in enumerate(prepared.messages):
            if index in prepared.calls:
                for string in strings.used.get(index, ()):
                    if string in shown:
                        continue
                    holders = [
                        p for p in strings.parts_with.get(string, ()) if p.message_index < index
                    ]
                    if holders:
                        output = by_arrival[id(holders[-1].arrival)]
                        output.uses.setdefault(index, set()).add(string)
            if prepared.kinds[index] != "tool_result":
                shown |= strings.of(msg)

    def _choose(self, output: _Output, plan: str, calls: set[int]) -> None:
        """``plan`` keeps what the ``calls`` among the output's uses need of it."""
        choice = _Choice()
        for call in calls:
            choice.needed |= output.uses[call]
            choice.last_use = max(choice.last_use, call)
        # Shown to the next call at least, and to every call that needs it.
        after = _next(self.calls, max(choice.last_use, output.first_call))
        choice.clear_at = None if after == sys.maxsize else after
        self._ladder(output, choice)
        output.plans[plan] = choice

    def _ladder(self, output: _Output, choice: _Choice) -> None:
        msg = self.prepared.messages[output.message_index]
        arrival = output.arrival
        occurrence = arrival.occurrence or 0
        read = read_result(msg, arrival.call_id, occurrence)
        if read is None:
            return
        original, from_content = read
        for step, mw in zip(LADDER, self._mws, strict=True):
            result = _truncate(mw, arrival, original)
            if result is original:
                choice.label = UNDER_LADDER if step == LADDER[0] else KEPT_WHOLE
                return
            texts = [p.text for p in result.parts if p.type == "text"]
            if not choice.needed.issubset(strings_in(texts)):
                continue
            cut = write_result(msg, arrival.call_id, result.parts, from_content, occurrence)
            if self.meter.message(cut) < self.meter.message(msg):
                whole = sum(len(p.text) for p in original.parts if p.type == "text")
                choice.label = str(step)
                choice.truncated = (result.parts, from_content)
                choice.kept = min(1.0, sum(map(len, texts)) / whole) if whole else 1.0
            else:
                choice.label = KEPT_WHOLE
            return
        choice.label = KEPT_WHOLE

    def plan_read_backs(self, context_tokens: Mapping[int, int]) -> None:
        """The read-back plans. An output is hidden when carrying it costs more than one
        read back at the first use it would miss (priced on the context no reduction
        sends there): under ``read back``, carried from the call right after it arrived
        to its last use, keeping what that first call needs; under ``read back all``,
        carried from that call to the end of the run, hidden from its arrival on."""
        pricing = self.pricing
        read = pricing.cached_input_per_mtok if pricing.prompt_cache else pricing.input_per_mtok
        position = {c: n for n, c in enumerate(self.calls)}
        for outs in self.outputs.values():
            for output in outs:
                if not output.uses:
                    continue
                tokens = self.prepared.result_tokens(self.meter, output.arrival)
                kept = output.plans[NO_MISS].kept * tokens
                first = position[output.first_call]
                uses = sorted(output.uses)

                later = [c for c in uses if c > output.first_call]
                carry = kept * read * (position[later[-1]] - first) / 1e6 if later else 0.0
                if later and carry > self._read_back(context_tokens[later[0]], tokens):
                    self._choose(output, READ_BACK, set(uses) - set(later))
                carry = kept * read * (len(self.calls) - first) / 1e6
                if carry > self._read_back(context_tokens[uses[0]], tokens):
                    self._choose(output, READ_BACK_ALL, set())
                self._choose(output, READ_BACK_EVERY, set())

    def _read_back(self, context_tokens: int, part_tokens: int) -> float:
        reply = self.meter.reply_tokens
        return recovery_cost(self.pricing, reply, self.min_prefix, context_tokens, part_tokens)

    def plans(self) -> tuple[OutputPlan, ...]:
        return tuple(
            OutputPlan(
                message_index=o.message_index,
                call_id=o.arrival.call_id,
                tool=o.arrival.name,
                step=o.plans[NO_MISS].label,
                clear_at=o.plans[NO_MISS].clear_at,
                read_back=o.plans[READ_BACK] is not o.plans[NO_MISS],
                read_back_all=o.plans[READ_BACK_ALL] is not o.plans[NO_MISS],
            )
            for index in sorted(self.outputs)
            for o in self.outputs[index]
        )

    def steps(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for outs in self.outputs.values():
            for output in outs:
                label = output.plans[NO_MISS].label
                out[label] = out.get(label, 0) + 1
        return out

    # Messages as sent -----------------------------------------------------------------

    def version(self, plan: str, index: int, cleared: frozenset[int]) -> Any:
        """The tool-result message at ``index``: its outputs truncated as ``plan`` says,
        and those at ``cleared`` slots replaced by the engine's placeholder."""
        key = (plan, index, cleared)
        hit = self._versions.get(key)
        if hit is not None:
            return hit
        msg = self.prepared.messages[index]
        for output in self.outputs[index]:
            arrival = output.arrival
            occurrence = arrival.occurrence or 0
            truncated = output.plans[plan].truncated
            if truncated is not None:
                msg = write_result(msg, arrival.call_id, *truncated, occurrence)
            if output.slot in cleared:
                msg = self._cleared(msg, arrival)
        self._versions[key] = msg
        return msg

    def _cleared(self, msg: Any, arrival: Arrival) -> Any:
        occurrence = arrival.occurrence or 0
        read = read_result(msg, arrival.call_id, occurrence)
        if read is None or not any(p.type == "text" for p in read[0].parts):
            return msg
        done = self._clear(
            ToolDetail(
                tool_context=ToolContext(name=arrival.name, call_id=arrival.call_id),
                tool_argument=ToolArgument(text=arrival.arguments),
                tool_result=read[0],
            )
        )
        if not done.need_clear or done.tool_result is None:
            return msg
        return write_result(msg, arrival.call_id, done.tool_result.parts, read[1], occurrence)

    @staticmethod
    def _clear_path(detail: ToolDetail) -> str:
        call = Message(role="assistant", tool_calls=(ToolCall(id=detail.tool_context.call_id),))
        paths = first_clear_paths([call], ROOT_DIR)
        return next(iter(paths)) if paths else f"{ROOT_DIR}/clear/call"

    # Walks ----------------------------------------------------------------------------

    def walk(self, plan: str, schedule: str | None, *, reduce: bool = True) -> _Walk:
        """Replay the run under ``plan`` and clear ``schedule`` (``reduce=False``: no
        reduction) and bill it, read backs included."""
        prepared = self.prepared
        messages = prepared.messages
        meter = self.meter
        tracker = Tracker(meter)
        misses = Misses(prepared.strings)
        context: list[Any] = []
        cleared: dict[int, frozenset[int]] = {}
        due = sorted(
            (choice.clear_at, o.message_index, o.slot)
            for outs in self.outputs.values()
            for o in outs
            if (choice := o.plans[plan]).clear_at is not None
        )
        next_due = 0
        pending: list[tuple[int, int]] = []
        calls_left = len(prepared.calls)
        out = _Walk()
        billed = cached = writes = 0
        recovery = 0.0
        for index, msg in enumerate(messages):
            kind = prepared.kinds[index]
            if kind == "tool_result":
                context.append(self.version(plan, index, frozenset()) if reduce else msg)
                continue
            if kind != "assistant" or index not in prepared.calls:
                context.append(msg)
                continue
            if reduce and schedule != "truncate":
                while next_due < len(due) and due[next_due][0] <= index:
                    pending.append(due[next_due][1:])
                    next_due += 1
                if pending and self._clear_now(
                    plan, schedule, context, cleared, pending, tracker, calls_left
                ):
                    out.passes += 1
                    out.cleared += len(pending)
                    pending = []
            previous = tracker.sent
            same = tracker.send(context)
            misses.send(context, same)
            tokens, hit, _, written = call_tokens(
                tracker,
                prepared.tools,
                previous,
                same,
                self.pricing,
                self.min_prefix,
                prepared.prefix,
            )
            billed += tokens
            cached += hit
            writes += written
            out.context_tokens[index] = tokens
            for part, _string in misses.missed_at(index):
                out.misses += 1
                part_tokens = prepared.result_tokens(meter, part.arrival)
                recovery += recovery_cost(
                    self.pricing, meter.reply_tokens, self.min_prefix, tokens, part_tokens
                )
            context.append(msg)
            calls_left -= 1
        cost = self.pricing.cost(
            uncached_tokens=billed - cached, cached_tokens=cached, cache_write_tokens=writes
        )
        out.cost = cost + recovery
        return out

    def _clear_now(
        self,
        plan: str,
        schedule: str | None,
        context: list[Any],
        cleared: dict[int, frozenset[int]],
        pending: list[tuple[int, int]],
        tracker: Tracker,
        calls_left: int,
    ) -> bool:
        """Whether ``schedule`` clears the ``pending`` outputs now; when it does, their
        messages in ``context`` are replaced."""
        slots: dict[int, set[int]] = {}
        for index, slot in pending:
            slots.setdefault(index, set(cleared.get(index, ()))).add(slot)
        changed = {i: self.version(plan, i, frozenset(s)) for i, s in slots.items()}
        meter = self.meter
        freed = sum(meter.message(context[i]) - meter.message(m) for i, m in changed.items())
        if schedule == "clear each call":
            go = True
        elif schedule == "clear when it pays":
            go = self._pays(freed, min(changed), changed, context, tracker, calls_left)
        else:
            go = freed >= _batch(schedule)
        if go:
            for i, m in changed.items():
                context[i] = m
                cleared[i] = frozenset(slots[i])
        return go

    def _pays(
        self,
        freed: int,
        first: int,
        changed: dict[int, Any],
        context: list[Any],
        tracker: Tracker,
        calls_left: int,
    ) -> bool:
        """Clearing now frees ``freed`` tokens at this call and each of the ``calls_left - 1``
        after it (read from the cache, else billed as input), and turns what the last call
        sent from ``first`` on from cache reads into cache writes."""
        pricing = self.pricing
        if not pricing.prompt_cache:
            return freed > 0
        meter = self.meter
        sent = len(tracker.sent)
        rewritten = sum(meter.message(changed.get(i, context[i])) for i in range(first, sent))
        write = pricing.cache_write_per_mtok or pricing.input_per_mtok
        read = pricing.cached_input_per_mtok
        gain = freed * read * calls_left + rewritten * read
        return gain >= rewritten * write


def _batch(variant: str | None) -> int:
    for n in CLEAR_BATCHES:
        if variant == f"clear ≥ {n // 1000}k":
            return n
    raise ValueError(f"unknown ceiling variant {variant!r}")


def _next(calls: list[int], index: int) -> int:
    """The first model call after message ``index`` (past the end: a large index)."""
    for c in calls:
        if c > index:
            return c
    return sys.maxsize


def _truncate(mw: ReductionMiddleware, arrival: Arrival, result: ToolResult) -> ToolResult:
    """``result`` through the truncation phase of ``mw``, as the agent's tool call would be."""
    ctx = ToolContext(name=arrival.name, call_id=arrival.call_id)
    return truncate_output(mw, result, ctx, arrival.arguments)


_RUNS: list[RecordedConversation] = []
"""In a forked pool process: the corpus, inherited from the process that forked it."""


def _one(
    index: int,
    conv: RecordedConversation | None,
    pricing: Pricing,
    min_prefix: int | None,
    inferred_prefix: bool,
) -> RunCeiling:
    return run_ceiling(
        _RUNS[index] if conv is None else conv,
        pricing=pricing,
        min_cacheable_prefix=min_prefix,
        inferred_prefix=inferred_prefix,
    )


def _pooled(
    conversations: Sequence[RecordedConversation],
    pricing: Pricing,
    min_prefix: int | None,
    workers: int,
    progress: Callable[[int, int], None] | None,
    inferred_prefix: bool,
) -> list[RunCeiling]:
    forked = sys.platform.startswith("linux")
    context = multiprocessing.get_context("fork") if forked else None
    if forked:
        _RUNS[:] = conversations
    out: list[RunCeiling | None] = [None] * len(conversations)
    order = sorted(range(len(conversations)), key=lambda i: -len(conversations[i].messages))
    try:
        with ProcessPoolExecutor(min(workers, len(conversations)), mp_context=context) as pool:
            futures = {
                pool.submit(
                    _one,
                    i,
                    None if forked else conversations[i],
                    pricing,
                    min_prefix,
                    inferred_prefix,
                ): i
                for i in order
            }
            for done, future in enumerate(as_completed(futures), start=1):
                out[futures[future]] = future.result()
                if progress is not None:
                    progress(done, len(conversations))
    finally:
        _RUNS.clear()
    return [r for r in out if r is not None]
