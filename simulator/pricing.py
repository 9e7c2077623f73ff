"""What tokens cost, and how a provider counts them: one preset per model, and the
fields your own prices may set.

:data:`PRESETS` are the providers' list prices on :data:`PRICES_AS_OF`. A price's JSON
form (a price file, the app's price table) is :mod:`simulator.price_file`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ANTHROPIC_FRAMING",
    "DEFAULT_PRICING",
    "DEFAULT_PRICING_NAME",
    "FRAMINGS",
    "GEMINI_FRAMING",
    "LONG_CONTEXT_FIELDS",
    "NO_FRAMING",
    "OPENAI_CHAT_FRAMING",
    "PRESETS",
    "PRICES_AS_OF",
    "PRICE_FIELDS",
    "TOKENIZERS",
    "Framing",
    "LongContext",
    "PriceError",
    "PriceField",
    "Pricing",
    "cache_percents",
    "engine_measure",
    "pricing_for",
    "with_cache_prices",
]

PRICES_AS_OF = "2026-12-06"
"""The day the preset prices were read off the providers' price pages."""

TOKENIZERS = ("cl100k_base", "o200k_base")
"""The provider tokenizers a price can count with (shipped offline)."""


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
    # Anthropic's documented tool-use system prompt of the Claude 4 models (auto choice).
    tools_prompt=346,
)
ANTHROPIC_35_FRAMING = dataclasses.replace(
    # Claude Haiku 3.5's documented tool-use system prompt.
    ANTHROPIC_FRAMING,
    name="anthropic-3.5",
    tools_prompt=264,
)
GEMINI_FRAMING = Framing(
    name="gemini",
    # Google publishes no framing rule. Gemini's chat template opens and closes each turn
    # with a role marker, as the others do, so the same small per-message and per-reply
    # allowance as OpenAI's and Anthropic's is assumed; the tool schemas are counted as
    # the JSON the engine renders, with no tool-use prompt.
    per_message=3,
    per_reply=3,
)
FRAMINGS: dict[str, Framing] = {
    f.name: f
    for f in (
        NO_FRAMING,
        OPENAI_CHAT_FRAMING,
        ANTHROPIC_FRAMING,
        ANTHROPIC_35_FRAMING,
        GEMINI_FRAMING,
    )
}
"""Framings by name: what a price file's ``framing`` names."""


@dataclass(frozen=True, kw_only=True)
class LongContext:
    """Rates of a request whose prompt passes ``above`` tokens: all its input (uncached,
    cache reads and writes) and output are billed at these rates instead."""

    above: int
    """Tokens: a prompt longer than this (cached tokens included) takes these rates."""
    input_per_mtok: float
    cached_input_per_mtok: float
    cache_write_per_mtok: float | None = None
    """``None``: writes billed as plain input, as below the threshold."""
    output_per_mtok: float | None = None


@dataclass(frozen=True, kw_only=True)
class Pricing:
    """A model's prices per million tokens (cache reads and writes, a long-context tier),
    and how its provider counts tokens (the tokenizer and the framing)."""

    name: str = "custom"
    input_per_mtok: float
    cached_input_per_mtok: float
    cache_write_per_mtok: float | None = None
    """A token written to the prompt cache; ``None``: billed as plain input (OpenAI)."""
    output_per_mtok: float | None = None
    """An output token; shown, never part of a replay's cost: every config sends the same
    recorded replies."""
    long_context: LongContext | None = None
    """Higher rates for long prompts; ``None``: one rate whatever the prompt's length."""
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
        self,
        *,
        uncached_tokens: int,
        cached_tokens: int,
        cache_write_tokens: int = 0,
        prompt_tokens: int | None = None,
    ) -> float:
        """US dollars of input; ``cache_write_tokens`` are part of ``uncached_tokens``.

        ``prompt_tokens`` is the length of one request's prompt: past the long-context
        threshold, every token is billed at the tier's rates. Leave it out to price
        tokens at the base rates (a sum over many requests, say)."""
        rates = self.rates_for(prompt_tokens)
        write_price = rates.cache_write_per_mtok
        if write_price is None:
            write_price = rates.input_per_mtok
        plain = uncached_tokens - cache_write_tokens
        return (
            plain * rates.input_per_mtok
            + cache_write_tokens * write_price
            + cached_tokens * rates.cached_input_per_mtok
        ) / 1e6

    def rates_for(self, prompt_tokens: int | None) -> Pricing | LongContext:
        """The rates a request of ``prompt_tokens`` is billed at: this price's own, or
        its long-context tier's when the prompt passes the threshold."""
        tier = self.long_context
        if tier is not None and prompt_tokens is not None and prompt_tokens > tier.above:
            return tier
        return self

    def is_long(self, prompt_tokens: int) -> bool:
        """A request of ``prompt_tokens`` is billed at the long-context rates."""
        return self.long_context is not None and prompt_tokens > self.long_context.above


