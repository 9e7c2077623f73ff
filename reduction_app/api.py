"""The REST API under ``/api/v1/``: the engine for agents, and the records for people.

Operations parse input, call one service or selector, and answer. Every error is
JSON ``{"detail": ..., "field": ...}`` with a 4xx status; engine errors are mapped
once here. Authentication is ``Authorization: Bearer <key>``; a key sees only its
own workspace, and another workspace's records are answered with 404.
"""

from __future__ import annotations

from http import HTTPStatus
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer

from reduction_app import engine
from reduction_app.models import ApiKey
from reduction_app.selectors import api_key_authenticate
from reduction_app.services import ServiceError


class ApiKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        return api_key_authenticate(raw_key=token)


api = NinjaAPI(
    title="Reduction Lab API",
    version="1",
    description="The Reduction Lab engine over HTTP: truncate tool output, clear old tool "
    "results, read offloaded files back, and browse what was recorded.",
    urls_namespace="api",
    auth=ApiKeyAuth(),
)


def _error(request: HttpRequest, status: int, detail: str, field: str | None = None) -> HttpResponse:
    return api.create_response(request, {"detail": detail, "field": field}, status=status)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = _error(request, HTTPStatus.UNAUTHORIZED, "missing or invalid API key")
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0] if exc.errors else {}
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "payload")]
    field = ".".join(loc) or None
    message = first.get("msg", "invalid input")
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, f"{field}: {message}" if field else message, field)


@api.exception_handler(engine.ConfigError)
def _bad_config(request: HttpRequest, exc: engine.ConfigError) -> HttpResponse:
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, f"config.{exc}", f"config.{exc.field}")


@api.exception_handler(engine.FormatError)
def _bad_format(request: HttpRequest, exc: engine.FormatError) -> HttpResponse:
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, str(exc), exc.where or None)


@api.exception_handler(engine.PathEscapeError)
def _bad_path(request: HttpRequest, exc: engine.PathEscapeError) -> HttpResponse:
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, str(exc), "path")


@api.exception_handler(engine.OffloadError)
def _offload_failed(request: HttpRequest, exc: engine.OffloadError) -> HttpResponse:
    # The storage failed: nothing was recorded and the client's messages stand as sent.
    return _error(request, HTTPStatus.SERVICE_UNAVAILABLE, str(exc))


@api.exception_handler(engine.ReductionError)
def _engine_refused(request: HttpRequest, exc: engine.ReductionError) -> HttpResponse:
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, str(exc))


@api.exception_handler(ServiceError)
def _conflict(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    return _error(request, HTTPStatus.CONFLICT, str(exc))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    return _error(request, exc.status_code, str(exc.message))


def _register_routers() -> None:
    from reduction_app.api_engine import router as engine_router
    from reduction_app.api_records import router as records_router

    api.add_router("", engine_router)
    api.add_router("", records_router)


_register_routers()
