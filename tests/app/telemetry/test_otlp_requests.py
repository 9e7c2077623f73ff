"""What the OTLP endpoint answers to each kind of request, through Django's test client:
the OTLP status codes, partial success for refused spans, gzip, and error bodies in the
request's own encoding."""

from __future__ import annotations

import gzip
import json
import time
from typing import Any

import pytest
from django.db import connections
from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from reduction_app.models import TelemetryRecord
from tests.app.support import ApiClient, make_api

TRACES = "/api/v1/otel/v1/traces"
LOGS = "/api/v1/otel/v1/logs"
TRACE_ID = "5b8efff798038103d269b633813fc60c"


def span(n: int, **extra: Any) -> dict[str, Any]:
    return {
        "traceId": TRACE_ID,
        "spanId": f"{n:016x}",
        "name": "chat",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + n),
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
        **extra,
    }


def request_json(*spans: dict[str, Any]) -> dict[str, Any]:
    return {
        "resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": list(spans)}]}]
    }


def send(
    api: ApiClient,
    body: bytes,
    *,
    content_type: str = "application/json",
    path: str = TRACES,
    **headers: str,
) -> Any:
    return api.client.post(
        path, body, content_type=content_type, headers={**api.headers, **headers}
    )


def test_json_export_is_answered_with_an_empty_export_response(api: ApiClient) -> None:
    response = send(api, json.dumps(request_json(span(1), span(2))).encode())
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"
    assert response.json() == {}
    assert TelemetryRecord.objects.filter(workspace=api.workspace, kind="span").count() == 2


def test_protobuf_export_is_answered_in_protobuf(api: ApiClient) -> None:
    message = ExportTraceServiceRequest()
    entry = message.resource_spans.add().scope_spans.add().spans.add()
    entry.trace_id = bytes.fromhex(TRACE_ID)
    entry.span_id = bytes.fromhex("00000000000000ab")
    entry.name = "chat"
    response = send(api, message.SerializeToString(), content_type="application/x-protobuf")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-protobuf"
    ExportTraceServiceResponse.FromString(response.content)
    [row] = TelemetryRecord.objects.filter(workspace=api.workspace)
    assert row.key == TRACE_ID + "00000000000000ab"
    [stored] = json.loads(row.data)["scopeSpans"][0]["spans"]
    assert stored["spanId"] == "00000000000000ab"  # hex, as OTLP/JSON has it


def test_gzip_bodies_are_read(api: ApiClient) -> None:
    body = gzip.compress(json.dumps(request_json(span(1))).encode())
    assert send(api, body, Content_Encoding="gzip").status_code == 200
    assert TelemetryRecord.objects.filter(workspace=api.workspace).count() == 1


def test_the_same_span_twice_is_stored_once(api: ApiClient) -> None:
    body = json.dumps(request_json(span(1))).encode()
    assert send(api, body).status_code == 200
    assert send(api, body).status_code == 200
    assert TelemetryRecord.objects.filter(workspace=api.workspace).count() == 1


