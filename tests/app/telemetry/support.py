"""Helpers of the OTLP endpoint's tests."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan

from reduction_app.telemetry.otlp import Record, read_request


def stored_records(spans: Sequence[ReadableSpan]) -> list[Record]:
    """Finished SDK spans as one protobuf export request carries them to the store."""
    body = encode_spans(spans).SerializeToString()
    return read_request(
        "traces",
        body,
        content_type="application/x-protobuf",
        content_encoding="",
        max_bytes=10**9,
        max_records=10**5,
        max_value_chars=10**9,
    ).records
