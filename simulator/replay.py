"""Replaying a recorded conversation as if the agent had run with a given config.

The transcript is walked as the agent lived it: each tool result passes through
truncation as it arrives, and before each assistant message (a model call) the
clear phase runs on the context so far; its output is what the next call builds
on. Recorded assistant messages stay as recorded: a replay shows what the model
would have been sent, not what it would have answered.

Per call it measures the context sent (by the price preset's measure, see
:mod:`simulator.metering`), what a provider's prompt cache would have served (the
longest prefix shared with the previous call, when at least ``min_cacheable_prefix``
tokens), the new tokens, and of those the ones written to the cache (where the preset
bills cache writes); beside them it keeps what the clear phase's summary event said
(:class:`~simulator.results.ClearPass`, in the config's own counter). A model call is an
assistant message after some input: a greeting an agent sends before the user speaks is
part of the context but no call. No model is called. The result values live in
:mod:`simulator.results`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Collection, Mapping, Sequence
from typing import Any

from reduction_app.engine import (
    AgenticMessage,
    Backend,
    ChatModelAgentState,
    FunctionToolResult,
    InMemoryBackend,
    Message,
    ReductionConfig,
    ReductionEvent,
    ToolArgument,
    ToolContext,
    ToolInfo,
    ToolResult,
    WriteRequest,
    config_from_dict,
    config_to_dict,
    get_token_counter,
    new,
    stringify,
)
from reduction_app.engine.inspect import classify, read_result, tool_calls_of, write_result
from simulator.metering import Meter
from simulator.pricing import DEFAULT_PRICING, Pricing
from simulator.recording import RecordedConversation
from simulator.refetch import Repeats
from simulator.results import CallRecord, ClearPass, ReplayResult, Totals, strategy_effects
from simulator.transcript import (
    Key,
    call_key,
    model_calls,
    result_blocks,
    unflagged,
    with_stable_ids,
)

__all__ = ["DEFAULT_MIN_CACHEABLE_PREFIX", "no_reduction", "replay"]

DEFAULT_MIN_CACHEABLE_PREFIX = 1024
"""Tokens: the shortest prefix OpenAI and Anthropic prompt caches serve."""


def no_reduction() -> dict[str, Any]:
    """The baseline config: both phases off."""
    return {"skip_truncation": True, "skip_clear": True}


class _CountingBackend:
    """Passes every write on to ``inner`` and counts the characters written, so each
    replay reports its own offloads whatever backend the config brought."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.chars = 0

    def write(self, request: WriteRequest) -> Awaitable[None] | None:
        done = self.inner.write(request)
        self.chars += len(request.content)
        return done

    def read(self, path: str) -> str | Awaitable[str]:
        return self.inner.read(path)


def _config(
    config: ReductionConfig | Mapping[str, Any] | None, events: list[ReductionEvent]
) -> tuple[ReductionConfig, _CountingBackend]:
    if config is None:
        config = no_reduction()
    if not isinstance(config, ReductionConfig):
        backend = _CountingBackend(InMemoryBackend())
        return config_from_dict(config, backend=backend, on_event=events.append), backend
    user_hook = config.on_event

    def on_event(event: ReductionEvent) -> None:
        events.append(event)
        if user_hook is not None:
            user_hook(event)

    # A fresh in-memory backend when none is set: an empty InMemoryBackend is falsy.
    backend = _CountingBackend(config.backend if config.backend is not None else InMemoryBackend())
    return dataclasses.replace(config, backend=backend, on_event=on_event), backend


