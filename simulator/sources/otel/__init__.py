"""OpenTelemetry GenAI traces, as the Collector's file exporter writes them (OTLP/JSON),
as OpenAI chat conversations.

Chat spans in the current GenAI conventions, OpenLLMetry's indexed attributes or
OpenInference are grouped by conversation id (or trace); each call is sent the whole
history, so the conversation is the last call's, and an earlier call that is not its
start is refused, naming the span.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted, as_int
from simulator.sources.otel._messages import Call, loads, read_call, read_tools
from simulator.sources.otel._spans import Span, read_spans

__all__ = ["looks_like", "read"]

_STYLES = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "llm.input_messages.",
    "llm.output_messages.",
)
_CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id")


def looks_like(data: Any) -> bool:
    """An OTLP/JSON traces object, or a list of them (the lines of a JSONL file)."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(isinstance(i, Mapping) and "resourceSpans" in i for i in items)


def read(data: Any, *, name: str, lines: Sequence[int] | None = None) -> list[Converted]:
    """One conversation per conversation id, or per trace without one; ``data`` is one
    OTLP/JSON object or the list of a JSONL file's, ``lines`` their line numbers."""
    items = data if isinstance(data, list) else [data]
    spans = list(read_spans(items, name, lines if isinstance(data, list) else None))
    by_id = {s.span_id: s for s in spans}
    groups: dict[str, list[Span]] = {}
    for span in sorted(spans, key=lambda s: (s.start, s.order)):
        if _is_chat(span.attrs):
            groups.setdefault(_conversation_id(span, by_id) or span.trace_id, []).append(span)
    return [_conversation(key, group, name) for key, group in groups.items()]


def _is_chat(attrs: Mapping[str, Any]) -> bool:
    return attrs.get("gen_ai.operation.name") == "chat" or any(
        key.startswith(_STYLES) for key in attrs
    )


def _conversation_id(span: Span, by_id: Mapping[str, Span]) -> str:
    seen: set[str] = set()
    current: Span | None = span
    while current is not None and current.span_id not in seen:
        for key in _CONVERSATION_KEYS:
            value = current.attrs.get(key)
            if value not in (None, ""):
                return str(value)
        seen.add(current.span_id)
        current = by_id.get(current.parent_id)
    return ""


def _conversation(key: str, spans: Sequence[Span], name: str) -> Converted:
    calls = [read_call(span) for span in spans]
    last = calls[-1]
    conversation = last.input + last.output
    whole = [_comparable(m) for _, m in conversation]
    prompt: dict[int, int] = {}
    cached: dict[int, int] = {}
    completion: dict[int, int] = {}
    times: dict[int, float] = {}
    model = ""
    for call in calls:
        sent = [_comparable(m) for _, m in call.input + call.output]
        if whole[: len(sent)] != sent:
            raise ImportError_(_mismatch(call, sent, whole, last))
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
        payload={"messages": [m for _, m in conversation], "tools": read_tools(spans)},
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


def _mismatch(call: Call, sent: list[Any], whole: list[Any], last: Call) -> str:
    at = f"{call.span.where}: its messages are not the start of the last call's (span "
    at += f"{last.span.span_id})"
    if len(sent) > len(whole):
        return f"{at}: {len(sent)} messages, the last call's {len(whole)}"
    k = next(k for k, (a, b) in enumerate(zip(sent, whole, strict=False)) if a != b)
    field = (call.input + call.output)[k][0].split(": ")[-1]
    return f"{at}: message {k} ({field}) differs"


def _comparable(message: Mapping[str, Any]) -> Any:
    """``message`` with its calls' arguments parsed, so spacing does not tell calls apart."""
    calls = [
        {**c, "function": {**c["function"], "arguments": loads(c["function"]["arguments"])}}
        for c in message.get("tool_calls", [])
    ]
    return {**message, "tool_calls": calls} if calls else dict(message)
