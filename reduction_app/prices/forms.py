"""The price form of the dashboard: one form field per field of the price file
(``simulator.pricing.PRICE_FIELDS`` and ``LONG_CONTEXT_FIELDS``), validated by the
simulator's own parser, whose error names the field."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django import forms

from simulator.price_file import pricing_from_json, pricing_to_json
from simulator.pricing import (
    FRAMINGS,
    LONG_CONTEXT_FIELDS,
    PRICE_FIELDS,
    TOKENIZERS,
    PriceError,
    PriceField,
)

__all__ = ["LONG_PREFIX", "PriceForm", "initial_from_data"]

LONG_PREFIX = "long_context_"
"""Form names of the long-context fields: ``long_context_input`` for ``long_context.input``."""
OWN_COUNTER = "each config's own counter, no framing"


def _field(spec: PriceField, *, required: bool) -> forms.Field:
    if spec.kind in ("price", "optional-price"):
        return forms.FloatField(required=required, min_value=0, help_text=spec.help)
    if spec.kind == "tokens":
        return forms.IntegerField(required=False, min_value=0, help_text=spec.help)
    if spec.kind == "bool":
        return forms.BooleanField(required=False, help_text=spec.help)
    if spec.kind == "tokenizer":
        choices = [("", OWN_COUNTER), *((t, t) for t in TOKENIZERS)]
        return forms.ChoiceField(choices=choices, required=False, help_text=spec.help)
    return forms.ChoiceField(choices=[(n, n) for n in FRAMINGS], help_text=spec.help)


class PriceForm(forms.Form):
    """Name, the price fields and the long-context tier (left empty: none)."""

    name = forms.CharField(max_length=64)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for spec in PRICE_FIELDS:
            self.fields[spec.key] = _field(spec, required=spec.key == "input")
        for spec in LONG_CONTEXT_FIELDS:
            self.fields[LONG_PREFIX + spec.key] = _field(spec, required=False)
        self.price_data: dict[str, Any] = {}

    def price_fields(self) -> Iterator[forms.BoundField]:
        for spec in PRICE_FIELDS:
            yield self[spec.key]

    def long_context_fields(self) -> Iterator[forms.BoundField]:
        for spec in LONG_CONTEXT_FIELDS:
            yield self[LONG_PREFIX + spec.key]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        data: dict[str, Any] = {"name": cleaned["name"]}
        for spec in PRICE_FIELDS:
            value = cleaned.get(spec.key)
            if spec.kind == "tokenizer":
                data[spec.key] = value or None
            elif value is not None:
                data[spec.key] = value
        tier = {
            spec.key: cleaned[LONG_PREFIX + spec.key]
            for spec in LONG_CONTEXT_FIELDS
            if cleaned.get(LONG_PREFIX + spec.key) is not None
        }
        data["long_context"] = tier or None
        try:
            self.price_data = pricing_to_json(pricing_from_json(data, where="price"))
        except PriceError as exc:
            self.add_error(None, str(exc))
        return cleaned


def initial_from_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """A stored price (its JSON form) as the form's initial values."""
    initial: dict[str, Any] = {"name": data.get("name", "")}
    for spec in PRICE_FIELDS:
        value = data.get(spec.key)
        initial[spec.key] = "" if value is None else value
    for spec in LONG_CONTEXT_FIELDS:
        value = (data.get("long_context") or {}).get(spec.key)
        initial[LONG_PREFIX + spec.key] = "" if value is None else value
    return initial