class _Replayer:
    def __init__(
        self,
        conversation: RecordedConversation,
        config: ReductionConfig,
        pricing: Pricing,
        min_prefix: int,
        contexts: Collection[int] = (),
    ) -> None:
        self.conversation = conversation
        self.wanted_contexts = frozenset(contexts)
        self.contexts: dict[int, tuple[Any, ...]] = {}
        """The messages sent at the calls of ``wanted_contexts``, by call index."""
        self.mw = new(config)
        self.counter = get_token_counter(config.token_counter)
        """The config's counter: the clear phase's unit (see :meth:`_clear_pass`)."""
        self.meter = Meter(pricing, self.counter)
        self.writes_cache = pricing.cache_write_per_mtok is not None
        self.caches = pricing.prompt_cache
        self.tools: list[ToolInfo] = list(conversation.tools)
        self.min_prefix = min_prefix
        self.calls_by_id: dict[str, Key] = {}
        self.originals: list[Any] = []
        """Every original result (chat message or result block), kept alive so that the
        ``id`` keys below stay theirs."""
        self.result_keys: dict[int, Key] = {}
        self.result_texts: dict[int, str] = {}
        self.result_tokens: dict[int, int] = {}
        self.repeats = Repeats()

    def _truncate(self, msg: Any) -> Any:
        """The result message as it enters the context, after the truncation phase."""
        if isinstance(msg, Message):
            name, arguments = self._remember(msg, msg.tool_call_id, msg.tool_name)
            read = read_result(msg, msg.tool_call_id)
            assert read is not None
            self._arrived(msg, msg.tool_call_id, read[0])
            result = self._run_tool(name, msg.tool_call_id, arguments, read[0])
            if result is read[0]:
                return msg
            return write_result(msg, msg.tool_call_id, result.parts, read[1])
        new_msg = msg
        for occurrence, block in result_blocks(msg):
            name, arguments = self._remember(block, block.call_id, block.name)
            read = read_result(new_msg, block.call_id, occurrence)
            if read is None:
                continue
            self._arrived(block, block.call_id, read[0])
            result = self._run_tool(name, block.call_id, arguments, read[0])
            if result is not read[0]:
                new_msg = write_result(new_msg, block.call_id, result.parts, read[1], occurrence)
        return new_msg

    def _remember(self, item: Any, call_id: str, fallback_name: str) -> Key:
        """Record an arriving result; return its call's (name, raw arguments)."""
        name, arguments = self.calls_by_id.get(call_id, (fallback_name, ""))
        self.originals.append(item)
        self.result_keys[id(item)] = call_key(name, arguments)
        if isinstance(item, FunctionToolResult):
            item = AgenticMessage(role="user", content_blocks=(item,))
        self.result_tokens[id(self.originals[-1])] = self.meter.message(item)
        return name, arguments

    def _arrived(self, item: Any, call_id: str, result: ToolResult) -> None:
        """Keep the original output, and settle a repeated call waiting for it."""
        text = stringify(result.parts)
        self.result_texts[id(item)] = text
        self.repeats.answered(call_id, text)

    def _run_tool(self, name: str, call_id: str, arguments: str, result: ToolResult) -> ToolResult:
        wrapped = self.mw.wrap_enhanced_invokable_tool_call(
            lambda _: result, ToolContext(name=name, call_id=call_id)
        )
        return wrapped(ToolArgument(text=arguments))

    def _visible(self, context: Sequence[Any]) -> tuple[set[int], float | None]:
        """Ids of the original results still whole in ``context``, and their token share
        (``None`` before any result arrived)."""
        present: set[int] = set()
        for msg in context:
            if classify(msg) != "tool_result":
                continue
            present.add(id(msg))
            if isinstance(msg, AgenticMessage):
                present.update(id(b) for b in msg.content_blocks)
        intact = {i for i in self.result_tokens if i in present}
        total = sum(self.result_tokens.values())
        seen = sum(self.result_tokens[i] for i in intact)
        return intact, (seen / total if self.result_tokens else None)

    def _note_calls(self, msg: Any, intact: set[int]) -> None:
        """Remember the calls of ``msg``; one asking again for a result no longer whole
        in the context waits for its output (see :class:`~simulator.refetch.Repeats`)."""
        visible = {self.result_keys[i] for i in intact}
        hidden: dict[Key, list[str]] = {}
        for i, key in self.result_keys.items():
            if i not in intact and key not in visible:
                hidden.setdefault(key, []).append(self.result_texts.get(i, ""))
        for ref in tool_calls_of(msg):
            earlier = hidden.get(call_key(ref.name, ref.arguments))
            if earlier is not None:
                self.repeats.asked(ref.call_id, earlier)
            self.calls_by_id[ref.call_id] = (ref.name, ref.arguments)

    def run(self, events: list[ReductionEvent]) -> tuple[list[CallRecord], list[float]]:
        """The calls, and the visible shares of those made after a tool result arrived."""
        context: list[Any] = []
        records: list[CallRecord] = []
        shares: list[float] = []
        previous: list[Any] = []
        mark = 0
        messages = with_stable_ids(self.conversation.messages)
        calls = set(model_calls(messages))
        for index, msg in enumerate(messages):
            kind = classify(msg)
            if kind != "assistant":
                context.append(self._truncate(msg) if kind == "tool_result" else msg)
                continue
            if index not in calls:
                context.append(msg)  # a greeting sent before any input: no model call
                continue
            state = ChatModelAgentState(messages=context, tool_infos=self.tools)
            context = list(self.mw.before_model_rewrite_state(state).messages)
            context_tokens = self.meter.request(context, self.tools)
            cached = self._cached(previous, context)
            new_tokens = context_tokens - cached
            cacheable = self.writes_cache and context_tokens >= self.min_prefix
            writes = new_tokens if cacheable else 0
            intact, share = self._visible(context)
            if share is not None:
                shares.append(share)
            self._note_calls(msg, intact)
            if len(records) in self.wanted_contexts:
                self.contexts[len(records)] = tuple(context)
            records.append(
                CallRecord(
                    index=len(records),
                    message_index=index,
                    context_tokens=context_tokens,
                    cached_tokens=cached,
                    new_tokens=new_tokens,
                    cache_write_tokens=writes,
                    visible_tool_share=round(1.0 if share is None else share, 6),
                    events=tuple(events[mark:]),
                    clear=self._clear_pass(events[mark:], context),
                )
            )
            mark = len(events)
            previous = list(context)
            context.append(msg)
        self.repeats.close()
        return records, shares

    def _clear_pass(self, events: Sequence[ReductionEvent], context: Sequence[Any]) -> ClearPass:
        """This call's clear pass, from its summary event; without one (``skip_clear``),
        the context counted as the clear phase would have counted it."""
        summary = next((e for e in reversed(events) if e.kind == "summary"), None)
        if summary is not None:
            return ClearPass.from_summary(summary)
        tokens = int(self.counter(list(context), self.tools))
        return ClearPass(tokens_before=tokens, tokens_after=tokens, threshold=None, cleared=False)

    def _cached(self, previous: Sequence[Any], context: Sequence[Any]) -> int:
        if not previous or not self.caches:
            return 0
        prefix = self.meter.tools(self.tools)
        for a, b in zip(previous, context, strict=False):
            if a is not b and unflagged(a) != unflagged(b):
                break
            prefix += self.meter.message(b)
        return prefix if prefix >= self.min_prefix else 0


