"""What a request carries once the app has looked at it, as types.

The attributes are set at run time by the layers each class names; these classes only
tell the type checker (and the reader) that they are there.
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from reduction_app.models import ApiKey, Workspace

__all__ = ["ApiRequest", "PageRequest", "api_workspace"]


class PageRequest(HttpRequest):
    """A signed-in dashboard request, with the workspace shown: ``workspace`` is set by
    ``dashboard.workspace_view`` and ``htmx`` by django-htmx's middleware."""

    workspace: Workspace
    htmx: HtmxDetails


class ApiRequest(HttpRequest):
    """An authenticated REST API request: ``auth`` is the API key django-ninja's
    authentication returned."""

    auth: ApiKey


def api_workspace(request: ApiRequest) -> Workspace:
    """The workspace of the key that authenticated ``request``: every operation's scope."""
    return request.auth.workspace
