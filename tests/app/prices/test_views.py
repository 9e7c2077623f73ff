"""The Prices pages: list, add, edit and delete a workspace's own prices through the
simulator's parser; isolation, escaping; and the "Prices of" pickers that run with them."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from reduction_app.configs.services import config_create
from reduction_app.conversations import selectors as conversation_selectors
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.models import Simulation, WorkspacePrice
from reduction_app.prices.forms import PriceForm
from reduction_app.prices.services import price_create, price_update
from reduction_app.simulations import services
from simulator.compare import compare
from simulator.price_file import pricing_from_json, pricing_to_json
from simulator.pricing import LONG_CONTEXT_FIELDS, PRESETS, PRICE_FIELDS, Pricing
from tests.app.pages_support import (
    elements,
    html,
    member_client,
    parsed,
    record_conversation,
    text,
)
from tests.app.support import make_api

pytestmark = pytest.mark.django_db

OURS = {"name": "ours", "input": 1.5, "cache_read": 0.15, "tokenizer": "o200k_base",
        "framing": "openai-chat"}  # fmt: skip


def _form(**changes: Any) -> dict[str, Any]:
    """The new-price form as a person fills it, with ``changes``."""
    data: dict[str, Any] = {
        "name": "mine",
        "input": "2",
        "output": "8",
        "cache_read": "0.5",
        "cache_write": "",
        "min_cacheable_prefix": "1024",
        "prompt_cache": "on",
        "tokenizer": "o200k_base",
        "framing": "openai-chat",
        "estimate": "",
        "long_context_above": "",
        "long_context_input": "",
        "long_context_output": "",
        "long_context_cache_read": "",
        "long_context_cache_write": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v != ""}


def test_price_form_fields_are_the_price_file_fields() -> None:
    names = [b.name for b in PriceForm().price_fields()]
    assert names == [f.key for f in PRICE_FIELDS]
    tier = [b.name for b in PriceForm().long_context_fields()]
    assert tier == [f"long_context_{f.key}" for f in LONG_CONTEXT_FIELDS]


def test_price_list_shows_presets_and_the_workspaces_own() -> None:
    client, ws = member_client()
    empty = html(client.get("/prices/"))
    assert "No prices of your own yet." in empty
    price_create(workspace=ws, data=OURS)
    page = parsed(client.get("/prices/"))
    (own,) = elements(page, "section", id="own-prices")
    (row,) = elements(own, "tbody")[0].children
    cells = [text(td) for td in elements(row, "td")]
    assert cells[:3] == ["ours", "1.5", "-"]
    (presets,) = elements(page, "section", id="presets")
    names = [text(elements(tr, "td")[0]) for tr in elements(presets, "tr")[1:]]
    assert names == list(PRESETS)
    gemini = next(tr for tr in elements(presets, "tr") if text(tr).startswith("gemini-2.5-pro"))
    assert "past 200,000: input 2.5, output 15.0, cache_read 0.25, cache_write -" in text(gemini)


def test_price_new_creates_through_the_parser() -> None:
    client, ws = member_client()
    response = client.post("/prices/new/", _form())
    assert (response.status_code, response["Location"]) == (HTTPStatus.FOUND, "/prices/")
    price = WorkspacePrice.objects.get(workspace=ws)
    assert pricing_from_json(price.data, where="x") == Pricing(
        name="mine",
        input_per_mtok=2.0,
        output_per_mtok=8.0,
        cached_input_per_mtok=0.5,
        tokenizer="o200k_base",
        framing=PRESETS["gpt-4o"].framing,
    )


def test_price_new_with_a_tier_and_the_parsers_errors() -> None:
    client, ws = member_client()
    tier = _form(long_context_above="100000", long_context_input="4")
    assert client.post("/prices/new/", tier).status_code == HTTPStatus.FOUND
    stored = WorkspacePrice.objects.get(workspace=ws).data["long_context"]
    assert stored == {"above": 100_000, "input": 4.0, "output": None, "cache_read": 4.0,
                      "cache_write": None}  # fmt: skip
    bad = client.post("/prices/new/", _form(name="b", long_context_above="10"))
    assert bad.status_code == HTTPStatus.OK
    (alert,) = elements(parsed(bad), "div", role="alert")
    assert text(alert) == "price: long_context: input: required"
    framing = client.post("/prices/new/", _form(name="c", tokenizer=""))
    (alert,) = elements(parsed(framing), "div", role="alert")
    assert text(alert).startswith("price: framing: 'openai-chat' needs a tokenizer")
    preset = client.post("/prices/new/", _form(name="gpt-4o"))
    (error,) = elements(parsed(preset), "p", id="error-name")
    assert text(error) == "'gpt-4o' is a built-in preset; give your price another name"
    assert WorkspacePrice.objects.count() == 1


def test_price_new_starts_from_a_preset() -> None:
    client, _ = member_client()
    page = parsed(client.get("/prices/new/?base=gemini-3-pro"))
    (name,) = elements(page, "input", name="name")
    (above,) = elements(page, "input", name="long_context_above")
    (framing,) = elements(page, "select", name="framing")
    (chosen,) = [o for o in elements(framing, "option") if "selected" in dict(o.attributes)]
    assert dict(name.attributes)["value"] == "gemini-3-pro-mine"
    assert dict(above.attributes)["value"] == "200000"
    assert text(chosen) == "gemini"


def test_price_edit_and_delete() -> None:
    client, ws = member_client()
    price = price_create(workspace=ws, data=OURS)
    page = parsed(client.get(f"/prices/{price.pk}/edit/"))
    (field,) = elements(page, "input", name="input")
    assert dict(field.attributes)["value"] == "1.5"
    changed = client.post(f"/prices/{price.pk}/edit/", _form(name="ours", input="3"))
    assert changed.status_code == HTTPStatus.FOUND
    price.refresh_from_db()
    assert price.data["input"] == 3.0
    assert "Delete ours?" in html(client.get(f"/prices/{price.pk}/delete/"))
    assert client.post(f"/prices/{price.pk}/delete/").status_code == HTTPStatus.FOUND
    assert not WorkspacePrice.objects.exists()


def test_prices_of_another_workspace_are_not_found() -> None:
    client, _ = member_client()
    _, other = member_client("bob", "Other")
    theirs = price_create(workspace=other, data=OURS)
    for url in (f"/prices/{theirs.pk}/edit/", f"/prices/{theirs.pk}/delete/"):
        assert client.get(url).status_code == HTTPStatus.NOT_FOUND
        assert client.post(url, _form()).status_code == HTTPStatus.NOT_FOUND
    assert "ours" not in [text(o) for o in elements(parsed(client.get("/prices/")), "a")]
    assert WorkspacePrice.objects.get() == theirs


def test_price_names_are_escaped() -> None:
    client, ws = member_client()
    price_create(workspace=ws, data={**OURS, "name": "<script>alert(1)</script>"})
    response = client.get("/prices/")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html(response)
    assert not [s for s in elements(parsed(response), "script") if "alert(1)" in text(s)]


def _picker(page: Any, name: str = "pricing") -> list[str]:
    (select,) = elements(page, "select", name=name)
    return [text(o) for o in elements(select, "option")]


def test_every_picker_offers_the_workspaces_prices() -> None:
    client, ws = member_client()
    price_create(workspace=ws, data=OURS)
    conversation = record_conversation(ws)
    for url in ("/compare/", f"/tune/?conversation={conversation.pk}", "/sweep/"):
        assert _picker(parsed(client.get(url))) == [*PRESETS, "ours"], url
    other, _ = member_client("bob", "Other")
    assert _picker(parsed(other.get("/compare/"))) == list(PRESETS)


@pytest.fixture
def priced() -> tuple[Client, Any, int]:
    client, ws = member_client()
    price_create(workspace=ws, data=OURS)
    conversation = record_conversation(ws)
    pk = config_create(workspace=ws, name="tight", data={"max_tokens_for_clear": 8000}).profile.pk
    return client, conversation, pk


def test_compare_runs_with_a_workspace_price(priced: tuple[Client, Any, int]) -> None:
    client, conversation, pk = priced
    page = html(client.get(f"/compare/?conversation={conversation.pk}&config={pk}&pricing=ours"))
    assert "cost at ours prices" in page
    assert client.get(f"/compare/?conversation={conversation.pk}&pricing=theirs").status_code == (
        HTTPStatus.NOT_FOUND
    )


def test_background_compare_keeps_the_price_it_ran_with(
    priced: tuple[Client, Any, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queued with a workspace price, the simulation stores its values; editing the price
    before the worker runs changes neither what it runs with nor its stored results."""
    client, conversation, pk = priced
    monkeypatch.setattr(conversation_selectors, "INLINE_LIMIT", 10)
    body = {"conversation": conversation.pk, "config": [pk, "none"], "pricing": "ours"}
    started = client.post("/compare/", body)
    simulation = Simulation.objects.get()
    ours = pricing_from_json(OURS, where="x")
    assert simulation.options == {
        "baseline": "first",
        "pricing": "ours",
        "price": pricing_to_json(ours),
        "min_cacheable_prefix": 1024,
    }
    price_update(price=WorkspacePrice.objects.get(), data={**OURS, "input": 100})
    services.simulation_run(simulation_id=simulation.pk)
    simulation.refresh_from_db()
    expected = compare(
        recorded_conversation(conversation),
        [("tight v1", {"max_tokens_for_clear": 8000}), ("no reduction", None)],
        pricing=ours,
    )
    got = [r["totals"]["cost_usd"] for r in simulation.results["results"]]
    assert got == [r.totals.cost_usd for r in expected.results]
    assert started.status_code == HTTPStatus.FOUND


