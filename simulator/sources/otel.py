"""OpenTelemetry GenAI traces, as the Collector's file exporter writes them (OTLP/JSON),
as OpenAI chat conversations.

A file is one ``{"resourceSpans": [...]}`` object, or JSONL with one such object a line;
all the lines are read together. Spans sit in ``resourceSpans[].scopeSpans[].spans[]``,
their ``attributes`` a list of ``{"key", "value": AnyValue}`` (``intValue`` a string).

A chat span is one whose ``gen_ai.operation.name`` is ``chat``, or one carrying message
attributes in any of three styles:

* the current GenAI semantic conventions: ``gen_ai.input.messages`` and
  ``gen_ai.output.messages`` (JSON: messages of ``parts``: ``text``, ``tool_call``,
  ``tool_call_response``), and ``gen_ai.system_instructions`` (JSON parts, read as a
  system message before the input); ``reasoning`` and media parts are left out;
* the older indexed attributes (OpenLLMetry): ``gen_ai.prompt.N.role`` / ``.content`` /
  ``.tool_call_id`` / ``.tool_calls.M.id|name|arguments``, and ``gen_ai.completion.N.*``;
* OpenInference (Phoenix, Arize): ``llm.input_messages.N.message.role`` / ``.content`` /
  ``.contents.K.message_content.text`` / ``.tool_call_id`` /
  ``.tool_calls.M.tool_call.id|function.name|function.arguments``, and
  ``llm.output_messages.N.message.*``.

Chat spans sharing a ``gen_ai.conversation.id`` (or OpenInference ``session.id``), on the
span or an ancestor, are one conversation; without one, a trace is one. Its chat spans,
in start-time order, are its model calls. Each call is sent the whole history, so the
conversation is the last call's input and output, and every earlier call's input and
output must be the start of it; a call that is not is an error naming its span, never
merged.

Tools are the last call's ``gen_ai.tool.definitions`` (OpenLLMetry
``llm.request.functions.N.*``, OpenInference ``llm.tools.N.tool.json_schema``). Per call,
by the index of the assistant message it produced, the provider's counts are kept:
``gen_ai.usage.input_tokens`` (which includes cached tokens),
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.output_tokens`` (the older
``prompt_tokens`` / ``completion_tokens`` / ``cache_read_input_tokens`` spellings too;
OpenInference ``llm.token_count.prompt`` / ``completion`` /
``prompt_details.cache_read``), and the span's start as the call's time. Every other
span (agent and tool spans, embeddings) and every other attribute is left out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted, as_int

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
_SKIPPED_PARTS = frozenset({"reasoning", "blob", "file", "uri"})


def looks_like(data: Any) -> bool:
    """An OTLP/JSON traces object, or a list of them (the lines of a JSONL file)."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(isinstance(i, Mapping) and "resourceSpans" in i for i in items)


@dataclass(frozen=True)
class _Span:
    where: str  # "FILE:LINE: span ID", the prefix of every error about it
    span_id: str
    trace_id: str
    parent_id: str
    start: int  # Unix time, nanoseconds
    order: int  # place in the file, for spans that started at the same nanosecond
    attrs: Mapping[str, Any]


@dataclass(frozen=True)
class _Call:
    span: _Span
    input: list[tuple[str, dict[str, Any]]]  # (field the message came from, message)
    output: list[tuple[str, dict[str, Any]]]


def read(data: Any, *, name: str, lines: Sequence[int] | None = None) -> list[Converted]:
    """One conversation per conversation id, or per trace without one; ``data`` is one
    OTLP/JSON object or the list of a JSONL file's, ``lines`` their line numbers."""
    items = data if isinstance(data, list) else [data]
    spans = list(_spans(items, name, lines if isinstance(data, list) else None))
    by_id = {s.span_id: s for s in spans}
    groups: dict[str, list[_Span]] = {}
    for span in sorted(spans, key=lambda s: (s.start, s.order)):
        if _is_chat(span.attrs):
            groups.setdefault(_conversation_id(span, by_id) or span.trace_id, []).append(span)
    return [_conversation(key, group, name) for key, group in groups.items()]


