"""Message contents written as log records (events) rather than span attributes, joined to
their chat spans by span id; a span the file lacks is stood for by its records."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.sources import as_int
from simulator.sources.otel._spans import LogRecord, Span

__all__ = ["joined"]

DETAILS = "gen_ai.client.inference.operation.details"
_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.developer.message": "developer",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"
_AFTER_SPANS = 1 << 40  # orders records' stand-in spans after every span of the file


def joined(spans: Sequence[Span], records: Sequence[LogRecord]) -> list[Span]:
    """``spans`` with the messages of their records as attributes, then a span for each
    span id that only records name.

    Two kinds of records are read: the current conventions' one
    ``gen_ai.client.inference.operation.details`` event per call (its attributes are a
    span's: ``gen_ai.input.messages`` and the rest), and the older conventions' event per
    message (``gen_ai.user.message``, ..., ``gen_ai.choice``), whose bodies become
    ``gen_ai.input.messages`` / ``gen_ai.output.messages``. A span's own attributes win.
    """
    by_span: dict[str, list[LogRecord]] = {}
    for record in records:
        if record.span_id and (
            record.event == DETAILS or record.event in _ROLES or record.event == _CHOICE
        ):
            by_span.setdefault(record.span_id, []).append(record)
    out = []
    for span in spans:
        found = by_span.pop(span.span_id, None)
        out.append(
            dataclasses.replace(span, attrs={**_attributes(found), **span.attrs}) if found else span
        )
    for span_id, found in by_span.items():
        first = found[0]
        attrs = {"gen_ai.operation.name": "chat", **_attributes(found)}
        start = min(r.time for r in found)
        where = first.where.rsplit(":", 1)[0] + f": log records of span {span_id}"
        out.append(
            Span(
                where,
                span_id,
                first.trace_id,
                "",
                start,
                _AFTER_SPANS + first.order,
                attrs,
                first.resource,
            )
        )
    return out


def _attributes(records: Sequence[LogRecord]) -> dict[str, Any]:
    details = [r for r in records if r.event == DETAILS]
    if details:
        return dict(details[-1].attrs)
    inputs = []
    outputs = []
    for record in records:
        body = record.body if isinstance(record.body, Mapping) else {}
        if record.event == _CHOICE:
            message = body.get("message")
            outputs.append(
                (
                    body.get("index", 0),
                    _message("assistant", message if isinstance(message, Mapping) else {}),
                )
            )
            continue
        role = _ROLES[record.event]
        if role in ("system", "developer", "user") and "content" not in body:
            return {}  # contents not recorded: the span says so
        inputs.append(_message(role, body))
    attrs: dict[str, Any] = {"gen_ai.input.messages": inputs}
    if outputs:
        attrs["gen_ai.output.messages"] = [
            m for _, m in sorted(outputs, key=lambda o: as_int(o[0]) or 0)
        ]
    return attrs


def _message(role: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One message event's body as a message of the current conventions (role, parts)."""
    content = body.get("content")
    if role == "tool":
        return {
            "role": role,
            "parts": [{"type": "tool_call_response", "id": body.get("id"), "response": content}],
        }
    parts: list[dict[str, Any]] = []
    for call in body.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        function = function if isinstance(function, Mapping) else {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id") if isinstance(call, Mapping) else None,
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    if isinstance(content, list):
        content = "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    if content is not None:
        parts.append({"type": "text", "content": content})
    return {"role": role, "parts": parts}
