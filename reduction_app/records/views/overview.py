"""The overview page (``/``): tokens saved all time and recently, events by phase, the
tools that saved most, tokens saved over time, and the latest events."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.http import HttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import Workspace
from reduction_app.records.selectors import (
    conversation_count,
    event_list,
    events_by_phase,
    file_totals,
    saved_over_time,
    saved_totals,
    top_tools,
)

LATEST_EVENTS = 10
MAX_FILLED_BUCKETS = 1_000
"""Empty hours or days are drawn as zeros up to this many buckets; beyond, only the
buckets with savings are drawn (a long, sparse history)."""


def _bucket(first: datetime | None, last: datetime | None) -> str:
    """Hours when the data spans less than two days, else days."""
    if first is None or last is None or last - first < timedelta(days=2):
        return "hour"
    return "day"


def saved_chart(rows: list[dict[str, Any]], bucket: str) -> dict[str, Any]:
    """A bar chart of tokens saved per bucket, gaps filled with zeros."""
    step = timedelta(hours=1) if bucket == "hour" else timedelta(days=1)
    by_time = {row["at"]: row["saved"] for row in rows}
    times = sorted(by_time)
    if times and (times[-1] - times[0]) / step < MAX_FILLED_BUCKETS:
        filled, at = [], times[0]
        while at <= times[-1]:
            filled.append(at)
            at += step
        times = filled
    label = "%Y-%m-%d %H:00" if bucket == "hour" else "%Y-%m-%d"
    return {
        "type": "bar",
        "data": {
            "labels": [t.strftime(label) for t in times],
            "datasets": [
                {
                    "label": f"tokens saved per {bucket} (UTC)",
                    "data": [by_time.get(t, 0) for t in times],
                    "backgroundColor": "#2f5bd3",
                }
            ],
        },
        "options": {
            "scales": {"y": {"beginAtZero": True, "title": {"display": True, "text": "tokens"}}},
            "plugins": {"legend": {"display": False}},
        },
    }


def overview_context(workspace: Workspace) -> dict[str, Any]:
    totals = saved_totals(workspace=workspace, now=timezone.now())
    bucket = _bucket(totals["first"], totals["last"])
    series = saved_over_time(workspace=workspace, bucket=bucket)
    return {
        "totals": totals,
        "files": file_totals(workspace=workspace),
        "conversation_count": conversation_count(workspace=workspace),
        "phases": events_by_phase(workspace=workspace),
        "tools": top_tools(workspace=workspace),
        "bucket": bucket,
        "chart": saved_chart(series, bucket) if series else None,
        "latest": list(event_list(workspace=workspace)[:LATEST_EVENTS]),
    }


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def overview(request: PageRequest) -> HttpResponse:
    context = overview_context(request.workspace)
    return render_page(request, "reduction_app/overview.html", context, partial="content")


urlpatterns = [path("", overview, name="overview")]
