"""One price across the Reduction Lab pages in a real browser: a sweep run at
claude-sonnet-4.5 opens its point in Compare and in Tune at that price, the price is
remembered for pages opened without one, and a link's own price wins."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

from reduction_app.models import Workspace
from tests.browser.lab_support import SWEEP_PRICING, finished_sweep, two_conversations
from tests.conftest import needs_recordings

pytestmark = needs_recordings


def _picked(page: Any, form: str) -> str:
    return str(page.locator(f"{form} select[name=pricing]").input_value())


def test_a_sweeps_price_travels_to_compare_tune_and_the_next_pages(
    signed_in: Any, shoot: Any
) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    conversations = two_conversations(workspace)
    simulation = finished_sweep(workspace, conversations)
    point = f"{page.base}/simulations/{simulation.pk}/points/1/"

    page.goto(point)
    page.click("#point-compare button")
    page.wait_for_url(f"{page.base}/compare/*")
    assert parse_qs(urlsplit(page.url).query)["pricing"] == [SWEEP_PRICING]
    assert _picked(page, "#compare-form") == SWEEP_PRICING
    page.wait_for_selector("#compare-results canvas[data-rendered=true]")
    assert (
        page.locator(".chart-measure")
        .inner_text()
        .startswith(f"Tokens counted as {SWEEP_PRICING} bills them")
    )

    page.goto(point)
    page.click("#point-tune button")
    page.wait_for_url(f"{page.base}/tune/*")
    assert parse_qs(urlsplit(page.url).query)["pricing"] == [SWEEP_PRICING]
    assert _picked(page, "#tune-form") == SWEEP_PRICING
    # Saving the tuned config comes back to Tune at the same price.
    page.fill("form.save-as input[name=name]", "tuned at sonnet")
    page.click("form.save-as button[type=submit]")
    page.wait_for_selector("p.saved")
    assert parse_qs(urlsplit(page.url).query)["pricing"] == [SWEEP_PRICING]
    assert _picked(page, "#tune-form") == SWEEP_PRICING

    # Pages opened from the navigation, with no price named, keep the one in use.
    page.click("header.top nav >> text=Compare")
    page.wait_for_url(f"{page.base}/compare/")
    assert _picked(page, "#compare-form") == SWEEP_PRICING
    page.click("header.top nav >> text=Sweep")
    page.wait_for_url(f"{page.base}/sweep/")
    assert _picked(page, "#sweep-form") == SWEEP_PRICING

    # A link's own price wins, and is the one remembered after it.
    page.goto(
        f"{page.base}/tune/?conversation={conversations[0].pk}&start=defaults&pricing=gpt-4.1"
    )
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert _picked(page, "#tune-form") == "gpt-4.1"
    page.click("header.top nav >> text=Compare")
    page.wait_for_url(f"{page.base}/compare/")
    assert _picked(page, "#compare-form") == "gpt-4.1"
    shoot(page, "pricing-remembered")
