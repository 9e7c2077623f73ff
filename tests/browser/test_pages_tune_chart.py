"""Tune's chart in a real browser: it counts tokens as the totals table does (the price
preset's measure, which the form picks and the address carries)."""

from __future__ import annotations

from typing import Any

from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.models import Conversation, Workspace
from simulator.compare import compare
from simulator.pricing import PRESETS
from tests.app.pages_support import record_conversation

START = "start: Eino defaults (built in)"


def _drawn(page: Any) -> dict[str, list[int]]:
    """What Chart.js drew on Tune's canvas: each dataset's values by its label."""
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    return dict(
        page.evaluate(
            """() => Chart.getChart(document.querySelector('#tune-results canvas'))
                 .data.datasets.map(d => [d.label, d.data])"""
        )
    )


def _axis(page: Any) -> str:
    return str(
        page.evaluate(
            "() => Chart.getChart(document.querySelector('#tune-results canvas'))"
            ".options.scales.y.title.text"
        )
    )


def _table(page: Any, config: str, metric: str) -> int:
    """A config's figure in the totals table, as a number of tokens."""
    row = page.locator("table.totals tbody tr", has=page.locator(f"th:text-is('{config}')"))
    text = row.locator(f"[data-metric={metric}] .value").inner_text()
    assert text.endswith(" tok"), text
    return int(text.removesuffix(" tok").replace(",", ""))


def _open(page: Any) -> Conversation:
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(
        f"{page.base}/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=5000"
    )
    return conversation


def test_tune_chart_counts_tokens_as_the_totals_table(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    _open(page)
    drawn = _drawn(page)
    assert max(drawn["tuned"]) == _table(page, "tuned", "peak_context_tokens")
    assert max(drawn[START]) == _table(page, START, "peak_context_tokens")
    # Over all calls the plotted values sum to what the table says was billed.
    assert sum(drawn["tuned"]) == _table(page, "tuned", "input_tokens_billed")
    assert sum(drawn[START]) == _table(page, START, "input_tokens_billed")
    assert _axis(page) == "tokens, as gpt-4o bills them"
    assert (
        page.locator("#tune-results .chart-measure")
        .inner_text()
        .startswith("Tokens counted as gpt-4o bills them, like the totals below")
    )
    shoot(page, "tune-chart-billed")


def test_tune_price_preset_changes_the_totals_and_the_chart(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    conversation = _open(page)
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert page.locator("select[name=pricing]").input_value() == "gpt-4o"
    assert len(page.locator("select[name=pricing] option").all()) == len(PRESETS)
    gpt4o = _table(page, "tuned", "input_tokens_billed")
    page.evaluate("window.notReloaded = true")
    page.select_option("select[name=pricing]", "claude-sonnet-4.5")
    page.wait_for_function("() => location.search.includes('pricing=claude-sonnet-4.5')")
    page.wait_for_selector("#tune-results .chart-measure:has-text('claude-sonnet-4.5')")
    assert page.evaluate("window.notReloaded") is True
    expected = compare(
        recorded_conversation(conversation),
        [(START, None), ("tuned", {"max_tokens_for_clear": 5000})],
        pricing=PRESETS["claude-sonnet-4.5"],
    )
    start_run, tuned_run = expected.results
    billed = _table(page, "tuned", "input_tokens_billed")
    assert billed == tuned_run.totals.input_tokens_billed != gpt4o
    drawn = _drawn(page)
    assert drawn[START] == [c.context_tokens for c in start_run.calls]
    assert drawn["tuned"] == [c.context_tokens for c in tuned_run.calls]
    assert _axis(page) == "tokens, as claude-sonnet-4.5 bills them"
    # The address names it once, and a reload keeps it.
    assert page.url.count("pricing=") == 1
    page.reload()
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert page.locator("select[name=pricing]").input_value() == "claude-sonnet-4.5"
    assert _table(page, "tuned", "input_tokens_billed") == billed
    shoot(page, "tune-pricing")
