"""OTLP/HTTP bodies: an export request, protobuf or JSON, gzipped or not, read into the
OTLP/JSON objects a trace file holds (ids in hex); and the answers OTLP expects back, in
the request's own encoding."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

__all__ = [
    "JSON",
    "PROTOBUF",
    "Received",
    "Record",
    "RequestProblem",
    "Signal",
    "answer",
    "error_body",
    "media_type",
    "read_request",
]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

Signal = Literal["traces", "logs"]

# Per signal: the request's protobuf class, its top-level list, the scope list in each of
# its entries, the records in each scope, and the answer's class.
_SHAPES: dict[str, tuple[type[Message], str, str, str, type[Message]]] = {
    "traces": (
        ExportTraceServiceRequest,
        "resourceSpans",
        "scopeSpans",
        "spans",
        ExportTraceServiceResponse,
    ),
    "logs": (
        ExportLogsServiceRequest,
        "resourceLogs",
        "scopeLogs",
        "logRecords",
        ExportLogsServiceResponse,
    ),
}
_IDS = ("traceId", "spanId", "parentSpanId")


class RequestProblem(ValueError):
    """A body that cannot be read: ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Record:
    """One span or log record, as a trace file holds it: the OTLP/JSON object of one
    resource entry with one scope entry with this one record."""

    trace_id: str
    span_id: str
    data: dict[str, Any]


@dataclass
class Received:
    """What one request carried: its records, and those refused with why."""

    records: list[Record] = field(default_factory=list)
    rejected: int = 0
    problems: list[str] = field(default_factory=list)


def media_type(content_type: str) -> str:
    """``application/json; charset=utf-8`` → ``application/json``."""
    return content_type.split(";", 1)[0].strip().lower()


def read_request(
    signal: Signal,
    body: bytes,
    *,
    content_type: str,
    content_encoding: str,
    max_bytes: int,
    max_records: int,
    max_value_chars: int,
) -> Received:
    """The records of an export request, each checked on its own: a record with ids that
    are not hex of the right length, or with a value over ``max_value_chars``, is refused
    (counted in ``rejected``, said in ``problems``) and the rest are kept, as OTLP's
    partial success has it. A body that cannot be read at all, or holds more than
    ``max_records`` records, raises :class:`RequestProblem`."""
    raw = _decompressed(body, content_encoding, max_bytes)
    kind = media_type(content_type)
    request_type, top, scopes_key, records_key, _ = _SHAPES[signal]
    if kind == PROTOBUF:
        message = request_type()
        try:
            message.ParseFromString(raw)
        except DecodeError as exc:
            raise RequestProblem(400, f"not an OTLP {signal} export request: {exc}") from None
        data = MessageToDict(message, use_integers_for_enums=True)
        _ids_to_hex(data, top, scopes_key, records_key)
    elif kind == JSON:
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RequestProblem(400, f"request body is not JSON: {exc}") from None
        except RecursionError:
            raise RequestProblem(400, "request body is nested too deeply") from None
        if not isinstance(data, dict):
            raise RequestProblem(400, f"expected an OTLP {signal} export request object")
    else:
        raise RequestProblem(
            415, f"unsupported content type {content_type!r}: send {PROTOBUF} or {JSON}"
        )
    received = Received()
    for where, entry in _records(data, top, scopes_key, records_key):
        if len(received.records) + received.rejected >= max_records:
            raise RequestProblem(
                413,
                f"more than {max_records} {'spans' if signal == 'traces' else 'log records'} "
                "in one request (REDUCTION_OTLP_MAX_RECORDS): export in smaller batches",
            )
        record, problem = _record(signal, where, entry, max_value_chars)
        if record is None:
            received.rejected += 1
            received.problems.append(problem)
        else:
            received.records.append(record)
    return received


def _decompressed(body: bytes, encoding: str, max_bytes: int) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise RequestProblem(415, f"unsupported content encoding {encoding!r}: send gzip")
    wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, max_bytes + 1)
    except zlib.error as exc:
        raise RequestProblem(400, f"request body is not valid {encoding}: {exc}") from None
    if len(out) > max_bytes:
        raise RequestProblem(
            413,
            f"request body is over the limit of {max_bytes} bytes once decompressed "
            "(REDUCTION_MAX_REQUEST_BYTES)",
        )
    if not inflater.eof:
        raise RequestProblem(400, f"request body is not valid {encoding}: it ends early")
    return out


def _ids_to_hex(data: dict[str, Any], top: str, scopes_key: str, records_key: str) -> None:
    """Protobuf's JSON mapping writes ids in base64; OTLP/JSON (and trace files) in hex."""
    for _, entry in _records(data, top, scopes_key, records_key):
        [record] = entry[scopes_key][0][records_key]
        for key in _IDS:
            if record.get(key):
                record[key] = base64.b64decode(record[key]).hex()
        for link in record.get("links", ()):
            for key in ("traceId", "spanId"):
                if link.get(key):
                    link[key] = base64.b64decode(link[key]).hex()


