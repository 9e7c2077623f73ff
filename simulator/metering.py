"""How many input tokens a request holds, the way a provider bills them.

A :class:`Meter` measures each message once and sums a request from those counts: with
a price preset's tokenizer and framing (what the provider bills, the same measure for
every config of a comparison), or without one, with the config's own counter (what the
clear phase itself sees).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reduction_app.engine import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    Message,
    ToolInfo,
    UserInputText,
    get_token_counter,
)
from reduction_app.engine.inspect import count_text, render_tool
from simulator.pricing import Pricing
from simulator.tool_text import typescript_tools

__all__ = ["Meter", "message_texts"]


class Meter:
    """Measures requests, for one replay or for several replays of one conversation."""

    def __init__(self, pricing: Pricing, engine_counter: Any) -> None:
        self.framing = pricing.framing
        self.provider = pricing.tokenizer is not None
        self.counter: Any = (
            get_token_counter(pricing.tokenizer) if pricing.tokenizer else engine_counter
        )
        self._messages: dict[int, tuple[Any, int]] = {}
        self._tools: dict[int, tuple[Any, int]] = {}
        self._texts: dict[str, int] = {}
        """Counts by value: the short texts a replay makes again and again (placeholders,
        notices, the tool calls of messages the clear phase flagged), which the tokenizer's
        own cache leaves out."""
        # The tool list of the last request, its count, and the tools kept alive.
        self._namespace: tuple[tuple[int, ...], int, tuple[ToolInfo, ...]] = ((), 0, ())

    def describe(self) -> str:
        """What the counts are, for output: the tokenizer and the framing."""
        name = getattr(self.counter, "name", type(self.counter).__name__)
        if not self.provider:
            return f"{name} (the config's counter, no framing)"
        return f"{name} + {self.framing.name} framing"

    def message(self, msg: Any) -> int:
        """Tokens of one message in a request."""
        hit = self._messages.get(id(msg))
        if hit is not None and hit[0] is msg:
            return hit[1]
        tokens = self._measure(msg)
        self._messages[id(msg)] = (msg, tokens)
        return tokens

    def tools(self, tools: Sequence[ToolInfo]) -> int:
        """Tokens of the tool schemas offered with a request, with their framing."""
        if not tools:
            return 0
        if not self.provider:
            count = getattr(self.counter, "count_tools", None)
            return int(count(tools)) if count is not None else int(self.counter([], tools))
        total = self.framing.tools_prompt
        if self.framing.tool_text == "typescript":
            key = tuple(id(t) for t in tools)
            if self._namespace[0] != key:
                text, params = typescript_tools(tools)
                tokens = self._text(text) + self.framing.per_property * params
                self._namespace = (key, tokens, tuple(tools))
            return total + self._namespace[1]
        for tool in tools:
            hit = self._tools.get(id(tool))
            if hit is None or hit[0] is not tool:
                hit = (tool, self._text(render_tool(tool)) + self.framing.per_tool)
                self._tools[id(tool)] = hit
            total += hit[1]
        return total

    @property
    def reply_tokens(self) -> int:
        """Tokens a request adds after its messages (the reply primer)."""
        return self.framing.per_reply if self.provider else 0

    def request(self, messages: Sequence[Any], tools: Sequence[ToolInfo]) -> int:
        """Tokens of a whole request: the tools, every message and the reply primer."""
        body = sum(self.message(m) for m in messages)
        return self.tools(tools) + body + self.reply_tokens

    def _text(self, text: str) -> int:
        if not text:
            return 0
        tokens = self._texts.get(text)
        if tokens is None:
            tokens = self._texts[text] = count_text(self.counter, text)
        return tokens

    def _measure(self, msg: Any) -> int:
        if not self.provider:
            count = getattr(self.counter, "count_message", None)
            return int(count(msg)) if count is not None else int(self.counter([msg], []))
        pieces, calls = _pieces(msg)
        framing = self.framing
        return (
            framing.per_message
            + framing.per_tool_call * calls
            + sum(self._text(piece) for piece in (msg.role, *pieces))
        )


def message_texts(msg: Any) -> list[str]:
    """The texts of a message a provider tokenizes (its role and framing left out)."""
    return _pieces(msg)[0]


def _pieces(msg: Any) -> tuple[list[str], int]:
    """The texts of a message a provider tokenizes, and its number of tool calls."""
    if isinstance(msg, Message):
        texts = [msg.content]
        texts += [p.text for p in msg.user_input_multi_content if p.type == "text"]
        texts += [p.text for p in msg.assistant_gen_multi_content if p.type == "text"]
        for call in msg.tool_calls:
            texts += [call.name, call.arguments]
        return texts, len(msg.tool_calls)
    assert isinstance(msg, AgenticMessage)
    texts = []
    calls = 0
    for block in msg.content_blocks:
        if isinstance(block, UserInputText | AssistantGenText):
            texts.append(block.text)
        elif isinstance(block, FunctionToolCall):
            texts += [block.name, block.arguments]
            calls += 1
        elif isinstance(block, FunctionToolResult):
            texts += [c.text for c in block.content if c.text]
    return texts, calls