def _spans(items: Sequence[Any], name: str, lines: Sequence[int] | None) -> Iterator[_Span]:
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
                    yield _Span(
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


def _is_chat(attrs: Mapping[str, Any]) -> bool:
    return attrs.get("gen_ai.operation.name") == "chat" or any(
        key.startswith(_STYLES) for key in attrs
    )


def _conversation_id(span: _Span, by_id: Mapping[str, _Span]) -> str:
    seen: set[str] = set()
    current: _Span | None = span
    while current is not None and current.span_id not in seen:
        for key in _CONVERSATION_KEYS:
            value = current.attrs.get(key)
            if value not in (None, ""):
                return str(value)
        seen.add(current.span_id)
        current = by_id.get(current.parent_id)
    return ""


def _conversation(key: str, spans: Sequence[_Span], name: str) -> Converted:
    calls = [_call(span) for span in spans]
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
        payload={"messages": [m for _, m in conversation], "tools": _tools(spans)},
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


def _mismatch(call: _Call, sent: list[Any], whole: list[Any], last: _Call) -> str:
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
        {**c, "function": {**c["function"], "arguments": _loads(c["function"]["arguments"])}}
        for c in message.get("tool_calls", [])
    ]
    return {**message, "tool_calls": calls} if calls else dict(message)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _call(span: _Span) -> _Call:
    attrs = span.attrs
    if any(k.startswith(("gen_ai.input.messages", "gen_ai.output.messages")) for k in attrs):
        system = _json(attrs, "gen_ai.system_instructions", span)
        instructions: list[tuple[str, dict[str, Any]]] = []
        if system is not None:
            where = f"{span.where}: gen_ai.system_instructions"
            parts = system if isinstance(system, list) else [system]
            text = _parts_text(parts, where)
            instructions = [(where, {"role": "system", "content": text})]
        return _Call(
            span,
            instructions + _current(attrs, "gen_ai.input.messages", span),
            _current(attrs, "gen_ai.output.messages", span),
        )
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in attrs):
        return _Call(
            span,
            _indexed_messages(attrs, "gen_ai.prompt.", span, ""),
            _indexed_messages(attrs, "gen_ai.completion.", span, ""),
        )
    if any(k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in attrs):
        return _Call(
            span,
            _indexed_messages(attrs, "llm.input_messages.", span, "message."),
            _indexed_messages(attrs, "llm.output_messages.", span, "message."),
        )
    raise ImportError_(
        f"{span.where}: a chat span without messages (were message contents recorded?)"
    )


def _json(attrs: Mapping[str, Any], key: str, span: _Span) -> Any:
    value = attrs.get(key)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ImportError_(
            f"{span.where}: {key}: not JSON: {exc.msg} at column {exc.colno}"
        ) from exc


def _current(attrs: Mapping[str, Any], key: str, span: _Span) -> list[tuple[str, dict[str, Any]]]:
    """Messages of the current conventions: each a ``role`` and its ``parts``."""
    raw = _json(attrs, key, span)
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ImportError_(f"{span.where}: {key}: expected a list of messages")
    out: list[tuple[str, dict[str, Any]]] = []
    for i, msg in enumerate(raw):
        where = f"{span.where}: {key}[{i}]"
        if not isinstance(msg, Mapping) or not isinstance(msg.get("parts"), list):
            raise ImportError_(f"{where}: expected an object with 'role' and 'parts'")
        role = msg.get("role")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for j, part in enumerate(msg["parts"]):
            at = f"{where}.parts[{j}]"
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "text":
                texts.append(_string(part.get("content"), f"{at}.content"))
            elif kind == "tool_call":
                calls.append(
                    _tool_call(part.get("id"), part.get("name"), part.get("arguments"), at)
                )
            elif kind == "tool_call_response":
                response = part.get("response")
                content = response if isinstance(response, str) else json.dumps(response)
                result = {"role": "tool", "tool_call_id": part.get("id"), "content": content}
                out.append((at, result))
            elif kind not in _SKIPPED_PARTS:
                raise ImportError_(f"{at}.type: unknown part type {kind!r}")
        if role == "assistant":
            if texts or calls:
                reply: dict[str, Any] = {"role": role, "content": "".join(texts) or None}
                if calls:
                    reply["tool_calls"] = calls
                out.append((where, reply))
        elif role != "tool" or texts:
            out.append((where, {"role": role, "content": "".join(texts)}))
    return out


def _parts_text(parts: list[Any], where: str) -> str:
    texts = []
    for j, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text":
            texts.append(_string(part.get("content"), f"{where}[{j}].content"))
        elif kind not in _SKIPPED_PARTS:
            raise ImportError_(f"{where}[{j}].type: unknown part type {kind!r}")
    return "".join(texts)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ImportError_(f"{where}: expected a string, got {value!r}")
    return value


