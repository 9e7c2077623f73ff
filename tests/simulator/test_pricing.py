"""Price tables and what tokens cost."""

from __future__ import annotations

import pytest

from simulator.pricing import DEFAULT_PRICING, PRESETS, Pricing, pricing_for


def test_pricing_cost_per_million_tokens() -> None:
    pricing = Pricing(input_per_mtok=2.50, cached_input_per_mtok=1.25)
    # 1M uncached at $2.50 plus 2M cached at $1.25
    assert pricing.cost(uncached_tokens=1_000_000, cached_tokens=2_000_000) == 5.0
    assert pricing.cost(uncached_tokens=0, cached_tokens=0) == 0.0
    assert pricing.cost(uncached_tokens=652, cached_tokens=140) == pytest.approx(0.001805)


def test_pricing_presets() -> None:
    assert sorted(PRESETS) == [
        "claude-haiku-3.5",
        "claude-sonnet-4",
        "gpt-4.1",
        "gpt-4o",
        "gpt-4o-mini",
    ]
    assert DEFAULT_PRICING is PRESETS["gpt-4o"]
    assert (DEFAULT_PRICING.input_per_mtok, DEFAULT_PRICING.cached_input_per_mtok) == (2.5, 1.25)
    assert all(p.cached_input_per_mtok < p.input_per_mtok for p in PRESETS.values())
    assert all(name == p.name for name, p in PRESETS.items())


def test_pricing_for_known_and_unknown() -> None:
    assert pricing_for("claude-sonnet-4") == Pricing(
        name="claude-sonnet-4", input_per_mtok=3.0, cached_input_per_mtok=0.3
    )
    with pytest.raises(ValueError) as info:
        pricing_for("gpt-9")
    assert str(info.value) == (
        "unknown price preset 'gpt-9'; known: "
        "['claude-haiku-3.5', 'claude-sonnet-4', 'gpt-4.1', 'gpt-4o', 'gpt-4o-mini']"
    )
