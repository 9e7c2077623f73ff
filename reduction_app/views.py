"""Dashboard pages. Only the overview exists so far; the observatory comes with issue 5."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from reduction_app import engine


@require_GET
def overview(request: HttpRequest) -> HttpResponse:
    context = {
        "config_fields": engine.config_field_defaults(),
    }
    return render(request, "reduction_app/overview.html", context)
