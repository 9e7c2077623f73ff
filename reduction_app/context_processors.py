"""Template context every dashboard page gets: the navigation and the user's workspaces."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from reduction_app.dashboard import workspaces_for

NAV = (
    ("/", "Overview"),
    ("/conversations/", "Conversations"),
    ("/imports/", "Import"),
    ("/events/", "Events"),
    ("/files/", "Files"),
    ("/configs/", "Configs"),
    ("/prices/", "Prices"),
    ("/compare/", "Compare"),
    ("/tune/", "Tune"),
    ("/sweep/", "Sweep"),
    ("/simulations/", "Simulations"),
    ("/keys/", "API keys"),
)


def dashboard(request: HttpRequest) -> dict[str, Any]:
    path = request.path
    nav = [
        (href, label, path == href if href == "/" else path.startswith(href)) for href, label in NAV
    ]
    return {"nav": nav, "workspaces": list(workspaces_for(request.user))}
