"""The Live traces page (``/traces/``): how to point an agent's exporter at the Lab, and
the sessions read from what arrived, with the conversations each made and why one
could not be read."""

from __future__ import annotations

from django.http import HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import TelemetryGroup
from reduction_app.paging import pager_for, paginate

SESSIONS_PER_PAGE = 25


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def traced_sessions(request: PageRequest) -> HttpResponse:
    failed = request.GET.get("failed") == "1"
    rows = TelemetryGroup.objects.filter(workspace=request.workspace)
    if failed:
        rows = rows.exclude(error="")
    page = paginate(request, rows, SESSIONS_PER_PAGE)
    endpoint = request.build_absolute_uri(reverse("api:otlp_traces")).removesuffix("/v1/traces")
    context = {
        "sessions": page.object_list,
        "pager": pager_for(request, page),
        "failed": failed,
        "failed_count": TelemetryGroup.objects.filter(workspace=request.workspace)
        .exclude(error="")
        .count(),
        "endpoint": endpoint,
    }
    return render_page(request, "reduction_app/traces.html", context, partial="sessions")


urlpatterns = [path("traces/", traced_sessions, name="traced_sessions")]