class PriceError(ValueError):
    """A price file or form that does not hold a valid price; the message names where
    and which field."""


@dataclass(frozen=True)
class PriceField:
    """One field of a price's JSON form (and of the app's price form)."""

    key: str
    """The JSON key."""
    attr: str
    """The :class:`Pricing` (or :class:`LongContext`) attribute it sets."""
    kind: str
    """``price``, ``optional-price``, ``tokens``, ``tokenizer``, ``framing`` or ``bool``."""
    help: str


PRICE_FIELDS: tuple[PriceField, ...] = (
    PriceField("input", "input_per_mtok", "price", "US dollars per million input tokens"),
    PriceField(
        "output", "output_per_mtok", "optional-price", "per million output tokens (shown only)"
    ),
    PriceField(
        "cache_read",
        "cached_input_per_mtok",
        "price",
        "per million tokens read from the prompt cache (default: the input price)",
    ),
    PriceField(
        "cache_write",
        "cache_write_per_mtok",
        "optional-price",
        "per million tokens written to the prompt cache (empty: billed as input)",
    ),
    PriceField(
        "min_cacheable_prefix",
        "min_cacheable_prefix",
        "tokens",
        "the shortest prompt the provider caches (default 1024)",
    ),
    PriceField(
        "prompt_cache", "prompt_cache", "bool", "the provider caches prompts (default true)"
    ),
    PriceField(
        "tokenizer",
        "tokenizer",
        "tokenizer",
        "cl100k_base or o200k_base (empty: each config's own counter, no framing)",
    ),
    PriceField("framing", "framing", "framing", "tokens the provider adds around messages"),
    PriceField(
        "estimate",
        "estimate",
        "bool",
        "the counts are estimates (the provider's tokenizer is not available offline)",
    ),
)
"""The fields of a price, in the order the docs and forms show them."""

LONG_CONTEXT_FIELDS: tuple[PriceField, ...] = (
    PriceField(
        "above",
        "above",
        "tokens",
        "a request whose prompt passes this many tokens takes the rates below",
    ),
    PriceField("input", "input_per_mtok", "price", "per million input tokens"),
    PriceField("output", "output_per_mtok", "optional-price", "per million output tokens"),
    PriceField(
        "cache_read",
        "cached_input_per_mtok",
        "price",
        "per million cache reads (default: the tier's input price)",
    ),
    PriceField(
        "cache_write",
        "cache_write_per_mtok",
        "optional-price",
        "per million cache writes (empty: billed as the tier's input)",
    ),
)
"""The fields of ``long_context``, a price's long-context tier."""


def _openai(name: str, price: float, cached: float | None, output: float) -> Pricing:
    """``cached=None``: no prompt caching (and the older cl100k_base tokenizer)."""
    return Pricing(
        name=name,
        input_per_mtok=price,
        cached_input_per_mtok=price if cached is None else cached,
        output_per_mtok=output,
        tokenizer="cl100k_base" if cached is None else "o200k_base",
        framing=OPENAI_CHAT_FRAMING,
        prompt_cache=cached is not None,
    )


