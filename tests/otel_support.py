"""A tracer of the real OpenTelemetry SDK with its spans kept in memory, for the tests of
reduction events as span events (the global tracer provider is left alone)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reduction_app.engine import ReductionEvent
from reduction_app.engine.telemetry import SPAN_EVENT_NAMES, span_attributes


@contextmanager
def tracing() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A tracer provider whose finished spans the exporter holds."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        yield provider, exporter
    finally:
        provider.shutdown()


def span_events(span: ReadableSpan) -> list[tuple[str, dict[str, Any]]]:
    """The span's events as ``(name, attributes)``."""
    return [(e.name, dict(e.attributes or {})) for e in span.events]


def reduction_span_events(
    spans: tuple[ReadableSpan, ...] | list[ReadableSpan],
) -> list[tuple[str, dict[str, Any]]]:
    """The reduction events of every span, in the order they were added."""
    found = [
        (e.timestamp, e.name, dict(e.attributes or {}))
        for span in spans
        for e in span.events
        if e.name.startswith("reduction.")
    ]
    return [(name, attributes) for _, name, attributes in sorted(found, key=lambda f: f[0])]


def expected_span_events(
    events: list[ReductionEvent], *, config_name: str = "", conversation_id: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    """The span events ``events`` give, worked out from the events themselves."""
    return [
        (
            SPAN_EVENT_NAMES[e.phase],
            span_attributes(e, config_name=config_name, conversation_id=conversation_id),
        )
        for e in events
    ]
