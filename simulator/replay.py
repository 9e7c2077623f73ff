"""Replaying a recorded conversation as if the agent had run with a given config.

The transcript is walked as the agent lived it: each tool result passes through
truncation as it arrives, and before each assistant message (a model call) the
clear phase runs on the context so far; its output is what the next call builds
on. Recorded assistant messages stay as recorded: a replay shows what the model
would have been sent, not what it would have answered.

Per call it measures the context sent, what a provider's prompt cache would have
served (the longest prefix shared with the previous call, when at least
``min_cacheable_prefix`` tokens), and the new tokens. No model is called.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reduction_app.engine import (
    AgenticMessage,
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
    config_from_dict,
    config_to_dict,
    get_token_counter,
    new,
)
from reduction_app.engine.access import classify, read_result, tool_calls_of, write_result
from simulator.importers import RecordedConversation
from simulator.pricing import DEFAULT_PRICING, Pricing

__all__ = ["CallRecord", "ReplayResult", "Totals", "no_reduction", "replay"]

DEFAULT_MIN_CACHEABLE_PREFIX = 1024


@dataclass(frozen=True)
class CallRecord:
    """One model call of the replay."""

    index: int
    context_tokens: int
    cached_tokens: int
    new_tokens: int
    visible_tool_share: float
    """Share of the tool-result tokens received so far that the model still sees whole."""
    events: tuple[ReductionEvent, ...] = ()


@dataclass(frozen=True)
class Totals:
    model_calls: int
    input_tokens_billed: int
    cached_tokens: int
    uncached_tokens: int
    cost_usd: float
    peak_context_tokens: int
    truncations: int
    clears: int
    chars_offloaded: int
    refetches: int
    mean_visible_tool_share: float


@dataclass(frozen=True)
class ReplayResult:
    name: str
    conversation: str
    config: dict[str, Any]
    totals: Totals
    calls: tuple[CallRecord, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "conversation": self.conversation,
            "config": self.config,
            "totals": dataclasses.asdict(self.totals),
            "calls": [
                {
                    "index": c.index,
                    "context_tokens": c.context_tokens,
                    "cached_tokens": c.cached_tokens,
                    "new_tokens": c.new_tokens,
                    "visible_tool_share": c.visible_tool_share,
                    "events": [e.to_dict() for e in c.events],
                }
                for c in self.calls
            ],
        }


def no_reduction() -> dict[str, Any]:
    """The baseline config: both phases off."""
    return {"skip_truncation": True, "skip_clear": True}


def _config(config: ReductionConfig | Mapping[str, Any] | None, events: list[ReductionEvent]) -> ReductionConfig:
    if config is None:
        config = no_reduction()
    if isinstance(config, ReductionConfig):
        user_hook = config.on_event

        def on_event(event: ReductionEvent) -> None:
            events.append(event)
            if user_hook is not None:
                user_hook(event)

        return dataclasses.replace(config, backend=config.backend or InMemoryBackend(), on_event=on_event)
    return config_from_dict(config, backend=InMemoryBackend(), on_event=events.append)


def _args_key(name: str, arguments: str) -> tuple[str, str]:
    try:
        return name, json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return name, arguments


def _with_ids(messages: Sequence[Any]) -> list[Any]:
    """Give calls with an empty id a stable one, so replays are deterministic (the engine
    would otherwise name their offload files with a random id)."""
    out: list[Any] = []
    pending: list[str] = []
    for index, msg in enumerate(messages):
        if isinstance(msg, Message):
            if msg.tool_calls and any(not c.id for c in msg.tool_calls):
                calls = []
                for j, c in enumerate(msg.tool_calls):
                    if not c.id:
                        c = dataclasses.replace(c, id=f"sim-{index}-{j}")
                        pending.append(c.id)
                    calls.append(c)
                msg = dataclasses.replace(msg, tool_calls=tuple(calls))
            elif msg.role == "tool" and not msg.tool_call_id and pending:
                msg = dataclasses.replace(msg, tool_call_id=pending.pop(0))
        out.append(msg)
    return out


class _Replayer:
    def __init__(self, conversation: RecordedConversation, config: ReductionConfig, events: list[ReductionEvent],
                 pricing: Pricing, min_cacheable_prefix: int) -> None:
        self.conversation = conversation
        self.events = events
        self.mw = new(config)
        self.counter: Any = get_token_counter(config.token_counter)
        self.tools: list[ToolInfo] = list(conversation.tools)
        self.pricing = pricing
        self.min_prefix = min_cacheable_prefix
        self.calls_by_id: dict[str, tuple[str, str]] = {}
        self.result_keys: dict[int, tuple[str, str]] = {}
        """For each original result object (by id): the (tool, arguments) of its call."""
        self.result_tokens: dict[int, int] = {}
        self.originals: list[Any] = []

    def _count(self, msg: Any) -> int:
        count = getattr(self.counter, "count_message", None)
        return int(count(msg)) if count is not None else int(self.counter([msg], []))

    def _tools_tokens(self) -> int:
        count = getattr(self.counter, "count_tools", None)
        return int(count(self.tools)) if count is not None else int(self.counter([], self.tools))

    def _truncate(self, msg: Any) -> Any:
        """The result message as it enters the context, after the truncation phase."""
        if isinstance(msg, Message):
            name, arguments = self.calls_by_id.get(msg.tool_call_id, (msg.tool_name, ""))
            self._remember(msg, msg, name, arguments)
            read = read_result(msg, msg.tool_call_id)
            assert read is not None
            result = self._run_tool(name, msg.tool_call_id, arguments, read[0])
            return msg if result is read[0] else write_result(msg, msg.tool_call_id, result.parts, read[1])
        new_msg = msg
        for block in msg.content_blocks:
            if not isinstance(block, FunctionToolResult):
                continue
            name, arguments = self.calls_by_id.get(block.call_id, (block.name, ""))
            self._remember(block, msg, name, arguments)
            read = read_result(new_msg, block.call_id)
            if read is None:
                continue
            result = self._run_tool(name, block.call_id, arguments, read[0])
            if result is not read[0]:
                new_msg = write_result(new_msg, block.call_id, result.parts, read[1])
        return new_msg

    def _remember(self, item: Any, msg: Any, name: str, arguments: str) -> None:
        self.originals.append(item)
        self.result_keys[id(item)] = _args_key(name, arguments)
        if isinstance(item, FunctionToolResult):
            one = AgenticMessage(role="user", content_blocks=(item,))
            self.result_tokens[id(item)] = int(self.counter([one], []))
        else:
            self.result_tokens[id(item)] = self._count(item)

    def _run_tool(self, name: str, call_id: str, arguments: str, result: ToolResult) -> ToolResult:
        wrapped = self.mw.wrap_enhanced_invokable_tool_call(lambda _: result, ToolContext(name=name, call_id=call_id))
        return wrapped(ToolArgument(text=arguments))

    def _visible(self, context: Sequence[Any]) -> tuple[set[int], float]:
        """Ids of the original results still whole in ``context``, and their token share."""
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
        return intact, (seen / total if total else 1.0)

    def run(self) -> list[CallRecord]:
        context: list[Any] = []
        records: list[CallRecord] = []
        previous: list[Any] = []
        mark = 0
        refetches = 0
        for msg in _with_ids(self.conversation.messages):
            kind = classify(msg)
            if kind == "tool_result":
                context.append(self._truncate(msg))
                continue
            if kind != "assistant":
                context.append(msg)
                continue
            state = self.mw.before_model_rewrite_state(ChatModelAgentState(messages=context, tool_infos=self.tools))
            context = list(state.messages)
            context_tokens = int(self.counter(context, self.tools))
            cached = self._cached(previous, context)
            intact, share = self._visible(context)
            hidden = {self.result_keys[i] for i in self.result_tokens if i not in intact}
            for ref in tool_calls_of(msg):
                key = _args_key(ref.name, ref.arguments)
                if key in hidden:
                    refetches += 1
                self.calls_by_id[ref.call_id] = (ref.name, ref.arguments)
            records.append(
                CallRecord(
                    index=len(records),
                    context_tokens=context_tokens,
                    cached_tokens=cached,
                    new_tokens=context_tokens - cached,
                    visible_tool_share=round(share, 6),
                    events=tuple(self.events[mark:]),
                )
            )
            mark = len(self.events)
            previous = list(context)
            context.append(msg)
        self.refetches = refetches
        return records

    def _cached(self, previous: Sequence[Any], context: Sequence[Any]) -> int:
        if not previous:
            return 0
        prefix = self._tools_tokens()
        for a, b in zip(previous, context, strict=False):
            if a is not b and a != b:
                break
            prefix += self._count(b)
        return prefix if prefix >= self.min_prefix else 0


def replay(
    conversation: RecordedConversation,
    config: ReductionConfig | Mapping[str, Any] | None,
    *,
    name: str | None = None,
    pricing: Pricing = DEFAULT_PRICING,
    min_cacheable_prefix: int = DEFAULT_MIN_CACHEABLE_PREFIX,
) -> ReplayResult:
    """Replay ``conversation`` under ``config`` (``None``: no reduction) and measure it."""
    events: list[ReductionEvent] = []
    cfg = _config(config, events)
    replayer = _Replayer(conversation, cfg, events, pricing, min_cacheable_prefix)
    calls = replayer.run()
    billed = sum(c.context_tokens for c in calls)
    cached = sum(c.cached_tokens for c in calls)
    tool_events = [e for e in events if e.kind == "tool"]
    totals = Totals(
        model_calls=len(calls),
        input_tokens_billed=billed,
        cached_tokens=cached,
        uncached_tokens=billed - cached,
        cost_usd=round(pricing.cost(uncached_tokens=billed - cached, cached_tokens=cached), 6),
        peak_context_tokens=max((c.context_tokens for c in calls), default=0),
        truncations=sum(1 for e in tool_events if e.phase == "truncation"),
        clears=sum(1 for e in events if e.kind == "summary" and e.reason == "applied"),
        chars_offloaded=sum(len(v) for v in cfg.backend.files.values()) if isinstance(cfg.backend, InMemoryBackend) else 0,
        refetches=replayer.refetches,
        mean_visible_tool_share=round(sum(c.visible_tool_share for c in calls) / len(calls), 6) if calls else 1.0,
    )
    try:
        as_dict = config_to_dict(cfg)
    except ValueError:
        as_dict = {}
    return ReplayResult(name or "config", conversation.name, as_dict, totals, tuple(calls))

