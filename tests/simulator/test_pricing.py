"""Price tables and what tokens cost."""

from __future__ import annotations

import pytest

from simulator.pricing import (
    ANTHROPIC_FRAMING,
    DEFAULT_PRICING,
    NO_FRAMING,
    OPENAI_CHAT_FRAMING,
    PRESETS,
    PRICES_AS_OF,
    Pricing,
    engine_measure,
    pricing_for,
)


def test_pricing_cost_per_million_tokens() -> None:
    pricing = Pricing(input_per_mtok=2.50, cached_input_per_mtok=1.25)
    # 1M uncached at $2.50 plus 2M cached at $1.25
    assert pricing.cost(uncached_tokens=1_000_000, cached_tokens=2_000_000) == 5.0
    assert pricing.cost(uncached_tokens=0, cached_tokens=0) == 0.0
    assert pricing.cost(uncached_tokens=652, cached_tokens=140) == pytest.approx(0.001805)


def test_pricing_cache_writes_cost_their_own_price() -> None:
    """Anthropic: 1M tokens of which 400k written to the cache at 1.25x, 2M read at 0.1x."""
    sonnet = pricing_for("claude-sonnet-4.5")
    assert (sonnet.input_per_mtok, sonnet.cache_write_per_mtok, sonnet.cached_input_per_mtok) == (
        3.0,
        3.75,
        0.3,
    )
    cost = sonnet.cost(
        uncached_tokens=1_000_000, cached_tokens=2_000_000, cache_write_tokens=400_000
    )
    assert cost == pytest.approx(600_000 * 3.0 / 1e6 + 400_000 * 3.75 / 1e6 + 2_000_000 * 0.3 / 1e6)
    # Without a write price (OpenAI), writes cost what any input does.
    gpt = pricing_for("gpt-4o")
    assert gpt.cost(uncached_tokens=100, cached_tokens=0, cache_write_tokens=100) == gpt.cost(
        uncached_tokens=100, cached_tokens=0
    )


def test_pricing_presets() -> None:
    assert sorted(PRESETS) == [
        "claude-haiku-3.5",
        "claude-haiku-4.5",
        "claude-opus-4.5",
        "claude-sonnet-4",
        "claude-sonnet-4.5",
        "gpt-4",
        "gpt-4-turbo",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-5",
        "gpt-5-mini",
        "o4-mini",
    ]
    assert PRICES_AS_OF == "2025-11-24"
    assert DEFAULT_PRICING is PRESETS["gpt-4o"]
    assert (DEFAULT_PRICING.input_per_mtok, DEFAULT_PRICING.cached_input_per_mtok) == (2.5, 1.25)
    assert all(p.cached_input_per_mtok <= p.input_per_mtok for p in PRESETS.values())
    assert all(name == p.name for name, p in PRESETS.items())
    claude = [p for name, p in PRESETS.items() if name.startswith("claude")]
    assert all(p.estimate and p.framing.name == ANTHROPIC_FRAMING.name for p in claude)
    assert {p.name: p.min_cacheable_prefix for p in claude} == {
        "claude-opus-4.5": 4096,
        "claude-sonnet-4.5": 1024,
        "claude-sonnet-4": 1024,
        "claude-haiku-4.5": 4096,
        "claude-haiku-3.5": 2048,
    }
    assert PRESETS["claude-haiku-3.5"].framing.tools_prompt == 264
    assert PRESETS["claude-sonnet-4.5"].framing.tools_prompt == 346
    assert all(p.cache_write_per_mtok == pytest.approx(1.25 * p.input_per_mtok) for p in claude)
    assert all(p.cached_input_per_mtok == pytest.approx(0.1 * p.input_per_mtok) for p in claude)
    openai = [p for name, p in PRESETS.items() if not name.startswith("claude")]
    assert all(not p.estimate and p.cache_write_per_mtok is None for p in openai)
    assert all(p.framing is OPENAI_CHAT_FRAMING for p in openai)
    assert {p.name: p.tokenizer for p in openai if p.tokenizer != "o200k_base"} == {
        "gpt-4": "cl100k_base",
        "gpt-4-turbo": "cl100k_base",
    }
    assert [p.name for p in PRESETS.values() if not p.prompt_cache] == ["gpt-4-turbo", "gpt-4"]
    assert all(p.min_cacheable_prefix == 1024 for p in openai)


def test_pricing_for_known_and_unknown() -> None:
    assert pricing_for("claude-sonnet-4").input_per_mtok == 3.0
    with pytest.raises(ValueError) as info:
        pricing_for("gpt-9")
    assert str(info.value).startswith("unknown price preset 'gpt-9'; known: ['claude-haiku-3.5',")


def test_engine_measure_keeps_prices_and_drops_the_provider_measure() -> None:
    engine = engine_measure(PRESETS["claude-sonnet-4.5"])
    assert (engine.input_per_mtok, engine.cache_write_per_mtok) == (3.0, 3.75)
    assert (engine.tokenizer, engine.framing, engine.estimate) == (None, NO_FRAMING, False)
