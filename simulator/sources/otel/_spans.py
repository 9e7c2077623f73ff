"""OTLP/JSON as the Collector's file exporter writes it: spans and their attributes as
plain values. What a span means is for the modules beside this one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.recording import ImportError_

__all__ = ["Span", "read_spans"]


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


def read_spans(items: Sequence[Any], name: str, lines: Sequence[int] | None) -> Iterator[Span]:
    """Every span of ``items`` (OTLP/JSON objects; ``lines`` their line numbers in a JSONL
    file), in file order; a malformed one is an error naming its place."""
    order = 0
    for i, item in enumerate(items):
        at = f"{name}:{lines[i] if lines else i + 1}" if lines or len(items) > 1 else name
        if not isinstance(item, Mapping) or "resourceSpans" not in item:
            raise ImportError_(f"{at}: expected an object with 'resourceSpans'")
        for r, resource in enumerate(_list(item, "resourceSpans", at)):
            for s, scope in enumerate(_list(resource, "scopeSpans", f"{at}: resourceSpans[{r}]")):
                path = f"{at}: resourceSpans[{r}].scopeSpans[{s}]"
                for k, span in enumerate(_list(scope, "spans", path)):
                    if not isinstance(span, Mapping):
                        raise ImportError_(f"{path}.spans[{k}]: expected an object")
                    span_id = str(span.get("spanId") or f"#{k}")
                    where = f"{at}: span {span_id}"
                    start = span.get("startTimeUnixNano", 0)
                    try:
                        start = int(start)
                    except (TypeError, ValueError):
                        raise ImportError_(
                            f"{where}: startTimeUnixNano: expected an integer, got {start!r}"
                        ) from None
                    attrs = _attributes(span.get("attributes", []), where)
                    yield Span(
                        where,
                        span_id,
                        str(span.get("traceId") or ""),
                        str(span.get("parentSpanId") or ""),
                        start,
                        order,
                        attrs,
                    )
                    order += 1


def _list(obj: Any, key: str, at: str) -> list[Any]:
    value = obj.get(key, []) if isinstance(obj, Mapping) else None
    if not isinstance(value, list):
        raise ImportError_(f"{at}: {key}: expected a list")
    return value


def _attributes(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, list):
        raise ImportError_(f"{where}: attributes: expected a list")
    out = {}
    for i, attr in enumerate(raw):
        key = attr.get("key") if isinstance(attr, Mapping) else None
        if not isinstance(key, str):
            raise ImportError_(f"{where}: attributes[{i}]: expected an object with a 'key'")
        out[key] = _value(attr.get("value"), f"{where}: {key}")
    return out


def _value(any_value: Any, where: str) -> Any:
    """An OTLP ``AnyValue`` as the plain value it stands for."""
    if not isinstance(any_value, Mapping) or not any_value:
        return None
    [(kind, value)] = list(any_value.items())[:1]
    try:
        if kind == "stringValue" or kind == "bytesValue":
            return str(value)
        if kind == "intValue":
            return int(value)
        if kind == "doubleValue":
            return float(value)
        if kind == "boolValue":
            return bool(value)
        if kind == "arrayValue":
            return [_value(v, where) for v in value.get("values", [])]
        if kind == "kvlistValue":
            return {kv["key"]: _value(kv.get("value"), where) for kv in value.get("values", [])}
    except (TypeError, ValueError, KeyError, AttributeError):
        raise ImportError_(f"{where}: not a valid {kind}: {value!r}") from None
    raise ImportError_(f"{where}: unknown value kind {kind!r}")
