"""Reads of a workspace's own prices, and the one resolver every "Prices of" picker,
simulation and API operation uses: a name is a built-in preset
(``simulator.pricing.PRESETS``) or one of the workspace's prices.

A simulation stores what it ran with (:func:`pricing_options`): the name, and for a
workspace price its values too, which :func:`stored_pricing` reads back, so a price
edited or deleted later changes no stored simulation and no part still to run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import QuerySet

from reduction_app.models import Workspace, WorkspacePrice
from simulator.price_file import pricing_from_json, pricing_to_json
from simulator.pricing import DEFAULT_PRICING, PRESETS, PriceError, Pricing

__all__ = [
    "UnknownPricing",
    "price_get",
    "price_list",
    "pricing_choices",
    "pricing_for",
    "pricing_options",
    "stored_pricing",
]


class UnknownPricing(ValueError):
    """A name that is neither a preset nor one of the workspace's prices."""


def price_list(*, workspace: Workspace) -> QuerySet[WorkspacePrice]:
    return WorkspacePrice.objects.filter(workspace=workspace).order_by("name")


def price_get(*, workspace: Workspace, price_id: int) -> WorkspacePrice | None:
    return WorkspacePrice.objects.filter(workspace=workspace, pk=price_id).first()


def pricing_choices(*, workspace: Workspace) -> list[str]:
    """What a "Prices of" picker offers: the presets, then the workspace's own."""
    own = price_list(workspace=workspace).values_list("name", flat=True)
    return [*PRESETS, *own]


def _own(workspace: Workspace, name: str) -> Pricing | None:
    price = WorkspacePrice.objects.filter(workspace=workspace, name=name).first()
    if price is None:
        return None
    return pricing_from_json(price.data, where=f"price {name!r}")


def pricing_for(*, workspace: Workspace, name: str) -> Pricing:
    """The price ``name`` names for ``workspace``: a preset, or one of its own prices
    (raises :class:`UnknownPricing`)."""
    if name in PRESETS:
        return PRESETS[name]
    own = _own(workspace, name)
    if own is None:
        names = ", ".join(pricing_choices(workspace=workspace))
        raise UnknownPricing(f"unknown price {name!r}; known: {names}")
    return own


def pricing_options(*, workspace: Workspace, name: str) -> dict[str, Any]:
    """What a simulation stores of the price it runs with (raises
    :class:`UnknownPricing`): ``pricing`` (the name), and ``price`` (its values) when
    the name is a workspace price."""
    pricing = pricing_for(workspace=workspace, name=name)
    if name in PRESETS:
        return {"pricing": name}
    return {"pricing": name, "price": pricing_to_json(pricing)}


def stored_pricing(options: Mapping[str, Any]) -> Pricing:
    """The price a simulation ran (or runs) with, from its stored ``options``."""
    price = options.get("price")
    if price is not None:
        try:
            return pricing_from_json(price, where="the simulation's price")
        except PriceError as exc:  # stored by pricing_options, so read back whole
            raise ValueError(str(exc)) from exc
    return PRESETS.get(options.get("pricing", DEFAULT_PRICING.name), DEFAULT_PRICING)