def test_a_bad_span_is_refused_alone_with_partial_success(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_OTLP_MAX_VALUE_CHARS = 50
    long_value = {"key": "gen_ai.input.messages", "value": {"stringValue": "x" * 51}}
    body = request_json(span(1), span(2, spanId="zz"), span(3, attributes=[long_value]))
    response = send(api, json.dumps(body).encode())
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert partial["rejectedSpans"] == "2"
    assert (
        "spans[1]: a span needs a traceId of 32 and a spanId of 16 hex digits"
        in (partial["errorMessage"])
    )
    assert "attribute 'gen_ai.input.messages' is over 50 characters" in partial["errorMessage"]
    assert TelemetryRecord.objects.filter(workspace=api.workspace).count() == 1


def test_partial_success_in_protobuf(api: ApiClient) -> None:
    body = json.dumps(request_json(span(2, spanId=""))).encode()
    response = send(api, body)
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"
    message = ExportTraceServiceRequest()
    message.resource_spans.add().scope_spans.add().spans.add().name = "no ids"
    response = send(api, message.SerializeToString(), content_type="application/x-protobuf")
    answer = MessageToDict(ExportTraceServiceResponse.FromString(response.content))
    assert answer["partialSuccess"]["rejectedSpans"] == "1"


@pytest.mark.parametrize(
    ("body", "content_type", "headers", "status", "message"),
    [
        (b"{", "application/json", {}, 400, "request body is not JSON"),
        (b"[]", "application/json", {}, 400, "expected an OTLP traces export request object"),
        (b"{}", "text/plain", {}, 415, "unsupported content type 'text/plain'"),
        (b"{}", "application/json", {"Content-Encoding": "br"}, 415, "unsupported content"),
        (b"not gzip", "application/json", {"Content-Encoding": "gzip"}, 400, "not valid gzip"),
        (
            json.dumps({"resourceSpans": {}}).encode(),
            "application/json",
            {},
            400,
            "resourceSpans: expected a list",
        ),
    ],
)
def test_unreadable_requests_are_refused_whole(
    api: ApiClient,
    body: bytes,
    content_type: str,
    headers: dict[str, str],
    status: int,
    message: str,
) -> None:
    response = send(api, body, content_type=content_type, **headers)
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    error = response.json()
    assert message in error["message"]
    assert isinstance(error["code"], int)
    assert not TelemetryRecord.objects.exists()


def test_errors_of_protobuf_requests_are_statuses_in_protobuf(api: ApiClient) -> None:
    response = send(api, b"\xff\xff", content_type="application/x-protobuf")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/x-protobuf"
    # google.rpc.Status: field 1 the code (3, INVALID_ARGUMENT), field 2 the message.
    assert response.content[:2] == b"\x08\x03"
    assert b"not an OTLP traces export request" in response.content


def test_too_many_spans_in_one_request(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_OTLP_MAX_RECORDS = 2
    response = send(api, json.dumps(request_json(span(1), span(2), span(3))).encode())
    assert response.status_code == 413
    assert "REDUCTION_OTLP_MAX_RECORDS" in response.json()["message"]
    assert not TelemetryRecord.objects.exists()


def test_a_gzip_bomb_stops_at_the_body_limit(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_REQUEST_BYTES = 10_000
    body = gzip.compress(b" " * 1_000_000)
    response = send(api, body, Content_Encoding="gzip")
    assert response.status_code == 413
    assert "once decompressed" in response.json()["message"]


def test_no_key_is_401(api: ApiClient) -> None:
    response = api.client.post(TRACES, b"{}", content_type="application/json")
    assert response.status_code == 401


def test_log_records_are_stored_once_each(api: ApiClient) -> None:
    record = {
        "timeUnixNano": "1700000000000000000",
        "traceId": TRACE_ID,
        "spanId": "00000000000000ab",
        "eventName": "gen_ai.user.message",
        "body": {"kvlistValue": {"values": [{"key": "content", "value": {"stringValue": "hi"}}]}},
    }
    body = {
        "resourceLogs": [{"resource": {}, "scopeLogs": [{"scope": {}, "logRecords": [record]}]}]
    }
    response = send(api, json.dumps(body).encode(), path=LOGS)
    assert response.status_code == 200
    assert response.json() == {}
    send(api, json.dumps(body).encode(), path=LOGS)
    [row] = TelemetryRecord.objects.filter(workspace=api.workspace)
    assert (row.kind, row.trace_id) == ("log", TRACE_ID)
    response = send(api, json.dumps({"resourceLogs": []}).encode(), path=LOGS)
    assert MessageToDict(ExportLogsServiceResponse()) == response.json()


def test_a_locked_database_answers_503_at_once(transactional_db: None, settings: Any) -> None:
    """Another transaction holds the lock the export needs: the exporter is told to send
    again (503, Retry-After) within the wait allowed, not kept past its own timeout, and
    nothing is stored; once the lock goes, the same request is stored."""
    settings.REDUCTION_OTLP_LOCK_WAIT_SECONDS = 1
    api = make_api("alpha")
    # The key was just used: its check writes nothing now.
    assert send(api, json.dumps(request_json(span(9))).encode()).status_code == 200
    body = json.dumps(request_json(span(1))).encode()
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            if other.vendor == "sqlite":
                cursor.execute("BEGIN IMMEDIATE")
            else:
                cursor.execute("BEGIN")
                cursor.execute(
                    f"LOCK TABLE {TelemetryRecord._meta.db_table} IN SHARE ROW EXCLUSIVE MODE"
                )
            started = time.monotonic()
            response = send(api, body)
            waited = time.monotonic() - started
            cursor.execute("ROLLBACK")
    finally:
        other.close()
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert "the database failed" in response.json()["message"]
    assert waited < 5
    assert TelemetryRecord.objects.count() == 1
    assert send(api, body).status_code == 200
    assert TelemetryRecord.objects.count() == 2