def test_sweep_over_a_workspace_price(priced: tuple[Client, Any, int]) -> None:
    client, conversation, _ = priced
    body = {"conversation": [conversation.pk], "max_tokens_for_clear": "8000",
            "pricing": "ours"}  # fmt: skip
    response = client.post("/sweep/start/", body)
    assert response.status_code == HTTPStatus.FOUND, html(response)
    simulation = Simulation.objects.get()
    assert (simulation.options["pricing"], simulation.options["price"]["input"]) == ("ours", 1.5)


def test_rest_api_takes_a_workspace_price() -> None:
    api = make_api("alpha")
    price_create(workspace=api.workspace, data=OURS)
    messages = [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": "Done: a.txt and b.txt."},
    ]
    created = api.post("/conversations", {"conversation_id": "run-1", "messages": messages})
    assert created.status_code == HTTPStatus.CREATED, created.json()
    body = {"conversation_id": "run-1", "configs": [{"name": "off"}], "pricing": "ours"}
    response = api.post("/simulations", body)
    assert response.status_code == HTTPStatus.CREATED, response.json()
    assert response.json()["status"] == "done"
    other = make_api("beta")
    other.post("/conversations", {"conversation_id": "run-1", "messages": messages})
    refused = other.post("/simulations", body)
    assert refused.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert refused.json()["field"] == "pricing"


