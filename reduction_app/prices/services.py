"""Writes of a workspace's own prices: every one is read by the simulator's parser
(``simulator.price_file.pricing_from_json``) first and stored in full as its JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from reduction_app.errors import ServiceError
from reduction_app.models import Workspace, WorkspacePrice
from simulator.price_file import pricing_from_json, pricing_to_json
from simulator.pricing import PRESETS

__all__ = ["price_create", "price_delete", "price_update"]


def _validated(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` read as a price (``PriceError`` names the field) and written out in full."""
    pricing = pricing_from_json(dict(data), where="price")
    if pricing.name in PRESETS:
        raise ServiceError(f"{pricing.name!r} is a built-in preset; give your price another name")
    return pricing_to_json(pricing)


def _check_free(workspace: Workspace, name: str, *, but: int | None = None) -> None:
    taken = WorkspacePrice.objects.filter(workspace=workspace, name=name)
    if but is not None:
        taken = taken.exclude(pk=but)
    if taken.exists():
        raise ServiceError(f"a price named {name!r} already exists")


@transaction.atomic
def price_create(*, workspace: Workspace, data: Mapping[str, Any]) -> WorkspacePrice:
    validated = _validated(data)
    _check_free(workspace, validated["name"])
    return WorkspacePrice.objects.create(
        workspace=workspace, name=validated["name"], data=validated
    )


@transaction.atomic
def price_update(*, price: WorkspacePrice, data: Mapping[str, Any]) -> WorkspacePrice:
    """New values for ``price``; simulations that ran with the old ones keep them."""
    validated = _validated(data)
    _check_free(price.workspace, validated["name"], but=price.pk)
    price.name = validated["name"]
    price.data = validated
    price.save(update_fields=["name", "data", "updated_at"])
    return price


def price_delete(*, price: WorkspacePrice) -> None:
    """Remove ``price``; simulations that ran with it keep its values."""
    price.delete()
