"""Compare's chart in a real browser: it counts tokens as the totals table does (the
price preset's measure, which the form picks and the URL carries), and two configs
giving the same series stay both visible."""

from __future__ import annotations

from typing import Any

from reduction_app.configs.services import config_create
from reduction_app.models import Conversation, Workspace
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