def test_a_sweep_point_opens_in_compare_at_the_sweeps_price(
    priced: tuple[Client, Any, int],
) -> None:
    """While the workspace price the sweep ran with exists, Compare opens at it."""
    client, conversation, _ = priced
    ws = conversation.workspace
    totals = {"cost_usd": 0.5, "cost_with_recovery_usd": 0.5, "refetches": 0, "misses": 0}
    swept = Simulation.objects.create(
        workspace=ws,
        conversation=conversation,
        kind="sweep",
        grid={"max_length_for_trunc": [200]},
        options={"pricing": "ours", "price": WorkspacePrice.objects.get().data, "corpus": True},
        status="done",
        results={
            "runs": [conversation.client_id],
            "baseline": {"name": "no reduction", "totals": {**totals, "cost_usd": 1.0}},
            "combinations": [
                {
                    "name": "trunc 200",
                    "config": {"max_length_for_trunc": 200},
                    "totals": totals,
                    "cost_saved": 0.5,
                    "cost_saved_with_recovery": 0.5,
                    "pareto": True,
                }
            ],
        },
    )
    swept.conversations.set([conversation])
    address = f"/simulations/{swept.pk}/points/1/compare/"
    opened = client.post(address, {"conversation": str(conversation.pk)})
    assert opened["Location"].endswith("&baseline=first&pricing=ours")
    WorkspacePrice.objects.get().delete()
    again = client.post(address, {"conversation": str(conversation.pk)})
    assert again["Location"].endswith("&baseline=first")
