"""Replay & compare in a real browser: pick a conversation and two configs, see the chart
drawn and both configs in the totals with their misses, then open one call side by side."""

from __future__ import annotations

from typing import Any

from reduction_app.configs.services import config_create
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.models import Workspace
from simulator.compare import compare
from tests.app.pages_support import record_conversation


def test_compare_two_configs(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    conversation = record_conversation(workspace)
    data = {"max_tokens_for_clear": 8000, "max_length_for_trunc": 5000}
    tight = config_create(workspace=workspace, name="tight", data=data).profile
    (replayed,) = compare(recorded_conversation(conversation), [("tight v1", data)]).results
    page.goto(f"{page.base}/compare/")
    page.select_option("select[name=conversation]", str(conversation.pk))
    configs = page.locator("select[name=config]")
    configs.nth(0).select_option(str(tight.pk))
    configs.nth(1).select_option("none")
    page.evaluate("window.notReloaded = true")
    page.click("#compare-form button[type=submit]")
    page.wait_for_selector("#compare-results canvas[data-rendered=true]")
    rows = page.locator("table.totals tbody th[scope=row]")
    assert rows.all_inner_texts() == ["tight v1 baseline", "no reduction"]
    billed = (
        page.locator("table.totals tbody tr").nth(1).locator("[data-metric=input_tokens_billed]")
    )
    assert billed.inner_text().split("\n") == ["516,549 tok", "+359,376 tok (+228.6%)"]
    heading = page.locator("table.totals thead th[data-metric=misses]")
    assert heading.inner_text() == "misses"
    assert (heading.get_attribute("title") or "").startswith("Tool outputs the reduction hid")
    misses = page.locator("table.totals tbody tr").nth(0).locator("[data-metric=misses] .value")
    assert misses.inner_text() == f"{replayed.totals.misses:,}"
    assert replayed.miss_examples, "the tight config hides something the agent typed later"
    first = replayed.miss_examples[0]
    example = page.locator("#miss-examples tbody tr").first
    cells = example.locator("td").all_inner_texts()
    assert cells == [str(first.call + 1), first.tool, first.string]
    assert page.evaluate("window.notReloaded") is True  # htmx swapped the results in place
    assert f"config={tight.pk}" in page.url and "config=none" in page.url
    example.locator("a").click()  # to what the model was sent at the call that missed
    page.wait_for_selector(f"h2#sent:has-text('at call {first.call + 1} of 23')")
    page.click("nav.calls a:text-is('8')")
    page.wait_for_selector("h2#sent:has-text('at call 8 of 23')")
    page.wait_for_selector("#compare-results canvas[data-rendered=true]")
    assert page.locator("table.sent .badge.cleared").count() > 0
    assert (
        page.locator("table.sent mark.changed")
        .first.inner_text()
        .startswith("<persisted-output>Tool result saved to:")
    )
    shoot(page, "compare")
