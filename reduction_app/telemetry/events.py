"""The engine's reductions as an agent's spans carry them (span events named after their
phase, attributes ``reduction.<field>``: ``engine.telemetry``), read back into the
fields of an ``EventRecord``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import CharField

from reduction_app.conversations.imports import ID_CHARS
from reduction_app.engine.telemetry import (
    CONVERSATION_ATTRIBUTE,
    SPAN_EVENT_NAMES,
    event_from_attributes,
)
from reduction_app.models import EventRecord

__all__ = ["reduction_events"]

_NAMES = frozenset(SPAN_EVENT_NAMES.values())
_MAX_CHARS = {
    f.name: f.max_length or 0 for f in EventRecord._meta.concrete_fields if isinstance(f, CharField)
}


def reduction_events(items: Iterable[Mapping[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each reduction event of the spans of ``items`` (OTLP/JSON objects, as a trace
    file's lines), in the order of the spans and of the events in each: its key (a digest
    of the span's ids and the event's place, so an event sent twice is recorded once) and
    the ``EventRecord`` fields it gives, with ``conversation_id`` when the event names its
    conversation. An event whose attributes do not describe one (a wrong type, no phase)
    is left out."""
    out = []
    for item in items:
        for resource in item.get("resourceSpans", ()):
            for entry in resource.get("scopeSpans", ()):
                for span in entry.get("spans", ()):
                    ids = f"{span.get('traceId', '')}{span.get('spanId', '')}".lower()
                    for place, event in enumerate(span.get("events", ()) or ()):
                        if not isinstance(event, Mapping) or event.get("name") not in _NAMES:
                            continue
                        fields = _fields(event)
                        if fields is not None:
                            digest = f"otel\x00{ids}\x00{place}".encode()
                            out.append((hashlib.sha256(digest).hexdigest(), fields))
    return out


def _fields(event: Mapping[str, Any]) -> dict[str, Any] | None:
    attributes = {}
    for attr in event.get("attributes", ()) or ():
        if isinstance(attr, Mapping) and isinstance(attr.get("key"), str):
            attributes[attr["key"]] = _plain(attr.get("value"))
    try:
        reduction = event_from_attributes(attributes)
    except TypeError:
        return None
    out: dict[str, Any] = reduction.to_dict()
    for name, value in out.items():
        if isinstance(value, str) and _MAX_CHARS.get(name):
            out[name] = value[: _MAX_CHARS[name]]
    conversation = attributes.get(CONVERSATION_ATTRIBUTE)
    if isinstance(conversation, str) and conversation:
        out["conversation_id"] = conversation[:ID_CHARS]
    return out


def _plain(value: Any) -> Any:
    """An OTLP/JSON ``AnyValue`` as the plain value (ints arrive as strings in JSON)."""
    if not isinstance(value, Mapping) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "intValue":
        try:
            return int(inner)
        except (TypeError, ValueError):
            return None
    if kind == "doubleValue":
        return float(inner)
    return inner
