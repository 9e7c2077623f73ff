"""The overview page (``/``)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from reduction_app import engine
from reduction_app.dashboard import render_page, workspace_view


@require_GET
@workspace_view
def overview(request: HttpRequest) -> HttpResponse:
    context = {"config_fields": engine.config_field_defaults()}
    return render_page(request, "reduction_app/overview.html", context)


urlpatterns = [path("", overview, name="overview")]