def _records(
    data: Mapping[str, Any], top: str, scopes_key: str, records_key: str
) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each record of ``data`` as its own resource entry (``where`` names its place)."""
    resources = data.get(top, [])
    if not isinstance(resources, list):
        raise RequestProblem(400, f"{top}: expected a list")
    for r, resource in enumerate(resources):
        if not isinstance(resource, dict):
            raise RequestProblem(400, f"{top}[{r}]: expected an object")
        scopes = resource.get(scopes_key, [])
        if not isinstance(scopes, list):
            raise RequestProblem(400, f"{top}[{r}].{scopes_key}: expected a list")
        for s, scope in enumerate(scopes):
            if not isinstance(scope, dict):
                raise RequestProblem(400, f"{top}[{r}].{scopes_key}[{s}]: expected an object")
            records = scope.get(records_key, [])
            if not isinstance(records, list):
                raise RequestProblem(
                    400, f"{top}[{r}].{scopes_key}[{s}].{records_key}: expected a list"
                )
            shell = {k: v for k, v in resource.items() if k != scopes_key}
            scope_shell = {k: v for k, v in scope.items() if k != records_key}
            for k, record in enumerate(records):
                where = f"{top}[{r}].{scopes_key}[{s}].{records_key}[{k}]"
                entry = {**shell, scopes_key: [{**scope_shell, records_key: [record]}]}
                yield where, entry


def _record(
    signal: Signal, where: str, entry: dict[str, Any], max_value_chars: int
) -> tuple[Record | None, str]:
    scopes_key, records_key = _SHAPES[signal][2:4]
    [record] = entry[scopes_key][0][records_key]
    if not isinstance(record, dict):
        return None, f"{where}: expected an object"
    trace_id = record.get("traceId") or ""
    span_id = record.get("spanId") or ""
    if signal == "traces":
        if not _hex(trace_id, 32) or not _hex(span_id, 16):
            return None, f"{where}: a span needs a traceId of 32 and a spanId of 16 hex digits"
    elif (trace_id or span_id) and not (_hex(trace_id, 32) and _hex(span_id, 16)):
        return None, f"{where}: traceId and spanId must be 32 and 16 hex digits"
    too_long = _longest_over(record, max_value_chars)
    if too_long is not None:
        return None, (
            f"{where}: {too_long} is over {max_value_chars} characters "
            "(REDUCTION_OTLP_MAX_VALUE_CHARS)"
        )
    return Record(trace_id.lower(), span_id.lower(), entry), ""


def _hex(value: Any, length: int) -> bool:
    if not isinstance(value, str) or len(value) != length:
        return False
    try:
        return int(value, 16) != 0
    except ValueError:
        return False


def _longest_over(record: Mapping[str, Any], limit: int) -> str | None:
    """The key of the first attribute (or the body) whose text is over ``limit``."""
    for attr in record.get("attributes", ()) or ():
        if isinstance(attr, dict) and _text_over(attr.get("value"), limit):
            return f"attribute {attr.get('key')!r}"
    for event in record.get("events", ()) or ():
        for attr in (event.get("attributes", ()) if isinstance(event, dict) else ()) or ():
            if isinstance(attr, dict) and _text_over(attr.get("value"), limit):
                return f"event attribute {attr.get('key')!r}"
    if _text_over(record.get("body"), limit):
        return "the body"
    return None


def _text_over(value: Any, limit: int) -> bool:
    if isinstance(value, str):
        return len(value) > limit
    if isinstance(value, dict):
        return any(_text_over(v, limit) for v in value.values())
    if isinstance(value, list):
        return any(_text_over(v, limit) for v in value)
    return False


def answer(signal: Signal, content_type: str, rejected: int, problems: list[str]) -> bytes:
    """The success answer: empty, or a partial success naming how many records were
    refused and why (the first few reasons)."""
    response = _SHAPES[signal][4]()
    if rejected:
        partial = response.partial_success
        if signal == "traces":
            partial.rejected_spans = rejected
        else:
            partial.rejected_log_records = rejected
        shown = problems[:5]
        more = f"; and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
        partial.error_message = "; ".join(shown) + more
    if media_type(content_type) == PROTOBUF:
        return bytes(response.SerializeToString())
    return json.dumps(MessageToDict(response)).encode()


def error_body(content_type: str, status: int, message: str) -> tuple[bytes, str]:
    """An error answer as OTLP has it: a ``google.rpc.Status`` in the request's encoding
    (JSON for anything but protobuf), and its content type."""
    code = _RPC_CODES.get(status, 2)
    if media_type(content_type) == PROTOBUF:
        return _status_proto(code, message), PROTOBUF
    return json.dumps({"code": code, "message": message}).encode(), JSON


# HTTP status → google.rpc.Code, as gRPC-HTTP mapping has them.
_RPC_CODES = {400: 3, 401: 16, 403: 7, 404: 5, 413: 8, 415: 3, 429: 8, 503: 14}


def _status_proto(code: int, message: str) -> bytes:
    """``google.rpc.Status{code, message}`` encoded by hand: two fields, no dependency."""
    text = message.encode("utf-8")
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
