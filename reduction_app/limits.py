"""Limits the app puts on requests before any view runs, as Django middleware: the size
of a REST API body, and no NUL character in an address. (The engine's reduction
middleware is ``reduction_app.engine``.)"""

from __future__ import annotations

import json
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse


def _json_error(status: int, detail: str, field: str | None = None) -> HttpResponse:
    body = {"detail": detail, "field": field}
    return HttpResponse(json.dumps(body), status=status, content_type="application/json")


def _nul_in_address(request: HttpRequest) -> tuple[str | None] | None:
    """Where the address holds a NUL character: ``(None,)`` in its path, ``(name,)`` in a
    query parameter, ``None`` nowhere. PostgreSQL refuses NUL in text (Django raises
    ``ValueError`` before the query is sent), so a lookup by such a value would be a 500
    there and a plain miss on SQLite; refusing it first answers alike on both."""
    if "\x00" in request.path:
        return (None,)
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            return (name.replace("\x00", ""),)
    return None


class ApiRequestSizeMiddleware:
    """Answer 413 with a JSON error, before reading the body, when an API request is too
    big; refuse an address with a NUL character (an API request with 422 and a JSON error,
    a page with 400)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = request.path.startswith("/api/")
        where = _nul_in_address(request)
        if where is not None:
            if not api:
                raise BadRequest("NUL character in the address")
            (name,) = where
            if name is None:
                return _json_error(422, "the address must not contain NUL characters")
            return _json_error(422, f"{name}: must not contain NUL characters", name)
        if api:
            limit = settings.REDUCTION_MAX_REQUEST_BYTES
            try:
                size = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                size = 0
            if size > limit:
                detail = f"request body of {size} bytes is over the limit of {limit} bytes"
                return _json_error(413, detail)
        return self.get_response(request)