def replay(
    conversation: RecordedConversation,
    config: ReductionConfig | Mapping[str, Any] | None,
    *,
    name: str | None = None,
    pricing: Pricing = DEFAULT_PRICING,
    min_cacheable_prefix: int | None = None,
    contexts: Collection[int] | None = None,
) -> ReplayResult:
    """Replay ``conversation`` under ``config`` (``None``: no reduction) and measure it.

    ``min_cacheable_prefix``: tokens, the shortest prefix a prompt cache serves; ``None``:
    the price preset's. ``contexts``: indices of model calls whose messages (as sent,
    after the clear phase) the result keeps in ``ReplayResult.contexts``; calls past the
    end are ignored.
    """
    if min_cacheable_prefix is None:
        min_cacheable_prefix = pricing.min_cacheable_prefix
    events: list[ReductionEvent] = []
    cfg, backend = _config(config, events)
    replayer = _Replayer(conversation, cfg, pricing, min_cacheable_prefix, contexts or ())
    calls, shares = replayer.run(events)
    billed = sum(c.context_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    writes = sum(c.cache_write_tokens for c in calls)
    cost = pricing.cost(
        uncached_tokens=billed - cached, cached_tokens=cached, cache_write_tokens=writes
    )
    totals = Totals(
        model_calls=len(calls),
        input_tokens_billed=billed,
        cached_tokens=cached,
        uncached_tokens=billed - cached,
        cache_write_tokens=writes,
        cost_usd=round(cost, 6),
        peak_context_tokens=max((c.context_tokens for c in calls), default=0),
        truncations=sum(1 for e in events if e.kind == "tool" and e.phase == "truncation"),
        clears=sum(1 for e in events if e.kind == "summary" and e.reason == "applied"),
        chars_offloaded=backend.chars,
        refetches=replayer.repeats.refetches,
        repeated_calls=replayer.repeats.repeated,
        mean_visible_tool_share=round(sum(shares) / len(shares), 6) if shares else 1.0,
    )
    try:
        as_dict = config_to_dict(cfg)
    except ValueError:
        as_dict = {}
    return ReplayResult(
        name=name or "config",
        conversation=conversation.name,
        config=as_dict,
        totals=totals,
        calls=tuple(calls),
        contexts=replayer.contexts,
        measure=replayer.meter.describe(),
        estimate=pricing.estimate,
        strategies=strategy_effects(events),
    )
