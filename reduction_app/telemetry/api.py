"""OTLP/HTTP under ``/api/v1/otel``: point an agent's OpenTelemetry exporter at it
(``OTEL_EXPORTER_OTLP_ENDPOINT=…/api/v1/otel``) and its traces and logs are recorded in
the key's workspace, then read into conversations by the task workers."""

# No `from __future__ import annotations`: django-ninja reads these signatures at import
# time.

import logging
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponse
from ninja import Field, Router, Schema
from ninja.pagination import paginate

from reduction_app.cursors import LIST_ERRORS, PAGE, IdCursorPagination
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import TelemetryGroup
from reduction_app.schemas import ErrorOut
from reduction_app.telemetry.otlp import (
    JSON,
    PROTOBUF,
    RequestProblem,
    Signal,
    answer,
    error_body,
    media_type,
    read_request,
)
from reduction_app.telemetry.services import telemetry_store

logger = logging.getLogger(__name__)

router = Router(tags=["telemetry"])

RETRY_AFTER_SECONDS = 5
"""What a 503 asks the exporter to wait before sending the batch again."""

_DESCRIPTION = (
    "An OTLP/HTTP export request, protobuf (`application/x-protobuf`) or JSON "
    "(`application/json`), gzip allowed (`Content-Encoding: gzip`). Answers an OTLP export "
    "response in the same encoding; records it refused are counted in its partial success. "
    "Errors are `google.rpc.Status` bodies; 429 and 503 carry `Retry-After`."
)


_BINARY = {"type": "string", "format": "binary"}
_STATUS = {
    "type": "object",
    "description": "A google.rpc.Status: the gRPC `code` and the `message`. A body over the "
    "size limit is refused before the endpoint reads it, in the API's own error shape "
    "(`detail`, `field`).",
    "properties": {
        "code": {"type": "integer"},
        "message": {"type": "string"},
        "detail": {"type": "string"},
        "field": {"type": ["string", "null"]},
    },
}


# What the app answers before the endpoint runs, in its own error shape: no key (401), a
# chunked body the server cannot read (411), a NUL character in the address (422).
_BEFORE = {401: ErrorOut, 411: ErrorOut, 422: ErrorOut}


def _openapi(signal: Signal) -> dict[str, Any]:
    """The request and answers in both encodings, which django-ninja cannot describe."""
    answer = {
        "type": "object",
        "description": f"An OTLP {signal} export response; `partialSuccess` counts the "
        "records refused, with why.",
    }
    status = {"content": {PROTOBUF: {"schema": _BINARY}, JSON: {"schema": _STATUS}}}
    return {
        "requestBody": {
            "required": True,
            "content": {
                PROTOBUF: {"schema": _BINARY},
                JSON: {"schema": {"type": "object", "description": f"OTLP/JSON {signal}"}},
            },
        },
        "responses": {
            200: {
                "description": "Stored (the records it refused are counted in it).",
                "content": {PROTOBUF: {"schema": _BINARY}, JSON: {"schema": answer}},
            },
            400: {"description": "The body cannot be read.", **status},
            413: {"description": "Too large, or too many records.", **status},
            415: {"description": "Another content type or encoding.", **status},
            503: {"description": "The database failed: send it again.", **status},
        },
    }


def _export(request: ApiRequest, signal: Signal) -> HttpResponse:
    content_type = request.headers.get("Content-Type", "")
    try:
        received = read_request(
            signal,
            request.body,
            content_type=content_type,
            content_encoding=request.headers.get("Content-Encoding", ""),
            max_bytes=settings.REDUCTION_MAX_REQUEST_BYTES,
            max_records=settings.REDUCTION_OTLP_MAX_RECORDS,
            max_value_chars=settings.REDUCTION_OTLP_MAX_VALUE_CHARS,
        )
    except RequestProblem as exc:
        return _error(content_type, exc.status, str(exc))
    try:
        telemetry_store(workspace=api_workspace(request), signal=signal, records=received.records)
    except DatabaseError as exc:
        # Nothing was stored: the exporter keeps the batch and sends it again.
        logger.error("OTLP %s: the database failed (%s)", signal, type(exc).__name__)
        response = _error(content_type, 503, f"the database failed ({type(exc).__name__})")
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    body = answer(signal, content_type, received.rejected, received.problems)
    return HttpResponse(body, content_type=_answer_type(content_type))


def _answer_type(content_type: str) -> str:
    return PROTOBUF if media_type(content_type) == PROTOBUF else JSON


def _error(content_type: str, status: int, message: str) -> HttpResponse:
    body, kind = error_body(content_type, status, message)
    return HttpResponse(body, status=status, content_type=kind)


@router.post(
    "/otel/v1/traces",
    response={200: None, **_BEFORE},
    url_name="otlp_traces",
    summary="Receive traces (OTLP/HTTP)",
    description=_DESCRIPTION,
    openapi_extra=_openapi("traces"),
)
def otlp_traces(request: ApiRequest) -> HttpResponse:
    return _export(request, "traces")


@router.post(
    "/otel/v1/logs",
    response={200: None, **_BEFORE},
    url_name="otlp_logs",
    summary="Receive log records (OTLP/HTTP)",
    description=_DESCRIPTION,
    openapi_extra=_openapi("logs"),
)
def otlp_logs(request: ApiRequest) -> HttpResponse:
    return _export(request, "logs")


class TracedSessionOut(Schema):
    session: str = Field(
        description="What the traces were grouped by: `session:ID` (a session id they "
        "carry), `opening:DIGEST` (calls without one that open alike), or `trace:ID`."
    )
    conversations: list[str] = Field(description="The ids of the conversations read from them.")
    error: str = Field(
        description="Why they could not be read the last time (their conversations are left "
        "as they were); empty when they were."
    )
    updated_at: datetime

    @staticmethod
    def resolve_session(obj: Any) -> str:
        return str(obj.key)


@router.get(
    "/otel/sessions",
    response={200: list[TracedSessionOut], **LIST_ERRORS},
    url_name="otlp_sessions",
    summary="Traced sessions and how they were read",
)
@paginate(IdCursorPagination, **PAGE)
def otlp_sessions(request: ApiRequest, failed: bool = False) -> Any:
    """The sessions read from traces sent to `/otel`, newest first: the conversations
    each made, and why one could not be read (`failed=true`: only those)."""
    rows = TelemetryGroup.objects.filter(workspace=api_workspace(request))
    return rows.exclude(error="") if failed else rows
