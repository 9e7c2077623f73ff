"""What a replay needs of a recorded conversation before any config comes in.

A :class:`Prepared` conversation is worked out once and shared by every config replayed
on it. Nothing here depends on a config, which is what makes sharing it safe.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from reduction_app.engine import AgenticMessage, Message, get_token_counter
from reduction_app.engine.inspect import classify, tool_calls_of
from simulator.metering import Meter
from simulator.misses import Strings
from simulator.prefix import infer_prefix
from simulator.pricing import Pricing
from simulator.recording import RecordedConversation
from simulator.transcript import (
    Key,
    call_key,
    model_calls,
    result_blocks,
    with_stable_ids,
)

__all__ = ["Arrival", "Prepared", "Truncated"]


@dataclass(frozen=True, slots=True)
class Arrival:
    """One original tool result arriving: a chat tool message, or one result block of an
    agentic message (``occurrence`` among the blocks with its call id)."""

    item: Any
    call_id: str
    name: str
    """The tool, from the latest model call with this id so far (else the result's own)."""
    arguments: str
    key: Key
    occurrence: int | None = None
    """``None`` for a chat tool message."""


@dataclass(frozen=True, slots=True)
class Truncated:
    """What the truncation phase made of one tool-result message under one truncation key
    (see :mod:`simulator.branches`)."""

    message: Any
    texts: tuple[str | None, ...]
    """Per arrival, its output text (``None``: the message had no such result to read)."""
    writes: tuple[tuple[str, str], ...]
    """The offloads written, path and content, in order."""
    events: tuple[Any, ...]


class Prepared:
    """A recorded conversation made ready for replays under any number of configs.

    It holds the messages with stable ids (:func:`~simulator.transcript.with_stable_ids`),
    which assistant messages are model calls, each tool result's call (name, arguments and
    call key, as the calls seen before it name them), each model call's call keys, the
    strings misses look for (:class:`~simulator.misses.Strings`), and the prefix the
    recording left out, where one is inferred (:mod:`simulator.prefix`). The
    :class:`~simulator.metering.Meter` of each measure is shared too, so a message the
    configs send alike (every recorded one, and the same object kept by several configs)
    is counted once.
    """

    def __init__(
        self,
        conversation: RecordedConversation,
        pricing: Pricing,
        *,
        share_truncation: bool = True,
        inferred_prefix: bool = True,
    ) -> None:
        self.conversation = conversation
        self.pricing = pricing
        self.share_truncation = share_truncation
        """Branches of one truncation key take the first one's truncated messages (see
        :mod:`simulator.branches`); off only to measure what that buys."""
        self.inferred_prefix = inferred_prefix
        self.tools = list(conversation.tools)
        self.messages: list[Any] = with_stable_ids(conversation.messages)
        self.kinds = [classify(m) for m in self.messages]
        self.calls = frozenset(model_calls(self.messages))
        self.arrivals: dict[int, list[Arrival]] = {}
        """Per tool-result message index, its original results in order."""
        self.call_keys: dict[int, list[tuple[str, Key]]] = {}
        """Per model call index, its tool calls' ids and keys."""
        self.truncated: dict[tuple[str | None, int], Truncated] = {}
        """Per truncation key and message index, what truncation made of that message."""
        self._meters: dict[int, tuple[Any, Meter]] = {}
        self._block_tokens: dict[tuple[int, int], int] = {}
        self._walk()
        self.strings = Strings(self.messages, self.calls, self.arrivals, self.tools)
        """The strings of the messages and original results, for misses."""
        self.prefix_tokens: int | None = None
        """Tokens of what the recording left out before its messages, as inferred (see
        :mod:`simulator.prefix`); ``None`` when none is, or ``inferred_prefix`` is off."""
        if inferred_prefix:
            meter = self.meter(get_token_counter("approx"))
            self.prefix_tokens = infer_prefix(conversation, meter, self.messages)

    @property
    def prefix(self) -> int:
        """Tokens every request counts before the tools and messages it holds."""
        return self.prefix_tokens or 0

    def _walk(self) -> None:
        keys: dict[tuple[str, str], Key] = {}

        def key_of(name: str, arguments: str) -> Key:
            found = keys.get((name, arguments))
            if found is None:
                found = keys[(name, arguments)] = call_key(name, arguments)
            return found

        calls_by_id: dict[str, tuple[str, str]] = {}
        for index, msg in enumerate(self.messages):
            kind = self.kinds[index]
            if kind == "tool_result":
                items: Sequence[tuple[int | None, Any, str, str]]
                if isinstance(msg, Message):
                    items = [(None, msg, msg.tool_call_id, msg.tool_name)]
                else:
                    items = [(n, b, b.call_id, b.name) for n, b in result_blocks(msg)]
                arrivals = []
                for occurrence, item, call_id, fallback in items:
                    name, arguments = calls_by_id.get(call_id, (fallback, ""))
                    key = key_of(name, arguments)
                    arrivals.append(Arrival(item, call_id, name, arguments, key, occurrence))
                self.arrivals[index] = arrivals
            elif kind == "assistant" and index in self.calls:
                refs = tool_calls_of(msg)
                self.call_keys[index] = [(r.call_id, key_of(r.name, r.arguments)) for r in refs]
                for ref in refs:
                    calls_by_id[ref.call_id] = (ref.name, ref.arguments)

    def meter(self, engine_counter: Any) -> Meter:
        """The meter of this price preset; without a provider tokenizer it counts with the
        config's own counter, so configs on different counters get different meters."""
        key = 0 if self.pricing.tokenizer is not None else id(engine_counter)
        hit = self._meters.get(key)
        if hit is None:
            hit = self._meters[key] = (engine_counter, Meter(self.pricing, engine_counter))
        return hit[1]

    def result_tokens(self, meter: Meter, arrival: Arrival) -> int:
        """Tokens of an original result by ``meter``: a result block as a user message of
        its own."""
        item = arrival.item
        if not isinstance(item, AgenticMessage | Message):
            key = (id(meter), id(item))
            tokens = self._block_tokens.get(key)
            if tokens is None:
                wrapped = AgenticMessage(role="user", content_blocks=(item,))
                tokens = self._block_tokens[key] = meter.message(wrapped)
            return tokens
        return meter.message(item)
