"""The REST API under ``/api/v1/``: the engine for agents, and the records for people.

Operations parse input, call one service or selector, and answer. Engine and database
errors are mapped here, once, to one JSON error shape (the codes: ``docs/api.md``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from http import HTTPStatus
from typing import Any, cast

from django.db import DatabaseError, DataError, IntegrityError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.operation import Operation
from ninja.parser import Parser
from ninja.security import HttpBearer
from ninja.types import DictStrAny

from reduction_app import engine
from reduction_app.engine import formats
from reduction_app.errors import LimitExceeded, QuotaExceeded, ServiceError, StaleRevision
from reduction_app.models import ApiKey
from reduction_app.renderers import MsgspecJSONRenderer
from reduction_app.workspaces.rates import rate_limit_count
from reduction_app.workspaces.services import api_key_authenticate

logger = logging.getLogger(__name__)


class ApiKeyAuth(HttpBearer):
    def authenticate(self, request: HttpRequest, token: str) -> ApiKey | None:
        key = api_key_authenticate(raw_key=token)
        if key is not None:
            # Raises QuotaExceeded (429) past the workspace's requests a minute.
            rate_limit_count(workspace=key.workspace)
        return key


# The operation ids published with v1 of the API (generated clients name their methods
# after them). django-ninja derives an id from the module a view lives in, so ids would
# follow every move of the code; these keep the published ones: the prefix of each
# router's module, then the view's name.
OPERATION_ID_PREFIXES = {
    "reduction_app.reductions.api": "reduction_app_api_engine",
    "reduction_app.records.api": "reduction_app_api_records",
    "reduction_app.conversations.api": "reduction_app_api_records",
    "reduction_app.configs.api": "reduction_app_api_records",
    "reduction_app.simulations.api": "reduction_app_api_simulations",
    "reduction_app.telemetry.api": "reduction_app_api_telemetry",
}


class BytesJsonParser(Parser):
    """django-ninja's parser, decoding the body straight from its bytes.

    ``json.loads(request.body)`` made one ``str`` of a whole conversation first (at 2
    bytes a character as soon as one character is beyond Latin-1);
    ``formats.json_loads_checked`` returns the same values and raises the same errors
    without it, so a body django-ninja could not parse still answers 400 "Cannot parse
    request body", with the same reason under DEBUG. Two kinds of body are exceptions,
    answered as the 422 of a field: one holding a number no JSON answer can give back
    (``NaN``, ``Infinity``, ``1e999``) or an integer longer than Python converts, and one
    nested too deeply to decode. The FormatError raised here names the field (or where
    the body passes ``MAX_JSON_DEPTH``), and the handler of the 400 answers it.
    """

    def parse_body(self, request: HttpRequest) -> DictStrAny:
        try:
            return cast(DictStrAny, formats.json_loads_checked(request.body))
        except RecursionError as exc:
            where = formats.nesting_path(request.body, formats.MAX_JSON_DEPTH)
            if where is None:
                raise
            raise formats.too_deep(where) from exc


class ReductionLabAPI(NinjaAPI):
    """The NinjaAPI, with operation ids that do not depend on where the code lives, and
    its OpenAPI document built once per process (building it takes a quarter of a
    second; the interactive docs fetch it on every visit)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._documents: dict[str, OpenAPISchema] = {}

    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: DictStrAny | None = None
    ) -> OpenAPISchema:
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        document = self._documents.get(path_prefix)
        if document is None:
            document = super().get_openapi_schema(path_prefix=path_prefix)
            self._documents[path_prefix] = document
        # A copy: the caller may change what it is given.
        return copy.deepcopy(document)

    def get_openapi_operation_id(self, operation: Operation) -> str:
        view = operation.view_func
        return f"{OPERATION_ID_PREFIXES[view.__module__]}_{view.__name__}"


api = ReductionLabAPI(
    title="Reduction Lab API",
    version="1",
    description="The Reduction Lab engine over HTTP: truncate tool output, clear old tool "
    "results, read offloaded files back, and browse what was recorded.",
    urls_namespace="api",
    auth=ApiKeyAuth(),
    parser=BytesJsonParser(),
    renderer=MsgspecJSONRenderer(),
)


def _error(
    request: HttpRequest, status: int, detail: str, field: str | None = None
) -> HttpResponse:
    """The one error shape, ``{"detail": ..., "field": ...}``: a 4xx for what the request
    got wrong, 429 over a workspace's quota or rate, 503 when storage or the database fails."""
    return api.create_response(request, {"detail": detail, "field": field}, status=status)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = _error(request, HTTPStatus.UNAUTHORIZED, "missing or invalid API key")
    response["WWW-Authenticate"] = "Bearer"
    return response


# Where a parameter came from: the first element of every pydantic location.
_SOURCES = frozenset({"body", "query", "path", "header", "cookie", "form", "file"})
_BODY_PARAM = "payload"
# Union members show up in locations under their type's name ("str", "PartsIn",
# "list[dict[str,any]]", "function-wrap[...]"); none of our field names look like these.
_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none"})


def _is_type_tag(part: str) -> bool:
    return part in _TYPE_TAGS or part[:1].isupper() or "[" in part or "(" in part


