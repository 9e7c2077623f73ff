"""Cost and sorting in a real browser at 1280x800: the overview draws the cost chart,
and a click on a column header sorts the list in place with the order in the address."""

from __future__ import annotations

from typing import Any

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Workspace
from tests.app.dashboard_data import agent_run, event_row, expected_tokens

OUTPUTS = [("grep", "x" * 500), ("read_file", "line\n" * 100), ("ls", "a b c")]
SIZE = {"width": 1280, "height": 800}


def _demo() -> Workspace:
    return Workspace.objects.get(slug="demo")


def test_overview_shows_the_cost_chart(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    page.set_viewport_size(SIZE)
    run = agent_run(_demo(), "run-1", OUTPUTS * 2, title="Bug hunt")
    _, sent, kept = expected_tokens(_demo())[run.pk]
    page.goto(f"{page.base}/")
    page.wait_for_selector("canvas[data-chart=money-chart][data-rendered=true]")
    # gpt-4o, the default price: $2.50 per million input tokens.
    assert page.locator("#money-cost .value").inner_text() == f"${sent * 2.5 / 1e6:,.4f}"
    assert page.locator("#money-saved .value").inner_text() == f"${kept * 2.5 / 1e6:,.4f}"
    datasets = page.evaluate(
        "document.querySelector('canvas[data-chart=money-chart]').chart.data.datasets"
        ".map(d => [d.label, d.data.reduce((a, b) => a + b, 0)])"
    )
    assert [label for label, _ in datasets] == ["cost per hour (UTC)", "saved per hour (UTC)"]
    assert abs(datasets[0][1] - sent * 2.5 / 1e6) < 1e-5
    assert page.locator("canvas[data-chart=money-chart]").bounding_box()["width"] > 600
    shoot(page, "overview-cost")

    # Another price redraws the page in place, its name in the address.
    page.select_option("#id_pricing", "gpt-4.1")
    page.wait_for_url(f"{page.base}/?pricing=gpt-4.1")
    page.wait_for_function(
        "t => document.querySelector('#money-cost .value').innerText === t",
        arg=f"${sent * 2.0 / 1e6:,.4f}",
    )
    page.wait_for_selector("canvas[data-chart=money-chart][data-rendered=true]")


def _listed(page: Any) -> list[str]:
    return page.locator("#conversation-table tbody tr td:first-child a").all_inner_texts()


def test_clicking_a_header_sorts_the_conversations_and_the_address_keeps_it(
    signed_in: Any, shoot: Any
) -> None:
    page = signed_in
    page.set_viewport_size(SIZE)
    agent_run(_demo(), "long", OUTPUTS * 2)
    agent_run(_demo(), "short", OUTPUTS[:1])
    conversation_upsert(workspace=_demo(), client_id="empty", message_format="openai_chat")
    page.goto(f"{page.base}/conversations/")
    assert _listed(page) == ["empty", "short", "long"]
    page.evaluate("window.notReloaded = true")

    page.click("#conversation-table th[data-sort=cost] a")
    page.wait_for_url(f"{page.base}/conversations/?sort=-cost")
    page.wait_for_function(
        "() => document.querySelector('#conversation-table th[data-sort=cost]')"
        ".getAttribute('aria-sort') === 'descending'"
    )
    assert _listed(page) == ["long", "short", "empty"]
    assert page.evaluate("window.notReloaded") is True
    shoot(page, "conversations-by-cost")

    page.click("#conversation-table th[data-sort=cost] a")
    page.wait_for_url(f"{page.base}/conversations/?sort=cost")
    page.wait_for_function(
        "() => document.querySelector('#conversation-table tbody a').innerText === 'empty'"
    )
    assert _listed(page) == ["empty", "short", "long"]

    # A filter keeps the order; reloading the address shows the same.
    page.fill("#id_q", "o")
    page.press("#id_q", "Enter")
    page.wait_for_url(f"{page.base}/conversations/?**q=o**")
    assert "sort=cost" in page.url
    page.wait_for_function(
        "() => document.querySelectorAll('#conversation-table tbody tr').length === 2"
    )
    assert _listed(page) == ["short", "long"]
    page.reload()
    assert _listed(page) == ["short", "long"]


def test_clicking_a_header_sorts_the_events(signed_in: Any) -> None:
    page = signed_in
    page.set_viewport_size(SIZE)
    for saved in (5, 500, 50):
        event_row(_demo(), tokens_saved=saved, call_id=f"call_{saved}")
    page.goto(f"{page.base}/events/")
    calls = "#event-table tbody td.token code"
    assert page.locator(calls).all_inner_texts() == ["call_50", "call_500", "call_5"]
    page.click("#event-table th[data-sort=saved] a")
    page.wait_for_url(f"{page.base}/events/?sort=-saved")
    page.wait_for_function(
        "() => document.querySelector('#event-table tbody td.token code').innerText === 'call_500'"
    )
    assert page.locator(calls).all_inner_texts() == ["call_500", "call_50", "call_5"]