def _anthropic(
    name: str,
    price: float,
    output: float,
    min_prefix: int,
    *,
    framing: Framing = ANTHROPIC_FRAMING,
    long: tuple[float, float] | None = None,
) -> Pricing:
    """Anthropic's documented minimum cacheable prompt and tool-use prompt per model;
    ``long``: the input and output prices of a prompt past 200k tokens (1M context),
    whose cache reads and writes keep their 0.1x and 1.25x."""
    tier = None
    if long is not None:
        tier = LongContext(
            above=200_000,
            input_per_mtok=long[0],
            cached_input_per_mtok=round(long[0] * 0.1, 6),
            cache_write_per_mtok=round(long[0] * 1.25, 6),
            output_per_mtok=long[1],
        )
    return Pricing(
        name=name,
        input_per_mtok=price,
        cached_input_per_mtok=round(price * 0.1, 6),
        cache_write_per_mtok=round(price * 1.25, 6),
        output_per_mtok=output,
        long_context=tier,
        tokenizer="cl100k_base",
        framing=framing,
        estimate=True,
        min_cacheable_prefix=min_prefix,
    )


def _gemini(
    name: str,
    prices: tuple[float, float, float],
    min_prefix: int,
    long: tuple[float, float, float] | None = None,
) -> Pricing:
    """``prices`` and ``long``: input, context-caching (a cache hit) and output prices,
    at most 200k prompt tokens and past them. Implicit caching bills no write."""
    tier = None
    if long is not None:
        tier = LongContext(
            above=200_000,
            input_per_mtok=long[0],
            cached_input_per_mtok=long[1],
            output_per_mtok=long[2],
        )
    return Pricing(
        name=name,
        input_per_mtok=prices[0],
        cached_input_per_mtok=prices[1],
        output_per_mtok=prices[2],
        long_context=tier,
        tokenizer="o200k_base",
        framing=GEMINI_FRAMING,
        estimate=True,
        min_cacheable_prefix=min_prefix,
    )


PRESETS: dict[str, Pricing] = {
    p.name: p
    for p in (
        _openai("gpt-4o", 2.50, 1.25, 10.00),
        _openai("gpt-4o-mini", 0.15, 0.075, 0.60),
        _openai("gpt-4.1", 2.00, 0.50, 8.00),
        _openai("gpt-4.1-mini", 0.40, 0.10, 1.60),
        _openai("o4-mini", 1.10, 0.275, 4.40),
        _openai("gpt-5", 1.25, 0.125, 10.00),
        _openai("gpt-5-mini", 0.25, 0.025, 2.00),
        _openai("gpt-4-turbo", 10.00, None, 30.00),
        _openai("gpt-4", 30.00, None, 60.00),
        # Opus 4.6 bills its 1M context at the standard rates.
        _anthropic("claude-opus-4.6", 5.00, 25.00, 4096),
        _anthropic("claude-opus-4.5", 5.00, 25.00, 4096),
        _anthropic("claude-sonnet-4.5", 3.00, 15.00, 1024, long=(6.00, 22.50)),
        _anthropic("claude-sonnet-4", 3.00, 15.00, 1024, long=(6.00, 22.50)),
        _anthropic("claude-haiku-4.5", 1.00, 5.00, 4096),
        _anthropic("claude-haiku-3.5", 0.80, 4.00, 2048, framing=ANTHROPIC_35_FRAMING),
        _gemini("gemini-3-pro", (2.00, 0.20, 12.00), 4096, long=(4.00, 0.40, 18.00)),
        _gemini("gemini-2.5-pro", (1.25, 0.125, 10.00), 4096, long=(2.50, 0.25, 15.00)),
        _gemini("gemini-2.5-flash", (0.30, 0.03, 2.50), 1024),
    )
}
DEFAULT_PRICING_NAME = "gpt-4o"
"""The price preset when none is named: every default of the simulator, the pages and
the API."""
DEFAULT_PRICING = PRESETS[DEFAULT_PRICING_NAME]


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
