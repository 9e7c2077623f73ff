"""Reduction events as OpenTelemetry span events, when ``opentelemetry-api`` is installed.

Each event becomes an event named ``reduction.truncation`` or ``reduction.clear`` on the
current span, with the attributes of :data:`SPAN_ATTRIBUTES`, and only while that span
is recording (an SDK is configured and sampled it); without the package, or without an
SDK, nothing is done. The attribute names are defined here and nowhere else: readers of
traces import them. Where the events go otherwise is ``events.py``'s to say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from reduction_app.engine.events import ReductionEvent

__all__ = [
    "CONFIG_ATTRIBUTE",
    "CONVERSATION_ATTRIBUTE",
    "EVENT_ATTRIBUTES",
    "SPAN_ATTRIBUTES",
    "SPAN_EVENT_NAMES",
    "TelemetryLabels",
    "add_span_event",
    "event_from_attributes",
    "recording",
    "span_attributes",
]

try:
    from opentelemetry import trace as _trace
except ImportError:  # the optional ``otel`` extra is not installed
    _trace = None  # type: ignore[assignment]

_PREFIX = "reduction."

EVENT_ATTRIBUTES: dict[str, str] = {f.name: f"{_PREFIX}{f.name}" for f in fields(ReductionEvent)}
"""Each :class:`ReductionEvent` field, by name, and the attribute that carries it."""

CONFIG_ATTRIBUTE = f"{_PREFIX}config"
"""The config's name, when one was given (``ReductionMiddleware.set_telemetry``)."""

CONVERSATION_ATTRIBUTE = f"{_PREFIX}conversation_id"
"""The conversation's id, when the caller knows it."""

SPAN_ATTRIBUTES: tuple[str, ...] = (
    *EVENT_ATTRIBUTES.values(),
    CONFIG_ATTRIBUTE,
    CONVERSATION_ATTRIBUTE,
)
"""Every attribute a reduction span event may carry: the event's fields always, the
config's name and the conversation id when known."""

SPAN_EVENT_NAMES: dict[str, str] = {
    "truncation": "reduction.truncation",
    "clear": "reduction.clear",
}
"""The span event's name for each phase."""


class TelemetryLabels:
    """What a middleware adds to its span events besides the event: both empty by default."""

    __slots__ = ("config_name", "conversation_id")

    def __init__(self, config_name: str = "", conversation_id: str = "") -> None:
        self.config_name = config_name
        self.conversation_id = conversation_id


def span_attributes(
    event: ReductionEvent, *, config_name: str = "", conversation_id: str = ""
) -> dict[str, str | int | bool]:
    """The attributes of ``event``'s span event: every field, then the config's name and
    the conversation id when they are not empty."""
    attributes: dict[str, str | int | bool] = {
        key: getattr(event, name) for name, key in EVENT_ATTRIBUTES.items()
    }
    if config_name:
        attributes[CONFIG_ATTRIBUTE] = config_name
    if conversation_id:
        attributes[CONVERSATION_ATTRIBUTE] = conversation_id
    return attributes


def event_from_attributes(attributes: Mapping[str, Any]) -> ReductionEvent:
    """The event a span event's attributes describe (the reverse of
    :func:`span_attributes`); attributes it does not know are ignored, missing ones take
    the field's default. Raises ``TypeError`` for a value of the wrong type."""
    values: dict[str, Any] = {}
    for f in fields(ReductionEvent):
        key = EVENT_ATTRIBUTES[f.name]
        if key not in attributes:
            continue
        value = attributes[key]
        default = f.default
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, str)
        if not ok:
            raise TypeError(f"{key}: {value!r} is not a {type(default).__name__}")
        values[f.name] = value
    if values.get("phase") not in SPAN_EVENT_NAMES or values.get("kind") not in ("tool", "summary"):
        raise TypeError(
            f"{EVENT_ATTRIBUTES['phase']} and {EVENT_ATTRIBUTES['kind']} must name a phase "
            f"and a kind, not {values.get('phase')!r} and {values.get('kind')!r}"
        )
    return ReductionEvent(**values)


def recording() -> bool:
    """Whether the current span records events: ``False`` without ``opentelemetry-api``
    or without an SDK (one context lookup)."""
    return _trace is not None and _trace.get_current_span().is_recording()


def add_span_event(event: ReductionEvent, labels: TelemetryLabels | None = None) -> None:
    """Add ``event`` to the current span, if it is recording."""
    if _trace is None:
        return
    span = _trace.get_current_span()
    if not span.is_recording():
        return
    span.add_event(
        SPAN_EVENT_NAMES[event.phase],
        attributes=span_attributes(
            event,
            config_name=labels.config_name if labels else "",
            conversation_id=labels.conversation_id if labels else "",
        ),
    )
