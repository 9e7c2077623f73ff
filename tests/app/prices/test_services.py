"""A workspace's own prices: writes through the simulator's parser, the resolver every
picker and simulation uses, and what a simulation keeps of the price it ran with."""

from __future__ import annotations

import pytest

from reduction_app.errors import ServiceError
from reduction_app.models import Workspace, WorkspacePrice
from reduction_app.prices.selectors import (
    UnknownPricing,
    pricing_choices,
    pricing_for,
    pricing_options,
    stored_pricing,
)
from reduction_app.prices.services import price_create, price_delete, price_update
from reduction_app.workspaces.services import workspace_get_or_create
from simulator.price_file import pricing_from_json, pricing_to_json
from simulator.pricing import PRESETS, PriceError

pytestmark = pytest.mark.django_db

OURS = {"name": "ours", "input": 1.5, "cache_read": 0.15, "tokenizer": "o200k_base"}


@pytest.fixture
def two() -> tuple[Workspace, Workspace]:
    return workspace_get_or_create(name="Alpha"), workspace_get_or_create(name="Beta")


def test_price_create_stores_the_full_json_form(two: tuple[Workspace, Workspace]) -> None:
    alpha, _ = two
    price = price_create(workspace=alpha, data=OURS)
    assert price.name == "ours"
    assert price.data == pricing_to_json(pricing_from_json(OURS, where="x"))
    assert price.data["cache_write"] is None and price.data["framing"] == "none"


def test_price_create_refuses_what_the_parser_refuses(two: tuple[Workspace, Workspace]) -> None:
    alpha, _ = two
    with pytest.raises(PriceError) as info:
        price_create(workspace=alpha, data={**OURS, "input": "x"})
    assert str(info.value) == 'price: input: must be a non-negative number, got "x"'
    with pytest.raises(ServiceError) as taken:
        price_create(workspace=alpha, data={**OURS, "name": "gpt-4o"})
    assert str(taken.value) == "'gpt-4o' is a built-in preset; give your price another name"
    price_create(workspace=alpha, data=OURS)
    with pytest.raises(ServiceError) as twice:
        price_create(workspace=alpha, data=OURS)
    assert str(twice.value) == "a price named 'ours' already exists"
    assert WorkspacePrice.objects.count() == 1


def test_names_are_unique_per_workspace_only(two: tuple[Workspace, Workspace]) -> None:
    alpha, beta = two
    price_create(workspace=alpha, data=OURS)
    price_create(workspace=beta, data={**OURS, "input": 9})
    assert pricing_for(workspace=alpha, name="ours").input_per_mtok == 1.5
    assert pricing_for(workspace=beta, name="ours").input_per_mtok == 9.0


def test_pricing_for_resolves_presets_and_only_the_workspaces_own(
    two: tuple[Workspace, Workspace],
) -> None:
    alpha, beta = two
    price_create(workspace=alpha, data=OURS)
    assert pricing_for(workspace=beta, name="gpt-4o") is PRESETS["gpt-4o"]
    assert pricing_for(workspace=alpha, name="ours") == pricing_from_json(OURS, where="x")
    with pytest.raises(UnknownPricing) as info:
        pricing_for(workspace=beta, name="ours")
    assert str(info.value).startswith("unknown price 'ours'; known: gpt-4o, ")
    assert pricing_choices(workspace=alpha) == [*PRESETS, "ours"]
    assert pricing_choices(workspace=beta) == list(PRESETS)


def test_a_simulation_keeps_the_values_it_ran_with(two: tuple[Workspace, Workspace]) -> None:
    """The options store the price's values: edits and deletes later change nothing."""
    alpha, _ = two
    price = price_create(workspace=alpha, data=OURS)
    options = pricing_options(workspace=alpha, name="ours")
    assert options == {"pricing": "ours", "price": price.data}
    price_update(price=price, data={**OURS, "input": 7})
    assert stored_pricing(options).input_per_mtok == 1.5
    assert pricing_for(workspace=alpha, name="ours").input_per_mtok == 7.0
    price_delete(price=price)
    assert stored_pricing(options).input_per_mtok == 1.5
    # A preset is stored by name, as before.
    assert pricing_options(workspace=alpha, name="gemini-3-pro") == {"pricing": "gemini-3-pro"}
    assert stored_pricing({"pricing": "gemini-3-pro"}) is PRESETS["gemini-3-pro"]
    assert stored_pricing({}) is PRESETS["gpt-4o"]


def test_price_update_renames_unless_taken(two: tuple[Workspace, Workspace]) -> None:
    alpha, _ = two
    first = price_create(workspace=alpha, data=OURS)
    price_create(workspace=alpha, data={**OURS, "name": "theirs"})
    with pytest.raises(ServiceError):
        price_update(price=first, data={**OURS, "name": "theirs"})
    price_update(price=first, data={**OURS, "name": "renamed"})
    first.refresh_from_db()
    assert (first.name, first.data["name"]) == ("renamed", "renamed")
