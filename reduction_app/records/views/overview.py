"""The overview page (``/``): what the recorded model calls cost and what the reductions
saved, at the price ``?pricing=`` names (``records.money``), tokens saved all time and
recently, events by phase, the tools that saved most, cost and tokens saved over time,
and the latest events."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.http import HttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reduction_app.charts import BARS, over_time_chart
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import Workspace
from reduction_app.prices.choice import listed_pricing
from reduction_app.prices.selectors import pricing_choices
from reduction_app.records.money import MoneyPoint, money_over_time, money_totals
from reduction_app.records.selectors import (
    conversation_count,
    event_list,
    events_by_phase,
    file_totals,
    saved_over_time,
    saved_totals,
    top_tools,
)
from simulator.pricing import Pricing

LATEST_EVENTS = 10


def _bucket(first: datetime | None, last: datetime | None) -> str:
    """Hours when the data spans less than two days, else days."""
    if first is None or last is None or last - first < timedelta(days=2):
        return "hour"
    return "day"


def saved_chart(rows: list[dict[str, Any]], bucket: str) -> dict[str, Any]:
    """A bar chart of tokens saved per bucket, gaps filled with zeros."""
    return over_time_chart(
        {row["at"]: (row["saved"],) for row in rows},
        bucket=bucket,
        labels=(f"tokens saved per {bucket} (UTC)",),
        colours=(BARS["tokens"],),
        axis="tokens",
    )


def money_chart(points: list[MoneyPoint], bucket: str) -> dict[str, Any]:
    """Stacked bars per bucket: what the recorded calls cost, and on top what the
    reductions saved (together, what the calls would have cost with none)."""
    return over_time_chart(
        {p.at: (round(p.money.cost, 6), round(p.money.saved, 6)) for p in points},
        bucket=bucket,
        labels=(f"cost per {bucket} (UTC)", f"saved per {bucket} (UTC)"),
        colours=(BARS["cost"], BARS["saved"]),
        axis="US dollars",
        stacked=True,
    )


def overview_context(workspace: Workspace, pricing_name: str, pricing: Pricing) -> dict[str, Any]:
    totals = saved_totals(workspace=workspace, now=timezone.now())
    bucket = _bucket(totals["first"], totals["last"])
    series = saved_over_time(workspace=workspace, bucket=bucket)
    money = money_over_time(workspace=workspace, bucket=bucket, pricing=pricing)
    return {
        "totals": totals,
        "money": money_totals(workspace=workspace, pricing=pricing),
        "pricing": pricing_name,
        "presets": pricing_choices(workspace=workspace),
        "files": file_totals(workspace=workspace),
        "conversation_count": conversation_count(workspace=workspace),
        "phases": events_by_phase(workspace=workspace),
        "tools": top_tools(workspace=workspace),
        "bucket": bucket,
        "chart": saved_chart(series, bucket) if series else None,
        "money_chart": money_chart(money, bucket) if money else None,
        "latest": list(event_list(workspace=workspace)[:LATEST_EVENTS]),
    }


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def overview(request: PageRequest) -> HttpResponse:
    context = overview_context(
        request.workspace, *listed_pricing(request, request.workspace, request.GET)
    )
    return render_page(request, "reduction_app/overview.html", context, partial="content")


urlpatterns = [path("", overview, name="overview")]
