"""The engine's reductions as an agent's spans carry them (span events named
``reduction.truncation`` and ``reduction.clear``, attributes ``reduction.<field>``), read
back into the fields of an ``EventRecord``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from django.db.models import CharField

from reduction_app.engine import ReductionEvent
from reduction_app.models import EventRecord, TelemetryRecord

__all__ = ["EVENT_NAMES", "reduction_events"]

EVENT_NAMES = ("reduction.truncation", "reduction.clear")
_PREFIX = "reduction."
_FIELDS = {f.name: f.type for f in fields(ReductionEvent)}
_CONVERSATION = "reduction.conversation_id"
_MAX_CHARS = {
    f.name: f.max_length or 0
    for f in EventRecord._meta.concrete_fields
    if isinstance(f, CharField) and f.name in _FIELDS
}


def reduction_events(rows: Iterable[TelemetryRecord]) -> list[tuple[str, dict[str, Any]]]:
    """Each reduction event of the spans among ``rows``, in the order of the spans and of
    the events in each: its key (a digest of the span and the event's place, so an event
    sent twice is recorded once) and the ``EventRecord`` fields it gives, with
    ``conversation_id`` when the event names its conversation."""
    out = []
    for row in rows:
        if row.kind != "span":
            continue
        for entry in json.loads(row.data).get("scopeSpans", ()):
            for span in entry.get("spans", ()):
                for place, event in enumerate(span.get("events", ()) or ()):
                    if not isinstance(event, Mapping) or event.get("name") not in EVENT_NAMES:
                        continue
                    digest = hashlib.sha256(f"otel\x00{row.key}\x00{place}".encode()).hexdigest()
                    out.append((digest, _fields(event)))
    return out


def _fields(event: Mapping[str, Any]) -> dict[str, Any]:
    values = {}
    for attr in event.get("attributes", ()) or ():
        if isinstance(attr, Mapping) and isinstance(attr.get("key"), str):
            values[attr["key"]] = _plain(attr.get("value"))
    out: dict[str, Any] = {}
    for name, kind in _FIELDS.items():
        value = values.get(_PREFIX + name)
        if value is None:
            continue
        if kind in ("int", int):
            try:
                out[name] = int(value)
            except (TypeError, ValueError):
                continue
        elif kind in ("bool", bool):
            out[name] = bool(value)
        else:
            out[name] = str(value)[: _MAX_CHARS[name]]
    # The event's name says its phase; an attribute that says otherwise is not believed.
    out["phase"] = str(event.get("name", "")).removeprefix(_PREFIX)
    if out.get("kind") not in ("tool", "summary"):
        out["kind"] = "tool"
    conversation = values.get(_CONVERSATION)
    if conversation:
        out["conversation_id"] = str(conversation)[:200]
    return out


def _plain(value: Any) -> Any:
    if not isinstance(value, Mapping) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "intValue":
        return int(inner)
    return inner
