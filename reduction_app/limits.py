"""Limits the app puts on requests before any view runs, as Django middleware: the size
of a REST API body. (The engine's reduction middleware is ``reduction_app.engine``.)"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ApiRequestSizeMiddleware:
    """Answer 413 with a JSON error, before reading the body, when an API request is too big."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            limit = settings.REDUCTION_MAX_REQUEST_BYTES
            try:
                size = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                size = 0
            if size > limit:
                body = {
                    "detail": f"request body of {size} bytes is over the limit of {limit} bytes",
                    "field": None,
                }
                return HttpResponse(json.dumps(body), status=413, content_type="application/json")
        return self.get_response(request)