def _tool_call(call_id: Any, name: Any, arguments: Any, where: str) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise ImportError_(f"{where}: a tool call needs a 'name', got {name!r}")
    if not isinstance(arguments, str):
        arguments = json.dumps({} if arguments is None else arguments)
    function = {"name": name, "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def _indexed(attrs: Mapping[str, Any], prefix: str) -> list[tuple[int, dict[str, Any]]]:
    """``prefix.N.rest`` attributes grouped by N (in order of N), each ``{rest: value}``."""
    groups: dict[int, dict[str, Any]] = {}
    pattern = re.compile(re.escape(prefix) + r"(\d+)\.(.+)")
    for key, value in attrs.items():
        match = pattern.fullmatch(key)
        if match:
            groups.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return sorted(groups.items())


def _indexed_messages(
    attrs: Mapping[str, Any], prefix: str, span: _Span, inner: str
) -> list[tuple[str, dict[str, Any]]]:
    """Messages of indexed attributes: OpenLLMetry's (``inner`` empty) or OpenInference's
    (``inner`` ``message.``, tool calls a further ``tool_call.`` in)."""
    out: list[tuple[str, dict[str, Any]]] = []
    call_inner = "tool_call." if inner else ""
    name_key, args_key = ("function.name", "function.arguments") if inner else ("name", "arguments")
    for n, fields in _indexed(attrs, prefix):
        where = f"{span.where}: {prefix}{n}"
        fields = {k[len(inner) :]: v for k, v in fields.items() if k.startswith(inner)}
        role = fields.get("role")
        content = fields.get("content")
        if content is None and inner:
            texts = [
                part.get("message_content.text") or ""
                for _, part in _indexed(fields, "contents.")
                if part.get("message_content.type", "text") == "text"
            ]
            content = "".join(texts) if texts else None
        message: dict[str, Any] = {"role": role, "content": content}
        calls = []
        for m, call in _indexed(fields, "tool_calls."):
            call = {k[len(call_inner) :]: v for k, v in call.items() if k.startswith(call_inner)}
            at = f"{where}.{inner}tool_calls.{m}"
            calls.append(_tool_call(call.get("id"), call.get(name_key), call.get(args_key), at))
        if calls:
            message["tool_calls"] = calls
        if "tool_call_id" in fields:
            message["tool_call_id"] = fields["tool_call_id"]
        if role != "assistant" and message["content"] is None:
            message["content"] = ""
        out.append((where, message))
    return out


def _tools(spans: Sequence[_Span]) -> list[dict[str, Any]]:
    """The tools of the last call that names any."""
    for span in reversed(spans):
        attrs = span.attrs
        if "gen_ai.tool.definitions" in attrs:
            raw = _json(attrs, "gen_ai.tool.definitions", span)
            if not isinstance(raw, list):
                raise ImportError_(f"{span.where}: gen_ai.tool.definitions: expected a list")
            return [
                _tool(t, f"{span.where}: gen_ai.tool.definitions[{i}]") for i, t in enumerate(raw)
            ]
        schemas = _indexed(attrs, "llm.tools.")
        if schemas:
            tools = []
            for n, _ in schemas:
                key = f"llm.tools.{n}.tool.json_schema"
                tools.append(_tool(_json(attrs, key, span), f"{span.where}: {key}"))
            return tools
        functions = _indexed(attrs, "llm.request.functions.")
        if functions:
            return [
                _tool(
                    {**f, "parameters": _loads(f["parameters"])} if "parameters" in f else f,
                    f"{span.where}: llm.request.functions.{n}",
                )
                for n, f in functions
            ]
    return []


def _tool(tool: Any, where: str) -> dict[str, Any]:
    """A tool definition as OpenAI chat's: ``{"type": "function", "function": {...}}``,
    from that shape or the flat one (``name`` beside ``type``)."""
    if isinstance(tool, Mapping) and isinstance(tool.get("function"), Mapping):
        return {"type": "function", "function": dict(tool["function"])}
    if not isinstance(tool, Mapping) or not isinstance(tool.get("name"), str):
        raise ImportError_(f"{where}: expected a tool definition with a 'name'")
    function = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
    return {"type": "function", "function": function}
