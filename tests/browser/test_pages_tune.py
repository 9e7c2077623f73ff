"""Tune in a real browser: moving a slider re-runs the replay and the totals change in
place, without a page load."""

from __future__ import annotations

from typing import Any

from reduction_app.models import Workspace
from tests.app.pages_support import record_conversation

TUNED_BILLED = "table.totals tbody tr:nth-child(2) [data-metric=input_tokens_billed] .value"


def test_slider_changes_the_totals_in_place(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(f"{page.base}/tune/?conversation={conversation.pk}&start=defaults")
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert page.inner_text(TUNED_BILLED) == "516,549 tok"
    page.evaluate("window.notReloaded = true")
    page.locator("input[type=range][name=max_tokens_for_clear]").evaluate(
        "el => { el.value = 5000; el.dispatchEvent(new Event('input', {bubbles: true})) }"
    )
    # A function, not an expression: Playwright evals an expression inside the page, which
    # the Content-Security-Policy (no 'unsafe-eval') refuses.
    page.wait_for_function(
        f"() => document.querySelector({TUNED_BILLED!r}).textContent === '156,062 tok'"
    )
    assert page.evaluate("window.notReloaded") is True
    assert page.input_value("input[type=number][name=max_tokens_for_clear]") == "5000"
    assert "max_tokens_for_clear=5000" in page.url
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    shoot(page, "tune")
    page.fill("form.save-as input[name=name]", "tuned in the browser")
    page.click("form.save-as button[type=submit]")
    page.wait_for_selector("p.saved")
    assert page.inner_text("p.saved") == "Saved as tuned in the browser v1."


def test_strategy_switch_reruns_and_shows_what_it_removed(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(
        f"{page.base}/tune/?conversation={conversation.pk}&start=defaults"
        "&max_tokens_for_clear=20000"
    )
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert page.locator("table.strategies").count() == 0
    page.evaluate("window.notReloaded = true")
    page.check("#switch-clear_superseded input[type=checkbox]")
    page.wait_for_selector("table.strategies")
    assert page.evaluate("window.notReloaded") is True
    assert "superseded" in page.inner_text("table.strategies thead")
    assert "clear_superseded=on" in page.url
    shoot(page, "tune-strategy")
