"""URL routes of the Reduction Lab site."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.templatetags.static import static
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from reduction_app import error_pages
from reduction_app.api import api
from reduction_app.mcp.views import mcp_endpoint


# Exempt from CSRF: it changes nothing, and a POST or DELETE to an unknown address would
# otherwise be answered with Django's HTML 403 page instead of this JSON 404.
@csrf_exempt
def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Unknown API addresses answer in the API's JSON error shape, not an HTML page."""
    return error_pages.json_error(404, f"no such endpoint: {request.path}")


@require_safe
def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """Browsers, feed readers and bookmarks ask for /favicon.ico whatever a page links;
    they get the icon the pages link (temporarily: its static name changes with it)."""
    return HttpResponseRedirect(static("reduction_app/favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon),
    path("api/v1/", api.urls),
    path("mcp", mcp_endpoint, name="mcp"),
    re_path(r"^api/(?P<rest>.*)$", api_not_found),
    path("admin/", admin.site.urls),
    path("", include("reduction_app.urls")),
]

# What Django answers by itself: JSON under /api/, its HTML pages elsewhere.
handler400 = error_pages.bad_request
handler403 = error_pages.permission_denied
handler404 = error_pages.page_not_found
handler500 = error_pages.server_error
