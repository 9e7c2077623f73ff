"""The API keys page (``/keys/``): the workspace's REST API keys, a new one (its secret
shown once, in the answer to the POST that made it), and revoking one.

Workspaces have no roles: every member may do all the dashboard allows in a workspace
(edit and delete configs and prices, import, simulate), so every member may list, create
and revoke its keys. Another workspace's keys are not found (404), as its records are.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.errors import ServiceError
from reduction_app.http import PageRequest
from reduction_app.models import ApiKey
from reduction_app.workspaces.selectors import api_key_get, api_key_list
from reduction_app.workspaces.services import (
    KEY_NAME_MAX_CHARS,
    LAST_USED_RESOLUTION_SECONDS,
    api_key_create,
    api_key_revoke,
)


def _page(request: PageRequest, status: int = HTTPStatus.OK, **extra: Any) -> HttpResponse:
    context = {
        "keys": api_key_list(workspace=request.workspace),
        "name_max_chars": KEY_NAME_MAX_CHARS,
        "last_used_seconds": LAST_USED_RESOLUTION_SECONDS,
        **extra,
    }
    response = render_page(request, "reduction_app/api_keys.html", context)
    response.status_code = status
    return response


def _key_or_404(request: PageRequest, key_id: int) -> ApiKey:
    key = api_key_get(workspace=request.workspace, key_id=key_id)
    if key is None:
        raise Http404("no such key")
    return key


@require_GET
@workspace_view
def api_key_list_view(request: PageRequest) -> HttpResponse:
    return _page(request)


@never_cache
@require_POST
@workspace_view
def api_key_new(request: PageRequest) -> HttpResponse:
    """Create a key and answer with the page showing its secret: the only time it is
    shown (only its digest is stored), in a response no cache keeps."""
    name = request.POST.get("name", "")
    try:
        key, raw = api_key_create(workspace=request.workspace, name=name)
    except ServiceError as exc:
        return _page(request, HTTPStatus.BAD_REQUEST, name=name, error=str(exc))
    return _page(request, HTTPStatus.CREATED, created=key, secret=raw)


@require_http_methods(["GET", "POST"])
@workspace_view
def api_key_revoke_view(request: PageRequest, key_id: int) -> HttpResponse:
    """GET asks for confirmation; POST revokes the key, from the next request on."""
    key = _key_or_404(request, key_id)
    if request.method == "POST":
        api_key_revoke(key=key)
        return redirect("api_keys")
    return render_page(request, "reduction_app/api_key_revoke.html", {"key": key})


urlpatterns = [
    path("keys/", api_key_list_view, name="api_keys"),
    path("keys/new/", api_key_new, name="api_key_new"),
    path("keys/<int:key_id>/revoke/", api_key_revoke_view, name="api_key_revoke"),
]
