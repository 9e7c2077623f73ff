"""OTLP/JSON as the Collector's file exporter writes it: spans and log records, their
attributes as plain values. What a span or a record means is for the modules beside this one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simulator.recording import ImportError_

__all__ = ["LogRecord", "Span", "read_logs", "read_spans", "signals", "value"]


@dataclass(frozen=True)
class Span:
    """One span: where it is in the file, its ids, start and attributes as plain values."""

    where: str  # "FILE:LINE: span ID", the prefix of every error about it
    span_id: str
    trace_id: str
    parent_id: str
    start: int  # Unix time, nanoseconds
    order: int  # place in the file, for spans that started at the same nanosecond
    attrs: Mapping[str, Any]
    resource: Mapping[str, Any] = field(default_factory=dict)
    dropped: int = 0  # attributes the SDK dropped over its limit (droppedAttributesCount)


@dataclass(frozen=True)
class LogRecord:
    """One log record (an event): the span it belongs to, its name, attributes and body."""

    where: str  # "FILE:LINE: log record N"
    span_id: str
    trace_id: str
    event: str  # eventName, or the older "event.name" attribute
    time: int  # Unix time, nanoseconds (timeUnixNano, else observedTimeUnixNano)
    order: int
    attrs: Mapping[str, Any]
    body: Any
    resource: Mapping[str, Any] = field(default_factory=dict)


def signals(item: Any) -> bool:
    """Whether ``item`` is an OTLP/JSON object of traces or logs."""
    return isinstance(item, Mapping) and ("resourceSpans" in item or "resourceLogs" in item)


def _places(
    items: Sequence[Any], name: str, lines: Sequence[int] | None
) -> Iterator[tuple[str, Any]]:
    for i, item in enumerate(items):
        at = f"{name}:{lines[i] if lines else i + 1}" if lines or len(items) > 1 else name
        if not signals(item):
            raise ImportError_(f"{at}: expected an object with 'resourceSpans' or 'resourceLogs'")
        yield at, item


def read_spans(items: Sequence[Any], name: str, lines: Sequence[int] | None) -> Iterator[Span]:
    """Every span of ``items`` (OTLP/JSON objects; ``lines`` their line numbers in a JSONL
    file), in file order; a malformed one is an error naming its place."""
    order = 0
    for at, item in _places(items, name, lines):
        for r, resource in enumerate(_list(item, "resourceSpans", at)):
            owner = _resource(resource, f"{at}: resourceSpans[{r}]")
            for s, scope in enumerate(_list(resource, "scopeSpans", f"{at}: resourceSpans[{r}]")):
                path = f"{at}: resourceSpans[{r}].scopeSpans[{s}]"
                for k, span in enumerate(_list(scope, "spans", path)):
                    if not isinstance(span, Mapping):
                        raise ImportError_(f"{path}.spans[{k}]: expected an object")
                    span_id = str(span.get("spanId") or f"#{k}")
                    where = f"{at}: span {span_id}"
                    yield Span(
                        where,
                        span_id,
                        str(span.get("traceId") or ""),
                        str(span.get("parentSpanId") or ""),
                        _nanos(span, "startTimeUnixNano", where),
                        order,
                        _attributes(span.get("attributes", []), where),
                        owner,
                        _nanos(span, "droppedAttributesCount", where),
                    )
                    order += 1


def read_logs(items: Sequence[Any], name: str, lines: Sequence[int] | None) -> Iterator[LogRecord]:
    """Every log record of ``items``, in file order, as :func:`read_spans` reads spans."""
    order = 0
    for at, item in _places(items, name, lines):
        for r, resource in enumerate(_list(item, "resourceLogs", at)):
            owner = _resource(resource, f"{at}: resourceLogs[{r}]")
            for s, scope in enumerate(_list(resource, "scopeLogs", f"{at}: resourceLogs[{r}]")):
                path = f"{at}: resourceLogs[{r}].scopeLogs[{s}]"
                for k, record in enumerate(_list(scope, "logRecords", path)):
                    where = f"{path}.logRecords[{k}]"
                    if not isinstance(record, Mapping):
                        raise ImportError_(f"{where}: expected an object")
                    attrs = _attributes(record.get("attributes", []), where)
                    time = _nanos(record, "timeUnixNano", where) or _nanos(
                        record, "observedTimeUnixNano", where
                    )
                    yield LogRecord(
                        where,
                        str(record.get("spanId") or ""),
                        str(record.get("traceId") or ""),
                        str(record.get("eventName") or attrs.get("event.name") or ""),
                        time,
                        order,
                        attrs,
                        value(record.get("body"), f"{where}: body"),
                        owner,
                    )
                    order += 1


def _resource(resource: Any, at: str) -> dict[str, Any]:
    raw = resource.get("resource") if isinstance(resource, Mapping) else None
    return (
        _attributes(raw.get("attributes", []), f"{at}.resource") if isinstance(raw, Mapping) else {}
    )


def _nanos(obj: Mapping[str, Any], key: str, where: str) -> int:
    raw = obj.get(key, 0)
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ImportError_(f"{where}: {key}: expected an integer, got {raw!r}") from None


def _list(obj: Any, key: str, at: str) -> list[Any]:
    found = obj.get(key, []) if isinstance(obj, Mapping) else None
    if not isinstance(found, list):
        raise ImportError_(f"{at}: {key}: expected a list")
    return found


def _attributes(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, list):
        raise ImportError_(f"{where}: attributes: expected a list")
    out = {}
    for i, attr in enumerate(raw):
        key = attr.get("key") if isinstance(attr, Mapping) else None
        if not isinstance(key, str):
            raise ImportError_(f"{where}: attributes[{i}]: expected an object with a 'key'")
        out[key] = value(attr.get("value"), f"{where}: {key}")
    return out


def value(any_value: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as the plain value it stands for."""
    if not isinstance(any_value, Mapping) or not any_value:
        return None
    [(kind, found)] = list(any_value.items())[:1]
    try:
        if kind == "stringValue" or kind == "bytesValue":
            return str(found)
        if kind == "intValue":
            return int(found)
        if kind == "doubleValue":
            return float(found)
        if kind == "boolValue":
            return bool(found)
        if kind == "arrayValue":
            return [value(v, where) for v in found.get("values", [])]
        if kind == "kvlistValue":
            return {kv["key"]: value(kv.get("value"), where) for kv in found.get("values", [])}
    except (TypeError, ValueError, KeyError, AttributeError):
        raise ImportError_(f"{where}: not a valid {kind}: {found!r}") from None
    raise ImportError_(f"{where}: unknown value kind {kind!r}")
