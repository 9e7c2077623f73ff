"""The Content-Security-Policy header, on every response, as Django middleware.

Django 5.2 has no CSP support of its own (6.0 adds it). Scripts and styles come only
from files of this site, so a tool output that slipped through the escaping could still
not run a script (the policy and why the pages need no more: ``docs/deploying.md``).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

__all__ = ["ContentSecurityPolicyMiddleware"]


class ContentSecurityPolicyMiddleware:
    """Set ``Content-Security-Policy`` to ``settings.REDUCTION_CONTENT_SECURITY_POLICY``;
    a view that sets its own header keeps it.

    The pages need nothing beyond their own origin: htmx, Chart.js and the dashboard's
    script are static files served locally, charts read their data from ``json_script``
    blocks (JSON, never run), and no template has an inline script, style or event handler.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.policy: str = settings.REDUCTION_CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = self.policy
        return response
