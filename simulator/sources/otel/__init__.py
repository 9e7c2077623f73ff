"""OpenTelemetry GenAI traces, as the Collector's file exporter writes them (OTLP/JSON),
as OpenAI chat conversations.

Chat spans in the current GenAI conventions, OpenLLMetry's indexed attributes or
OpenInference, with message contents as attributes or as log records beside the spans;
calls chain into conversations (:mod:`._grouping`) under a session key or, without one,
their first call's trace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.sources import Converted, as_int
from simulator.sources.otel._grouping import conversations
from simulator.sources.otel._logs import joined
from simulator.sources.otel._messages import Call, read_call, read_tools
from simulator.sources.otel._spans import Span, read_logs, read_spans, signals

__all__ = ["SESSION_KEYS", "looks_like", "read", "session_of"]

_STYLES = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "llm.input_messages.",
    "llm.output_messages.",
)
SESSION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "langfuse.session.id",
    "traceloop.association.properties.session_id",
)
"""Attributes that name a conversation, on a chat span, an enclosing span or the resource."""


def looks_like(data: Any) -> bool:
    """An OTLP/JSON object of traces or logs, or a list of them (a JSONL file's lines)."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(signals(i) for i in items)


def read(data: Any, *, name: str, lines: Sequence[int] | None = None) -> list[Converted]:
    """Every conversation of ``data`` (one OTLP/JSON object, or the list of a JSONL file's;
    ``lines`` their line numbers), labelled ``NAME#KEY`` or ``NAME#KEY/side-N``
    (:func:`._grouping.conversations`)."""
    items = data if isinstance(data, list) else [data]
    numbers = lines if isinstance(data, list) else None
    spans = joined(list(read_spans(items, name, numbers)), list(read_logs(items, name, numbers)))
    by_id = {s.span_id: s for s in spans}
    calls = [
        (_session_key(span, by_id), read_call(span))
        for span in sorted(spans, key=lambda s: (s.start, s.order))
        if _is_chat(span.attrs)
    ]
    return [_conversation(key, chain, name) for key, chain in conversations(calls)]


def _is_chat(attrs: Mapping[str, Any]) -> bool:
    # OpenInference's LangChain instrumentation puts the input messages on the chain
    # spans around a call as well: only its LLM spans are calls.
    if attrs.get("openinference.span.kind", "LLM") != "LLM":
        return False
    return attrs.get("gen_ai.operation.name") == "chat" or any(
        key.startswith(_STYLES) for key in attrs
    )


def session_of(items: Sequence[Any], *, name: str) -> str:
    """The first session id (any of :data:`SESSION_KEYS`) a span or a resource of
    ``items`` (OTLP/JSON objects) carries, or ``""``; a malformed span is an error naming
    its place, as :func:`read` raises it."""
    for span in read_spans(items, name, None):
        found = _named_session(span)
        if found:
            return found
    return ""


def _named_session(span: Span) -> str:
    for attrs in (span.attrs, span.resource):
        for key in SESSION_KEYS:
            value = attrs.get(key)
            if value not in (None, ""):
                return str(value)
    return ""


def _session_key(span: Span, by_id: Mapping[str, Span]) -> str:
    seen: set[str] = set()
    current: Span | None = span
    while current is not None and current.span_id not in seen:
        found = _named_session(current)
        if found:
            return found
        seen.add(current.span_id)
        current = by_id.get(current.parent_id)
    return ""


def _conversation(key: str, calls: Sequence[Call], name: str) -> Converted:
    last = calls[-1]
    conversation = last.input + last.output
    prompt: dict[int, int] = {}
    cached: dict[int, int] = {}
    completion: dict[int, int] = {}
    times: dict[int, float] = {}
    model = ""
    for call in calls:
        attrs = call.span.attrs
        model = str(
            attrs.get("gen_ai.response.model")
            or attrs.get("gen_ai.request.model")
            or attrs.get("llm.model_name")
            or model
        )
        if not call.output:
            continue
        index = len(call.input)
        for figures, value in (
            (prompt, _first(attrs, "input_tokens", "prompt_tokens", "prompt")),
            (
                cached,
                _first(
                    attrs,
                    "cache_read.input_tokens",
                    "cache_read_input_tokens",
                    "prompt_details.cache_read",
                ),
            ),
            (completion, _first(attrs, "output_tokens", "completion_tokens", "completion")),
        ):
            if value is not None:
                figures[index] = value
        times[index] = call.span.start / 1e9
    return Converted(
        label=f"{name}#{key}" if key else name,
        fmt="openai_chat",
        payload={
            "messages": [m for _, m in conversation],
            "tools": read_tools([c.span for c in calls]),
        },
        model=model,
        prompt_tokens=prompt,
        cached_prompt_tokens=cached,
        completion_tokens=completion,
        call_times=times,
        locations={i: _location(where, name) for i, (where, _) in enumerate(conversation)},
    )


def _location(where: str, name: str) -> str:
    """``where`` without the file's name, as ``Converted.locations`` holds it: ``:LINE:
    span ID: FIELD``, or ``span ID: FIELD`` for a file of one object."""
    location = where[len(name) :]
    return location[2:] if location.startswith(": ") else location


def _first(attrs: Mapping[str, Any], *names: str) -> int | None:
    for suffix in names:
        for prefix in ("gen_ai.usage.", "llm.token_count."):
            value = as_int(attrs.get(prefix + suffix))
            if value is not None:
                return value
    return None
