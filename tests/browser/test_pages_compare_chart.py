"""Compare's chart in a real browser: it counts tokens as the totals table does (the
price preset's measure, which the form picks and the URL carries), and two configs
giving the same series stay both visible."""

from __future__ import annotations

from typing import Any

from reduction_app.configs.services import config_create
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.models import Conversation, Workspace
from simulator.compare import compare
from simulator.pricing import PRESETS
from tests.app.pages_support import record_conversation

TIGHT = {"max_tokens_for_clear": 8000, "max_length_for_trunc": 5000}


def _drawn(page: Any) -> list[dict[str, Any]]:
    """What Chart.js drew on Compare's canvas: per dataset its label, values and dash."""
    page.wait_for_selector("#compare-results canvas[data-rendered=true]")
    return list(
        page.evaluate(
            """() => {
              const chart = Chart.getChart(document.querySelector('#compare-results canvas'));
              return chart.data.datasets.map((d, i) => ({
                label: d.label,
                data: d.data,
                dash: chart.getDatasetMeta(i).dataset.options.borderDash,
                hidden: !chart.isDatasetVisible(i),
              }));
            }"""
        )
    )


def _table(page: Any, config: str, metric: str) -> int:
    """A config's figure in the totals table, as a number of tokens."""
    row = page.locator("table.totals tbody tr", has=page.locator(f"th:text-is('{config}')"))
    text = row.locator(f"[data-metric={metric}] .value").inner_text()
    assert text.endswith(" tok"), text
    return int(text.removesuffix(" tok").replace(",", ""))


def _setup() -> tuple[Conversation, int]:
    workspace = Workspace.objects.get(slug="demo")
    conversation = record_conversation(workspace)
    tight = config_create(workspace=workspace, name="tight", data=TIGHT).profile
    return conversation, tight.pk


def test_compare_chart_counts_tokens_as_the_totals_table(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    conversation, tight = _setup()
    page.goto(f"{page.base}/compare/?conversation={conversation.pk}&config=none&config={tight}")
    drawn = {d["label"]: d for d in _drawn(page)}
    no_reduction = drawn["no reduction"]["data"]
    # No reduction only grows: its last call is its peak, the table's "peak context".
    assert no_reduction[-1] == max(no_reduction)
    assert no_reduction[-1] == _table(page, "no reduction", "peak_context_tokens")
    assert max(drawn["tight v1"]["data"]) == _table(page, "tight v1", "peak_context_tokens")
    # Over all calls the plotted values sum to what the table says was billed.
    assert sum(no_reduction) == _table(page, "no reduction", "input_tokens_billed")
    assert sum(drawn["tight v1"]["data"]) == _table(page, "tight v1", "input_tokens_billed")
    axis = page.evaluate(
        "() => Chart.getChart(document.querySelector('#compare-results canvas'))"
        ".options.scales.y.title.text"
    )
    assert axis == "tokens, as gpt-4o bills them"
    shoot(page, "compare-chart-billed")


def test_compare_price_preset_changes_the_totals_and_the_chart(signed_in: Any) -> None:
    page = signed_in
    conversation, tight = _setup()
    page.goto(f"{page.base}/compare/?conversation={conversation.pk}&config=none&config={tight}")
    assert page.locator("select[name=pricing]").input_value() == "gpt-4o"
    assert len(page.locator("select[name=pricing] option").all()) == len(PRESETS)
    gpt4o = _table(page, "no reduction", "input_tokens_billed")
    page.select_option("select[name=pricing]", "claude-sonnet-4.5")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url("**pricing=claude-sonnet-4.5**")
    expected = compare(
        recorded_conversation(conversation),
        [("no reduction", None), ("tight v1", TIGHT)],
        pricing=PRESETS["claude-sonnet-4.5"],
    )
    off, tight_run = expected.results
    page.wait_for_selector("#compare-results .chart-measure:has-text('claude-sonnet-4.5')")
    billed = _table(page, "no reduction", "input_tokens_billed")
    assert billed == off.totals.input_tokens_billed != gpt4o
    assert _table(page, "tight v1", "input_tokens_billed") == tight_run.totals.input_tokens_billed
    cost = page.locator("table.totals tbody tr", has=page.locator("th:text-is('tight v1')"))
    assert cost.locator("[data-metric=cost_usd] .value").inner_text() == (
        f"${tight_run.totals.cost_usd:,.4f}"
    )
    drawn = {d["label"]: d for d in _drawn(page)}
    assert drawn["no reduction"]["data"] == [c.context_tokens for c in off.calls]
    assert drawn["tight v1"]["data"] == [c.context_tokens for c in tight_run.calls]
    # The preset stays chosen, and the call links carry it.
    assert page.locator("select[name=pricing]").input_value() == "claude-sonnet-4.5"
    page.click("nav.calls a:text-is('3')")
    page.wait_for_selector("h2#sent:has-text('at call 3 of 23')")
    assert "pricing=claude-sonnet-4.5" in page.url
    assert _table(page, "no reduction", "input_tokens_billed") == billed


def test_compare_chart_dashes_a_series_equal_to_an_earlier_one(signed_in: Any, shoot: Any) -> None:
    """No reduction and the built-in defaults never clear on this run: the same line twice,
    the second dashed so the first shows through, and both in the legend."""
    page = signed_in
    conversation, _ = _setup()
    page.goto(f"{page.base}/compare/?conversation={conversation.pk}&config=none&config=defaults")
    off, defaults = _drawn(page)
    assert (off["label"], defaults["label"]) == ("no reduction", "Eino defaults (built in)")
    assert off["data"] == defaults["data"]
    assert off["dash"] == []
    assert defaults["dash"] == [12, 6]
    assert not off["hidden"] and not defaults["hidden"]
    legend = page.evaluate(
        "() => Chart.getChart(document.querySelector('#compare-results canvas'))"
        ".legend.legendItems.map(item => [item.text, item.lineDash])"
    )
    assert legend == [["no reduction", []], ["Eino defaults (built in)", [12, 6]]]
    shoot(page, "compare-chart-equal-series")
