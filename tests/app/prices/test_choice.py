"""The price a page shows: its ``pricing=`` wins and is remembered for the session; a page
without one takes the remembered one while the workspace offers it, else the default."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.test import Client

from reduction_app.models import WorkspacePrice
from reduction_app.prices.choice import SESSION_KEY
from reduction_app.prices.services import price_create
from simulator.pricing import DEFAULT_PRICING_NAME
from tests.app.pages_support import elements, member_client, parsed

pytestmark = pytest.mark.django_db

OURS = {"name": "ours", "input": 1.5, "tokenizer": "o200k_base", "framing": "openai-chat"}


def _picked(client: Client, url: str) -> str:
    (picker,) = elements(parsed(client.get(url)), "select", name="pricing")
    chosen = [
        dict(o.attributes)["value"]
        for o in elements(picker, "option")
        if "selected" in dict(o.attributes)
    ]
    assert len(chosen) == 1
    return chosen[0]


def test_chosen_pricing_defaults_then_follows_the_last_one_named() -> None:
    client, _ = member_client()
    assert _picked(client, "/sweep/") == DEFAULT_PRICING_NAME
    assert _picked(client, "/compare/?pricing=claude-haiku-4.5") == "claude-haiku-4.5"
    assert client.session[SESSION_KEY] == "claude-haiku-4.5"
    assert _picked(client, "/compare/") == "claude-haiku-4.5"
    assert _picked(client, "/sweep/") == "claude-haiku-4.5"
    # A link's own price wins over the remembered one, and is remembered after it.
    assert _picked(client, "/compare/?pricing=gpt-4.1") == "gpt-4.1"
    assert _picked(client, "/compare/") == "gpt-4.1"


def test_chosen_pricing_forgets_a_price_the_workspace_no_longer_has() -> None:
    client, workspace = member_client()
    price_create(workspace=workspace, data=OURS)
    assert _picked(client, "/compare/?pricing=ours") == "ours"
    WorkspacePrice.objects.filter(workspace=workspace, name="ours").delete()
    assert _picked(client, "/compare/") == DEFAULT_PRICING_NAME
    # Named in a link, it is a 404 as before; the remembered one stays as it was.
    assert client.get("/compare/?pricing=ours").status_code == HTTPStatus.NOT_FOUND


def test_chosen_pricing_is_not_remembered_from_an_unknown_name() -> None:
    client, _ = member_client()
    assert client.get("/compare/?pricing=gpt-9").status_code == HTTPStatus.NOT_FOUND
    assert SESSION_KEY not in client.session
    assert _picked(client, "/sweep/?pricing=gpt-9") == DEFAULT_PRICING_NAME
