"""Price tables and what tokens cost."""

from __future__ import annotations

import pytest

from simulator.pricing import (
    ANTHROPIC_FRAMING,
    DEFAULT_PRICING,
    GEMINI_FRAMING,
    NO_FRAMING,
    OPENAI_CHAT_FRAMING,
    PRESETS,
    PRICES_AS_OF,
    LongContext,
    Pricing,
    engine_measure,
    pricing_for,
)
from tests.conftest import REPO


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
        "claude-opus-4.6",
        "claude-sonnet-4",
        "claude-sonnet-4.5",
        "gemini-2.5-flash",
        "gemini-2.5-pro",
        "gemini-3-pro",
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
    assert PRICES_AS_OF == "2026-12-06"
    assert DEFAULT_PRICING is PRESETS["gpt-4o"]
    assert (DEFAULT_PRICING.input_per_mtok, DEFAULT_PRICING.cached_input_per_mtok) == (2.5, 1.25)
    assert all(p.cached_input_per_mtok <= p.input_per_mtok for p in PRESETS.values())
    assert all(p.output_per_mtok is not None for p in PRESETS.values())
    assert all(name == p.name for name, p in PRESETS.items())
    claude = [p for name, p in PRESETS.items() if name.startswith("claude")]
    assert all(p.estimate and p.framing.name.startswith("anthropic") for p in claude)
    assert {p.name: p.min_cacheable_prefix for p in claude} == {
        "claude-opus-4.6": 4096,
        "claude-opus-4.5": 4096,
        "claude-sonnet-4.5": 1024,
        "claude-sonnet-4": 1024,
        "claude-haiku-4.5": 4096,
        "claude-haiku-3.5": 2048,
    }
    assert PRESETS["claude-haiku-3.5"].framing.tools_prompt == 264
    assert PRESETS["claude-sonnet-4.5"].framing is ANTHROPIC_FRAMING
    assert all(p.cache_write_per_mtok == pytest.approx(1.25 * p.input_per_mtok) for p in claude)
    assert all(p.cached_input_per_mtok == pytest.approx(0.1 * p.input_per_mtok) for p in claude)
    openai = [p for p in PRESETS.values() if p.framing.name == "openai-chat"]
    assert len(openai) == 9
    assert all(not p.estimate and p.cache_write_per_mtok is None for p in openai)
    assert all(p.framing is OPENAI_CHAT_FRAMING for p in openai)
    assert {p.name: p.tokenizer for p in openai if p.tokenizer != "o200k_base"} == {
        "gpt-4": "cl100k_base",
        "gpt-4-turbo": "cl100k_base",
    }
    assert [p.name for p in PRESETS.values() if not p.prompt_cache] == ["gpt-4-turbo", "gpt-4"]
    assert all(p.min_cacheable_prefix == 1024 for p in openai)
    gemini = [p for name, p in PRESETS.items() if name.startswith("gemini")]
    assert all(p.framing is GEMINI_FRAMING and p.estimate for p in gemini)
    assert all(p.tokenizer == "o200k_base" and p.cache_write_per_mtok is None for p in gemini)
    assert {p.name: p.min_cacheable_prefix for p in gemini} == {
        "gemini-3-pro": 4096,
        "gemini-2.5-pro": 4096,
        "gemini-2.5-flash": 1024,
    }


def test_pricing_long_context_tiers() -> None:
    """Gemini 2.5 Pro and 3 Pro, Claude Sonnet 4 and 4.5 (1M context) bill a prompt past
    200k tokens at higher rates; Claude's cache prices stay 0.1x and 1.25x the input."""
    tiers = {name: p.long_context for name, p in PRESETS.items() if p.long_context}
    assert tiers == {
        "claude-sonnet-4.5": LongContext(
            above=200_000,
            input_per_mtok=6.0,
            cached_input_per_mtok=0.6,
            cache_write_per_mtok=7.5,
            output_per_mtok=22.5,
        ),
        "claude-sonnet-4": tiers["claude-sonnet-4.5"],
        "gemini-3-pro": LongContext(
            above=200_000, input_per_mtok=4.0, cached_input_per_mtok=0.4, output_per_mtok=18.0
        ),
        "gemini-2.5-pro": LongContext(
            above=200_000, input_per_mtok=2.5, cached_input_per_mtok=0.25, output_per_mtok=15.0
        ),
    }


