"""What Django answers by itself, before or around a view: 400, 403, 404, 405 and 500.

Under ``/api/`` each is the API's JSON error (:func:`json_error`, the one place that
shape is written outside django-ninja); elsewhere Django's HTML page. The text never
repeats a header the client sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.views import defaults

__all__ = [
    "ApiMethodNotAllowedMiddleware",
    "bad_request",
    "is_api",
    "json_error",
    "page_not_found",
    "permission_denied",
    "server_error",
]


def json_error(status: int, detail: str, field: str | None = None) -> HttpResponse:
    """The API's error answer, outside django-ninja."""
    body = {"detail": detail, "field": field}
    return HttpResponse(json.dumps(body), status=status, content_type="application/json")


def is_api(request: HttpRequest) -> bool:
    """Whether ``request`` is one of the REST API's, answered in JSON."""
    return request.path.startswith("/api/")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, DisallowedHost):
        detail = "the request's Host header names a host this server does not serve"
    else:
        detail = "bad request"
    return json_error(HTTPStatus.BAD_REQUEST, detail)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api(request):
        return defaults.permission_denied(request, exception)
    return json_error(HTTPStatus.FORBIDDEN, "forbidden")


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_api(request):
        return defaults.page_not_found(request, exception)
    return json_error(HTTPStatus.NOT_FOUND, f"no such endpoint: {request.path}")


def server_error(request: HttpRequest) -> HttpResponse:
    if not is_api(request):
        return defaults.server_error(request)
    return json_error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal server error")


class ApiMethodNotAllowedMiddleware:
    """An API address asked with a method it does not take answers the JSON error,
    naming the methods it takes (sorted, in the detail and in ``Allow``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != HTTPStatus.METHOD_NOT_ALLOWED or not is_api(request):
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        allowed = ", ".join(sorted(m.strip() for m in response.get("Allow", "").split(",") if m))
        detail = f"method {request.method} is not allowed here; allowed: {allowed}"
        answer = json_error(HTTPStatus.METHOD_NOT_ALLOWED, detail)
        answer["Allow"] = allowed
        return answer
