"""What input tokens cost, and how a provider counts them: one preset per model.

A preset holds the list prices (US dollars per million input tokens: uncached, read
from a prompt cache, and written to one), the tokenizer the provider counts with, and
its framing: the tokens it adds around each message, before each reply and for the
tool schemas (see :mod:`simulator.metering`). Prices are the providers' published list
prices on :data:`PRICES_AS_OF`; pass your own :class:`Pricing` for anything else.

* OpenAI caches prompts on its own and bills cache writes at the input price. Its
  models count with ``o200k_base`` (GPT-4o and later) or ``cl100k_base`` (GPT-4 and
  GPT-4 Turbo), shipped offline, so their counts are exact up to the framing.
* Anthropic bills a cache write at 1.25× the input price (5-minute cache) and a read at
  0.1×. No Claude tokenizer is available offline: Claude presets count with
  ``cl100k_base`` and say their counts are estimates.

A :class:`Pricing` without a tokenizer (the default for your own) measures with the
config's own counter and adds no framing: the simulator then reports what the engine
itself counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANTHROPIC_FRAMING",
    "DEFAULT_PRICING",
    "NO_FRAMING",
    "OPENAI_CHAT_FRAMING",
    "PRESETS",
    "PRICES_AS_OF",
    "Framing",
    "Pricing",
    "cache_percents",
    "engine_measure",
    "pricing_for",
    "with_cache_prices",
]

PRICES_AS_OF = "2025-11-24"
"""The day the preset prices were read off the providers' price pages."""


@dataclass(frozen=True, kw_only=True)
class Framing:
    """Tokens a provider adds to the text of a request, on top of what its tokenizer
    counts in the messages and tool schemas themselves."""

    name: str = "none"
    per_message: int = 0
    """Around each message (role markers and separators)."""
    per_tool_call: int = 0
    """Around each tool call an assistant message makes."""
    per_reply: int = 0
    """Once per request: the primer of the reply."""
    tools_prompt: int = 0
    """Once per request that offers tools: the provider's own tool-use instructions."""
    per_tool: int = 0
    """Around each tool schema."""
    per_property: int = 0
    """Around each parameter of a tool schema (nested ones included), with
    ``tool_text="typescript"``."""
    tool_text: str = "json"
    """How the tool schemas reach the model: ``"json"`` (as the engine renders them) or
    ``"typescript"`` (OpenAI's namespace of type declarations, :mod:`simulator.tool_text`)."""


NO_FRAMING = Framing()
OPENAI_CHAT_FRAMING = Framing(
    name="openai-chat",
    # OpenAI's published rule for chat models: 3 tokens a message, 3 to prime the reply.
    per_message=3,
    per_reply=3,
    # Fitted on the shipped τ²-bench airline runs (43 calls with prompt_tokens): a tool
    # call costs 8 tokens more than its name and arguments, a declared parameter 5 more
    # than its line. The retail, telecom and SWE-agent runs were held out;
    # `python -m simulator calibrate` prints all of them.
    per_tool_call=8,
    per_property=5,
    tool_text="typescript",
)
ANTHROPIC_FRAMING = Framing(
    name="anthropic",
    per_message=3,
    per_reply=3,
    # Anthropic's documented tool-use system prompt of the Claude 4 models (auto choice);
    # Claude Haiku 3.5's is 264.
    tools_prompt=346,
)


@dataclass(frozen=True, kw_only=True)
class Pricing:
    """A model's input prices per million tokens, and how its provider counts tokens."""

    name: str = "custom"
    input_per_mtok: float
    cached_input_per_mtok: float
    cache_write_per_mtok: float | None = None
    """A token written to the prompt cache; ``None``: billed as plain input (OpenAI)."""
    tokenizer: str | None = None
    """A built-in counter name; ``None``: the config's own counter, with no framing."""
    framing: Framing = field(default=NO_FRAMING)
    estimate: bool = False
    """Token counts are estimates: the provider's tokenizer is not available offline."""
    prompt_cache: bool = True
    """The provider caches prompts for this model (GPT-4 and GPT-4 Turbo: no)."""
    min_cacheable_prefix: int = 1024
    """Tokens: the shortest prompt the provider caches."""

    def cost(
        self, *, uncached_tokens: int, cached_tokens: int, cache_write_tokens: int = 0
    ) -> float:
        """US dollars; ``cache_write_tokens`` are part of ``uncached_tokens``."""
        write_price = self.cache_write_per_mtok
        if write_price is None:
            write_price = self.input_per_mtok
        plain = uncached_tokens - cache_write_tokens
        return (
            plain * self.input_per_mtok
            + cache_write_tokens * write_price
            + cached_tokens * self.cached_input_per_mtok
        ) / 1e6