def test_pricing_cost_takes_the_tier_of_the_prompt() -> None:
    """A 200,000-token prompt is at the base rates, 200,001 at the tier's, every token."""
    gemini = pricing_for("gemini-2.5-pro")
    at = gemini.cost(uncached_tokens=100_000, cached_tokens=100_000, prompt_tokens=200_000)
    past = gemini.cost(uncached_tokens=100_001, cached_tokens=100_000, prompt_tokens=200_001)
    assert at == pytest.approx(100_000 * 1.25 / 1e6 + 100_000 * 0.125 / 1e6)
    assert past == pytest.approx(100_001 * 2.5 / 1e6 + 100_000 * 0.25 / 1e6)
    sonnet = pricing_for("claude-sonnet-4.5")
    cost = sonnet.cost(
        uncached_tokens=250_000, cached_tokens=0, cache_write_tokens=250_000, prompt_tokens=250_000
    )
    assert cost == pytest.approx(250_000 * 7.5 / 1e6)
    # Without prompt_tokens, tokens are priced at the base rates.
    assert gemini.cost(uncached_tokens=300_000, cached_tokens=0) == pytest.approx(0.375)


def test_pricing_for_known_and_unknown() -> None:
    assert pricing_for("claude-sonnet-4").input_per_mtok == 3.0
    with pytest.raises(ValueError) as info:
        pricing_for("gpt-9")
    assert str(info.value).startswith("unknown price preset 'gpt-9'; known: ['claude-haiku-3.5',")


def test_engine_measure_keeps_prices_and_drops_the_provider_measure() -> None:
    engine = engine_measure(PRESETS["claude-sonnet-4.5"])
    assert (engine.input_per_mtok, engine.cache_write_per_mtok) == (3.0, 3.75)
    assert (engine.tokenizer, engine.framing, engine.estimate) == (None, NO_FRAMING, False)


def _money(value: float | None, *, none: str) -> str:
    if value is None:
        return none
    text = f"{value:.4f}".rstrip("0")
    return text + "0" * max(0, 2 - len(text.split(".")[1]))


def _preset_rows() -> list[str]:
    rows = []
    for p in PRESETS.values():
        cached = _money(p.cached_input_per_mtok, none="") if p.prompt_cache else "no cache"
        write = _money(p.cache_write_per_mtok, none="= input") if p.prompt_cache else "-"
        cached_from = f"{p.min_cacheable_prefix:,}" if p.prompt_cache else "-"
        counts = "**estimate**" if p.estimate else "exact up to framing"
        rows.append(
            f"| {p.name} | {_money(p.input_per_mtok, none='')} | {cached} | {write} "
            f"| {_money(p.output_per_mtok, none='-')} | {cached_from} | {p.tokenizer} "
            f"| {p.framing.name} | {counts} |"
        )
    return rows


def _tier_rows() -> list[str]:
    return [
        f"| {p.name} | {t.above:,} | {_money(t.input_per_mtok, none='')} "
        f"| {_money(t.cached_input_per_mtok, none='')} "
        f"| {_money(t.cache_write_per_mtok, none='= input')} "
        f"| {_money(t.output_per_mtok, none='-')} |"
        for p in PRESETS.values()
        if (t := p.long_context) is not None
    ]


def test_simulator_page_lists_every_preset_as_the_code_holds_it() -> None:
    """docs/simulator.md's preset and long-context tables are the presets, row by row,
    and its date is :data:`PRICES_AS_OF`."""
    page = (REPO / "docs" / "simulator.md").read_text(encoding="utf-8")
    assert "\n".join(_preset_rows()) in page
    assert "\n".join(_tier_rows()) in page
    assert f"list prices read on {PRICES_AS_OF}" in page
