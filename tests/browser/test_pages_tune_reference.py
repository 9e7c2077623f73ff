"""Tune's fixed reference in a real browser: no reduction is always a row, every delta
is first against it and then against the starting config, no reduction can be the
start, and at 1,280 × 800 the totals and chart stay in view while the lowest slider
moves."""

from __future__ import annotations

from typing import Any

from reduction_app import engine
from reduction_app.models import Workspace
from tests.app.pages_support import record_conversation
from tests.browser.lab_support import DESKTOP

ROWS = "#tune-results table.totals tbody th[scope=row]"


def _in_view(page: Any, selector: str) -> bool:
    return bool(
        page.locator(selector).evaluate(
            "el => { const r = el.getBoundingClientRect();"
            " return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0 }"
        )
    )


def test_no_reduction_is_the_reference_and_the_totals_stay_in_view(
    signed_in: Any, shoot: Any
) -> None:
    page = signed_in
    page.set_viewport_size(DESKTOP)
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(f"{page.base}/tune/?conversation={conversation.pk}&start=defaults")
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    names = [" ".join(n.split()) for n in page.locator(ROWS).all_inner_texts()]
    assert names == ["no reduction reference", "start: Eino defaults (built in)", "tuned"]
    tuned = page.locator("#tune-results table.totals tbody tr").nth(2)
    billed = tuned.locator("[data-metric=input_tokens_billed]")
    assert billed.locator("[data-against=baseline]").count() == 1
    assert billed.locator("[data-against=start]").count() == 1

    # The lowest knob, scrolled to and moved: the totals and chart are still in view.
    last = engine.config_knobs()[-1].name
    slider = page.locator(f"input[type=range][name={last}]")
    slider.scroll_into_view_if_needed()
    before = billed.locator(".value").inner_text()
    page.evaluate("window.notReloaded = true")
    page.locator("input[type=range][name=max_tokens_for_clear]").evaluate(
        "el => { el.value = 5000; el.dispatchEvent(new Event('input', {bubbles: true})) }"
    )
    selector = (
        "#tune-results table.totals tbody tr:nth-child(3) [data-metric=input_tokens_billed] .value"
    )
    page.wait_for_function(f"() => document.querySelector({selector!r}).textContent !== {before!r}")
    assert page.evaluate("window.notReloaded") is True
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert _in_view(page, selector)
    assert _in_view(page, "#tune-results canvas")
    shoot(page, "tune-reference")


def test_no_reduction_can_be_the_start(signed_in: Any) -> None:
    page = signed_in
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(f"{page.base}/tune/?conversation={conversation.pk}")
    page.select_option("#tune-pick select[name=start]", "none")
    page.click("#tune-pick button[type=submit]")
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert "start=none" in page.url
    names = [" ".join(n.split()) for n in page.locator(ROWS).all_inner_texts()]
    assert names == ["no reduction reference", "tuned"]
    assert page.locator("#start-note").is_visible()
    # The knobs start at the engine's defaults.
    spec = engine.config_knobs()[0]
    assert page.input_value(f"input[type=number][name={spec.name}]") == str(spec.default)