def _openai(name: str, price: float, cached: float | None) -> Pricing:
    """``cached=None``: no prompt caching (and the older cl100k_base tokenizer)."""
    return Pricing(
        name=name,
        input_per_mtok=price,
        cached_input_per_mtok=price if cached is None else cached,
        tokenizer="cl100k_base" if cached is None else "o200k_base",
        framing=OPENAI_CHAT_FRAMING,
        prompt_cache=cached is not None,
    )


def _anthropic(name: str, price: float, min_prefix: int, tools_prompt: int = 346) -> Pricing:
    """Anthropic's documented minimum cacheable prompt and tool-use prompt per model."""
    framing = ANTHROPIC_FRAMING
    if tools_prompt != framing.tools_prompt:
        framing = dataclasses.replace(framing, tools_prompt=tools_prompt)
    return Pricing(
        name=name,
        input_per_mtok=price,
        cached_input_per_mtok=round(price * 0.1, 6),
        cache_write_per_mtok=round(price * 1.25, 6),
        tokenizer="cl100k_base",
        framing=framing,
        estimate=True,
        min_cacheable_prefix=min_prefix,
    )


PRESETS: dict[str, Pricing] = {
    p.name: p
    for p in (
        _openai("gpt-4o", 2.50, 1.25),
        _openai("gpt-4o-mini", 0.15, 0.075),
        _openai("gpt-4.1", 2.00, 0.50),
        _openai("gpt-4.1-mini", 0.40, 0.10),
        _openai("o4-mini", 1.10, 0.275),
        _openai("gpt-5", 1.25, 0.125),
        _openai("gpt-5-mini", 0.25, 0.025),
        _openai("gpt-4-turbo", 10.00, None),
        _openai("gpt-4", 30.00, None),
        _anthropic("claude-opus-4.5", 5.00, 4096),
        _anthropic("claude-sonnet-4.5", 3.00, 1024),
        _anthropic("claude-sonnet-4", 3.00, 1024),
        _anthropic("claude-haiku-4.5", 1.00, 4096),
        _anthropic("claude-haiku-3.5", 0.80, 2048, tools_prompt=264),
    )
}
DEFAULT_PRICING = PRESETS["gpt-4o"]


def pricing_for(name: str) -> Pricing:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown price preset {name!r}; known: {sorted(PRESETS)}") from None


def cache_percents(pricing: Pricing) -> dict[str, int]:
    """The preset's cache prices as ``clear_cache_read_percent`` and
    ``clear_cache_write_percent``: a cached token's price, and a cache write's (the input
    price where the provider bills none), in percent of the input price."""
    write = pricing.cache_write_per_mtok
    if write is None:
        write = pricing.input_per_mtok
    return {
        "clear_cache_read_percent": round(
            100 * pricing.cached_input_per_mtok / pricing.input_per_mtok
        ),
        "clear_cache_write_percent": round(100 * write / pricing.input_per_mtok),
    }


def with_cache_prices(config: Mapping[str, Any] | None, pricing: Pricing) -> dict[str, Any] | None:
    """``config`` with the preset's :func:`cache_percents` where it sets
    ``clear_cache_aware`` without naming them, so the engine weighs the cache as the
    replay bills it; other configs as they are."""
    if config is None or not config.get("clear_cache_aware"):
        return None if config is None else dict(config)
    return {**cache_percents(pricing), **config}


def engine_measure(pricing: Pricing) -> Pricing:
    """``pricing``'s prices, with tokens counted by each config's own counter and no
    framing: what the clear phase itself sees, rather than what the provider bills."""
    return dataclasses.replace(pricing, tokenizer=None, framing=NO_FRAMING, estimate=False)
