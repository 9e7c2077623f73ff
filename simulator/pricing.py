"""What input tokens cost: a price table per model, in US dollars per million tokens.

The presets are providers' published list prices for input and cached input (prompt
cache reads) at the time of writing; pass your own :class:`Pricing` for anything else.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULT_PRICING", "PRESETS", "Pricing", "pricing_for"]


@dataclass(frozen=True, kw_only=True)
class Pricing:
    """Prices per million input tokens: uncached, and served from a prompt cache."""

    name: str = "custom"
    input_per_mtok: float
    cached_input_per_mtok: float

    def cost(self, *, uncached_tokens: int, cached_tokens: int) -> float:
        return (
            uncached_tokens * self.input_per_mtok + cached_tokens * self.cached_input_per_mtok
        ) / 1e6


PRESETS: dict[str, Pricing] = {
    p.name: p
    for p in (
        Pricing(name="gpt-4o", input_per_mtok=2.50, cached_input_per_mtok=1.25),
        Pricing(name="gpt-4o-mini", input_per_mtok=0.15, cached_input_per_mtok=0.075),
        Pricing(name="gpt-4.1", input_per_mtok=2.00, cached_input_per_mtok=0.50),
        Pricing(name="claude-sonnet-4", input_per_mtok=3.00, cached_input_per_mtok=0.30),
        Pricing(name="claude-haiku-3.5", input_per_mtok=0.80, cached_input_per_mtok=0.08),
    )
}
DEFAULT_PRICING = PRESETS["gpt-4o"]


def pricing_for(name: str) -> Pricing:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown price preset {name!r}; known: {sorted(PRESETS)}") from None
