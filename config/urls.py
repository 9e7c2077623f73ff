"""URL routes of the Reduction Lab site."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path

from reduction_app.api import api


def api_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Unknown API addresses answer in the API's JSON error shape, not an HTML page."""
    return JsonResponse({"detail": f"no such endpoint: {request.path}", "field": None}, status=404)


urlpatterns = [
    path("api/v1/", api.urls),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("admin/", admin.site.urls),
    path("", include("reduction_app.urls")),
]
