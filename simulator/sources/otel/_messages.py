"""The messages and tools of one chat span, in each of the three attribute styles, as
OpenAI chat messages each paired with the attribute it came from (for errors)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from simulator.recording import ImportError_
from simulator.sources.otel._spans import Span

__all__ = ["Call", "dropped_error", "loads", "read_call", "read_tools"]

_SKIPPED_PARTS = frozenset({"reasoning", "blob", "file", "uri"})


@dataclass(frozen=True)
class Call:
    """One model call: what its chat span says it was sent and answered."""

    span: Span
    input: list[tuple[str, dict[str, Any]]]  # (field the message came from, message)
    output: list[tuple[str, dict[str, Any]]]


def loads(text: str) -> Any:
    """``text`` parsed as JSON, or ``text`` itself when it is not JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def read_call(span: Span) -> Call:
    """The messages of ``span`` in whichever style it carries; one without any is an
    error (content capture off: nothing to replay), and so is one the SDK dropped
    attributes of when its messages are incomplete (:func:`dropped_error`)."""
    if not span.dropped:
        return _read_call(span)
    try:
        call = _read_call(span)
    except ImportError_ as exc:
        raise dropped_error(span) from exc
    if not _complete(span.attrs):
        raise dropped_error(span)
    return call


def dropped_error(span: Span) -> ImportError_:
    """The error for a span whose messages went with the attributes the SDK dropped."""
    return ImportError_(
        f"{span.where}: its messages are incomplete: the OpenTelemetry SDK dropped "
        f"{span.dropped} of its attributes, over its limit of attributes per span (128 by "
        "default). Record the run again with the limit raised: OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT "
        "(or OTEL_ATTRIBUTE_COUNT_LIMIT) in the environment, or "
        "TracerProvider(span_limits=SpanLimits(max_span_attributes=...)); Phoenix's "
        "register() keeps the default"
    )


def _complete(attrs: Mapping[str, Any]) -> bool:
    """Whether every indexed message from 0 up is there with its role (the SDK drops the
    oldest attributes first, so the first messages go)."""
    for prefix, inner in (
        ("gen_ai.prompt.", ""),
        ("gen_ai.completion.", ""),
        ("llm.input_messages.", "message."),
        ("llm.output_messages.", "message."),
    ):
        found = _indexed(attrs, prefix)
        if [n for n, _ in found] != list(range(len(found))):
            return False
        if any(f"{inner}role" not in fields for _, fields in found):
            return False
    firsts = ("gen_ai.input.messages", "gen_ai.prompt.0.role", "llm.input_messages.0.message.role")
    return any(key in attrs for key in firsts)


def _read_call(span: Span) -> Call:
    attrs = span.attrs
    if any(k.startswith(("gen_ai.input.messages", "gen_ai.output.messages")) for k in attrs):
        system = _json(attrs, "gen_ai.system_instructions", span)
        instructions: list[tuple[str, dict[str, Any]]] = []
        if system is not None:
            where = f"{span.where}: gen_ai.system_instructions"
            parts = system if isinstance(system, list) else [system]
            text = _parts_text(parts, where)
            instructions = [(where, {"role": "system", "content": text})]
        return Call(
            span,
            instructions + _current(attrs, "gen_ai.input.messages", span),
            _current(attrs, "gen_ai.output.messages", span),
        )
    if any(k.startswith(("gen_ai.prompt.", "gen_ai.completion.")) for k in attrs):
        return Call(
            span,
            _indexed_messages(attrs, "gen_ai.prompt.", span, ""),
            _indexed_messages(attrs, "gen_ai.completion.", span, ""),
        )
    if any(k.startswith(("llm.input_messages.", "llm.output_messages.")) for k in attrs):
        return Call(
            span,
            _indexed_messages(attrs, "llm.input_messages.", span, "message."),
            _indexed_messages(attrs, "llm.output_messages.", span, "message."),
        )
    raise ImportError_(
        f"{span.where}: a chat span without messages (were message contents recorded? "
        "OpenTelemetry's OpenAI instrumentation records them with "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY, or EVENT_ONLY with "
        "its log records in the same file)"
    )


def _json(attrs: Mapping[str, Any], key: str, span: Span) -> Any:
    value = attrs.get(key)
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ImportError_(
            f"{span.where}: {key}: not JSON: {exc.msg} at column {exc.colno}"
        ) from exc


def _current(attrs: Mapping[str, Any], key: str, span: Span) -> list[tuple[str, dict[str, Any]]]:
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
        answered = False  # tool results, which pydantic-ai sends in a user message
        for j, part in enumerate(msg["parts"]):
            at = f"{where}.parts[{j}]"
            kind = part.get("type") if isinstance(part, Mapping) else None
            if kind == "text":
                texts.append(_string(part.get("content"), f"{at}.content"))
            elif kind == "tool_call":
                calls.append(
                    _toolread_call(part.get("id"), part.get("name"), part.get("arguments"), at)
                )
            elif kind == "tool_call_response":
                # The conventions' ``response``; pydantic-ai writes ``result``.
                response = part["response"] if "response" in part else part.get("result")
                content = response if isinstance(response, str) else json.dumps(response)
                result = {"role": "tool", "tool_call_id": part.get("id"), "content": content}
                out.append((at, result))
                answered = True
            elif kind not in _SKIPPED_PARTS:
                raise ImportError_(f"{at}.type: unknown part type {kind!r}")
        if role == "assistant":
            if texts or calls:
                reply: dict[str, Any] = {"role": role, "content": "".join(texts) or None}
                if calls:
                    reply["tool_calls"] = calls
                out.append((where, reply))
        elif texts or not (role == "tool" or answered):
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


def _toolread_call(call_id: Any, name: Any, arguments: Any, where: str) -> dict[str, Any]:
    if not isinstance(name, str) or not name:
        raise ImportError_(f"{where}: a tool call needs a 'name', got {name!r}")
    if not isinstance(arguments, str):
        # Only the parsed object was recorded: written back as OpenAI writes arguments.
        arguments = json.dumps(
            {} if arguments is None else arguments, separators=(",", ":"), ensure_ascii=False
        )
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
    attrs: Mapping[str, Any], prefix: str, span: Span, inner: str
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
            calls.append(_toolread_call(call.get("id"), call.get(name_key), call.get(args_key), at))
        if calls:
            message["tool_calls"] = calls
        if "tool_call_id" in fields:
            message["tool_call_id"] = fields["tool_call_id"]
        if role != "assistant" and message["content"] is None:
            message["content"] = ""
        out.append((where, message))
    return out


def read_tools(spans: Sequence[Span]) -> list[dict[str, Any]]:
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
                    {**f, "parameters": loads(f["parameters"])} if "parameters" in f else f,
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
