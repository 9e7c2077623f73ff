"""The overview page: tokens saved, events by phase, top tools, the chart, latest events."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import EventRecord
from tests.app.dashboard_data import HX, event_row, member_client
from tests.app.pages_support import elements, parsed

pytestmark = pytest.mark.django_db


def chart_config(page: str, chart_id: str) -> Any:
    found = re.search(rf'<script id="{chart_id}" type="application/json">(.*?)</script>', page)
    assert found is not None, f"no chart {chart_id}"
    return json.loads(found.group(1))


def _aged(event: EventRecord, **delta: float) -> EventRecord:
    EventRecord.objects.filter(pk=event.pk).update(created_at=timezone.now() - timedelta(**delta))
    return event


def test_overview_empty_workspace_says_how_to_fill_it() -> None:
    client, _ = member_client()
    page = client.get("/").content.decode()
    assert '<div class="value" id="saved-all">0 tok</div>' in page
    assert "No reductions recorded yet" in page
    assert 'data-chart="saved-chart"' not in page


def test_overview_totals_phases_tools_and_latest() -> None:
    client, ws = member_client()
    conv = conversation_upsert(workspace=ws, client_id="run-1", message_format="openai_chat")
    event_row(ws, tool_name="grep", tokens_saved=1234, conversation=conv, offload_path="/t/a")
    event_row(ws, phase="clear", tool_name="read_file", tokens_saved=1000, conversation=conv)
    # A clear pass's summary repeats its calls' savings: not added again.
    event_row(ws, phase="clear", kind="summary", tool_name="", tokens_saved=1000, applied=True)
    _aged(event_row(ws, tool_name="grep", tokens_saved=5), days=3)
    _aged(event_row(ws, tool_name="ls", tokens_saved=70_000), days=10)

    page = client.get("/").content.decode()

    assert '<div class="value" id="saved-all">72,239 tok</div>' in page
    assert '<div class="value" id="saved-day">2,234 tok</div>' in page
    assert '<div class="value" id="saved-week">2,239 tok</div>' in page
    phases = page.split('id="phases"')[1].split("</table>")[0]
    assert re.findall(r'<td class="num">([^<]*)</td>', phases) == [
        "1",
        "1",
        "1",
        "1",
        "1,000 tok",  # clear: passes, then calls cleared
        "3",
        "3",
        "71,239 tok",  # truncation
    ]
    tools = page.split('id="top-tools"')[1].split("</table>")[0]
    assert re.findall(r'\?tool=(\w+)">', tools) == ["ls", "grep", "read_file"]
    assert '<td class="num">70,000 tok</td>' in tools
    assert '<td class="num">1,239 tok</td>' in tools
    # The latest events link to their conversation and file.
    assert '<a href="/conversations/run-1/">run-1</a>' in page
    assert (
        '<a href="/files/view/?path=/t/a&amp;conversation=run-1"><code><bdi>/t/a</bdi></code></a>'
        in page
    )


def test_overview_chart_is_per_day_over_two_days_and_per_hour_below() -> None:
    client, ws = member_client()
    event_row(ws, tokens_saved=100)
    _aged(event_row(ws, tokens_saved=30), hours=3)
    hourly = chart_config(client.get("/").content.decode(), "saved-chart")
    assert hourly["data"]["datasets"][0]["label"] == "tokens saved per hour (UTC)"
    data = hourly["data"]["datasets"][0]["data"]
    assert (data[0], data[-1], sum(data), len(data)) == (30, 100, 130, len(data))
    assert 4 <= len(data) <= 5  # three hours apart: gaps drawn as zeros

    _aged(event_row(ws, tokens_saved=7), days=4)
    daily = chart_config(client.get("/").content.decode(), "saved-chart")
    assert daily["data"]["datasets"][0]["label"] == "tokens saved per day (UTC)"
    days = daily["data"]["datasets"][0]["data"]
    assert (days[0], sum(days), len(days)) == (7, 137, 5)


def test_overview_cost_cards_and_chart_at_the_chosen_price() -> None:
    client, ws = member_client()
    now = timezone.now()
    # Two calls three hours ago, one now: a pass of no conversation keeps out what it
    # cleared itself.
    for hours, after, saved in ((3, 100_000, 20_000), (3, 50_000, 0), (0, 400_000, 40_000)):
        row = event_row(ws, phase="clear", kind="summary", tokens_after=after, tokens_saved=saved)
        EventRecord.objects.filter(pk=row.pk).update(created_at=now - timedelta(hours=hours))
    # gpt-4o by default: $2.50 per million input tokens.
    sent, kept = 550_000, 60_000
    response = client.get("/")
    page, tree = response.content.decode(), parsed(response)
    (cost,) = elements(tree, "div", id="money-cost")
    assert [str(v.children[0]) for v in elements(cost, "div", class_="value")] == [
        f"${sent * 2.5 / 1e6:,.4f}"
    ]
    (saved,) = elements(tree, "div", id="money-saved")
    assert [str(v.children[0]) for v in elements(saved, "div", class_="value")] == [
        f"${kept * 2.5 / 1e6:,.4f}"
    ]
    chart = chart_config(page, "money-chart")
    assert [d["label"] for d in chart["data"]["datasets"]] == [
        "cost per hour (UTC)",
        "saved per hour (UTC)",
    ]
    costs, savings = (d["data"] for d in chart["data"]["datasets"])
    assert (costs[0], costs[-1], savings[0], savings[-1]) == (0.375, 1.0, 0.05, 0.1)
    assert sum(costs[1:-1]) == sum(savings[1:-1]) == 0  # the hours between, drawn empty
    assert chart["options"]["scales"]["y"]["stacked"] is True

    cheaper = chart_config(
        client.get("/", {"pricing": "gpt-4o-mini"}).content.decode(), "money-chart"
    )
    assert cheaper["data"]["datasets"][0]["data"][-1] == pytest.approx(400_000 * 0.15 / 1e6)
    # An unknown price shows the one picked last (remembered in the session), and in a
    # new session the default.
    assert chart_config(client.get("/", {"pricing": "nope"}).content.decode(), "money-chart") == (
        cheaper
    )
    client = Client()
    client.force_login(ws.members.get())
    assert (
        chart_config(client.get("/", {"pricing": "nope"}).content.decode(), "money-chart") == chart
    )


def test_overview_without_model_calls_draws_no_cost_chart() -> None:
    client, ws = member_client()
    event_row(ws, tokens_saved=10)
    page = client.get("/").content.decode()
    assert 'data-chart="money-chart"' not in page
    assert "No model calls recorded yet" in page


def test_overview_partial_for_htmx() -> None:
    client, ws = member_client()
    event_row(ws, tokens_saved=1234)
    page = client.get("/", headers=HX).content.decode()
    assert "<html" not in page
    assert page.lstrip().startswith('<div id="overview">')
    assert '<div class="value" id="saved-all">1,234 tok</div>' in page


def test_overview_escapes_names() -> None:
    client, ws = member_client()
    conv = conversation_upsert(
        workspace=ws,
        client_id="x",
        message_format="openai_chat",
        title="<script>alert(1)</script>",
    )
    event_row(ws, tool_name="<script>alert(2)</script>", tokens_saved=3, conversation=conv)
    page = client.get("/").content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page


def _fill(ws: Any, n: int) -> None:
    for i in range(n):
        conv = conversation_upsert(workspace=ws, client_id=f"c{i}", message_format="openai_chat")
        event_row(ws, tool_name=f"tool{i % 7}", tokens_saved=i, conversation=conv)
        _aged(event_row(ws, phase="clear", tokens_saved=1, offload_path=f"/p/{i}"), days=i % 5)
        event_row(ws, phase="clear", kind="summary", conversation=conv)


OVERVIEW_QUERIES = 14
"""Session, user, workspace (twice: the one shown and the switcher), totals, the series,
the price choices, the cost totals, the cost series, files, conversations, phases, tools,
latest events. The first request of a session also
saves the workspace shown in it, so each test makes one before it counts."""


def test_overview_query_count_is_constant(django_assert_num_queries: Any) -> None:
    client, ws = member_client()
    client.get("/")
    _fill(ws, 5)
    with django_assert_num_queries(OVERVIEW_QUERIES):
        assert client.get("/").status_code == HTTPStatus.OK
    _fill(ws, 10)
    with django_assert_num_queries(OVERVIEW_QUERIES):
        assert client.get("/").status_code == HTTPStatus.OK


def test_overview_shows_how_long_records_are_kept() -> None:
    client, ws = member_client()
    card = re.compile(r'<div class="card" id="retention">.*?<div class="value">([^<]*)</div>')

    def kept() -> str:
        found = card.search(client.get("/").content.decode())
        assert found is not None
        return found.group(1)

    assert kept() == "forever"
    for days, shown in ((30, "30 days"), (1, "1 day"), (3650, "3,650 days")):
        ws.retention_days = days
        ws.save(update_fields=["retention_days"])
        assert kept() == shown