def field_path(loc: Sequence[object]) -> str | None:
    """``("body", "payload", "result", "str", "parts", 0)`` → ``"result.parts[0]"``, the
    spelling the engine's format errors use too."""
    parts = list(loc)
    if parts and parts[0] in _SOURCES:
        source = parts.pop(0)
        if source == "body" and parts and parts[0] == _BODY_PARAM:
            parts.pop(0)
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _is_type_tag(str(part)):
            out += f".{part}" if out else str(part)
    return out or None


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [e for e in exc.errors if isinstance(e, dict)]
    if not errors:
        return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, "invalid input")
    first = errors[0]
    if "msg" not in first:
        # django-ninja's own errors are plain {"<field>": "<message>"} dicts.
        name, message = next(iter(first.items()))
        return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, f"{name}: {message}", str(name))
    # A union field fails once per member; the member that got furthest says the most.
    # loc[:3] is the source, the body parameter and the field (a query parameter's loc is
    # shorter, and query parameters are no unions).
    loc = tuple(first.get("loc", ()))
    same_field = [e for e in errors if "msg" in e and tuple(e.get("loc", ()))[:3] == loc[:3]]
    first = max(same_field, key=lambda e: len(e.get("loc", ())))
    field = field_path(first.get("loc", ()))
    message = first["msg"]
    if field is not None:
        detail = f"{field}: {message}"
    elif loc[:1] == ("body",):
        detail = f"request body: {message}"
    else:
        detail = message
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, detail, field)


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
    if isinstance(exc.cause, LimitExceeded):
        # The storage refused one write too many (REDUCTION_MAX_OFFLOADS): the request's
        # fault, not the storage's.
        return _over_limit(request, exc.cause)
    # The storage failed: nothing was recorded and the client's messages stand as sent.
    # The cause is named by its type only: its message may hold the server's own paths.
    cause = type(exc.cause).__name__ if isinstance(exc.cause, BaseException) else exc.cause
    detail = f"{exc.phase}: failed to write {exc.path}: the offload storage failed ({cause})"
    return _error(request, HTTPStatus.SERVICE_UNAVAILABLE, detail)


@api.exception_handler(OSError)
def _storage_failed(request: HttpRequest, exc: OSError) -> HttpResponse:
    # Reading offloads back (or checking a path is free) went to a storage that failed.
    detail = f"the offload storage failed ({type(exc).__name__})"
    return _error(request, HTTPStatus.SERVICE_UNAVAILABLE, detail)


@api.exception_handler(DataError)
def _unstorable(request: HttpRequest, exc: DataError) -> HttpResponse:
    # PostgreSQL refuses what SQLite takes: text over a column's length, NUL characters.
    detail = "a value cannot be stored (too long for its field, or holding a NUL character)"
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, detail)


@api.exception_handler(IntegrityError)
def _raced(request: HttpRequest, exc: IntegrityError) -> HttpResponse:
    # Two requests wrote the same row at once and the database kept the first.
    logger.warning("%s %s: %s", request.method, request.path, type(exc).__name__)
    detail = "another request changed the same records at the same time; send this one again"
    return _error(request, HTTPStatus.CONFLICT, detail)


@api.exception_handler(DatabaseError)
def _database_failed(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
    # The transaction was rolled back and the staged offloads removed: nothing is recorded
    # and the client's messages stand as sent. The log names the error's type only: its
    # message may quote the values of the statement, tool output included.
    logger.error(
        "%s %s: the database failed (%s)", request.method, request.path, type(exc).__name__
    )
    detail = f"the database failed ({type(exc).__name__}); nothing was recorded"
    return _error(request, HTTPStatus.SERVICE_UNAVAILABLE, detail)


@api.exception_handler(engine.ReductionError)
def _engine_refused(request: HttpRequest, exc: engine.ReductionError) -> HttpResponse:
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, str(exc))


@api.exception_handler(QuotaExceeded)
def _over_quota(request: HttpRequest, exc: QuotaExceeded) -> HttpResponse:
    response = _error(request, HTTPStatus.TOO_MANY_REQUESTS, str(exc))
    if exc.retry_after is not None:
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(LimitExceeded)
def _over_limit(request: HttpRequest, exc: LimitExceeded) -> HttpResponse:
    return _error(request, HTTPStatus.UNPROCESSABLE_ENTITY, str(exc), exc.field)


@api.exception_handler(StaleRevision)
def _stale(request: HttpRequest, exc: StaleRevision) -> HttpResponse:
    body = {"detail": str(exc), "field": "previous_revision", "revision": exc.current}
    return api.create_response(request, body, status=HTTPStatus.CONFLICT)


@api.exception_handler(ServiceError)
def _conflict(request: HttpRequest, exc: ServiceError) -> HttpResponse:
    return _error(request, HTTPStatus.CONFLICT, str(exc))


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if isinstance(exc.__cause__, engine.FormatError):
        # django-ninja makes every error of the body parser a 400; see BytesJsonParser.
        return _bad_format(request, exc.__cause__)
    return _error(request, exc.status_code, str(exc.message), getattr(exc, "field", None))


def _register_routers() -> None:
    # Imported here: each noun's router imports this module's error types and the API.
    from reduction_app.configs.api import router as configs_router
    from reduction_app.conversations.api import router as conversations_router
    from reduction_app.records.api import router as records_router
    from reduction_app.reductions.api import router as reductions_router
    from reduction_app.simulations.api import router as simulations_router
    from reduction_app.telemetry.api import router as telemetry_router

    for router in (
        reductions_router,
        records_router,
        conversations_router,
        configs_router,
        simulations_router,
        telemetry_router,
    ):
        api.add_router("", router)


_register_routers()
