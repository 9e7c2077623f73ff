"""OpenAI Chat Completions: the ``messages`` list to and from chat :class:`Message` values.

This module owns the one parser (and dumper) of Chat Completions messages and their
content parts; tool definitions live in :mod:`.tools`, the values in
:mod:`reduction_app.engine.messages`. How fields map is in docs/engine.md, "Wire formats".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._common import (
    AUDIO_FORMAT,
    AUDIO_MIME,
    LIST,
    NULL,
    OBJECT,
    STR,
    as_list,
    as_object,
    as_sequence,
    as_str,
    check_fields,
    check_type,
    join_str,
    keep,
    req_name,
    req_str,
    required,
    restore,
    split_str,
)
from reduction_app.engine.messages import Media, Message, MessagePart, ToolCall

__all__ = ["messages_from_openai", "messages_to_openai"]

_P = "openai."
_SHAPE = _P + "content_shape"

# Assistant fields with no slot of their own, kept verbatim, with their allowed JSON types.
_ASSISTANT_KEPT = {
    "refusal": STR + NULL,
    "audio": OBJECT + NULL,
    "function_call": OBJECT + NULL,
    "annotations": LIST + NULL,
}
# Every field a message of each role may carry; anything else is refused.
_FIELDS: dict[str, frozenset[str]] = {
    "system": frozenset({"role", "content", "name"}),
    "developer": frozenset({"role", "content", "name"}),
    "user": frozenset({"role", "content", "name"}),
    "assistant": frozenset(
        {"role", "content", "name", "tool_calls", "reasoning_content", *_ASSISTANT_KEPT}
    ),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}
# The content part types the API accepts from each role.
_PART_TYPES: dict[str, frozenset[str]] = {
    "system": frozenset({"text"}),
    "developer": frozenset({"text"}),
    "tool": frozenset({"text"}),
    "user": frozenset({"text", "image_url", "input_audio", "file"}),
    "assistant": frozenset({"text", "refusal"}),
}
_ALL_PART_TYPES = frozenset().union(*_PART_TYPES.values())
# Message fields only some roles may carry: dumping them on another role would drop them.
_ROLE_ONLY: dict[str, frozenset[str]] = {
    "user_input_multi_content": frozenset({"system", "user", "tool"}),
    "assistant_gen_multi_content": frozenset({"assistant"}),
    "tool_calls": frozenset({"assistant"}),
    "reasoning_content": frozenset({"assistant"}),
    "tool_call_id": frozenset({"tool"}),
    "tool_name": frozenset({"tool"}),
}


def messages_from_openai(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Parse a Chat Completions ``messages`` list; raises FormatError on anything unknown."""
    as_sequence(messages, "messages")
    return [_message_from(raw, f"messages[{i}]") for i, raw in enumerate(messages)]


def messages_to_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Dump chat messages as a Chat Completions ``messages`` list."""
    return [_message_to(message, f"messages[{i}]") for i, message in enumerate(messages)]


def _message_from(raw: Any, where: str) -> Message:
    obj = as_object(raw, where)
    role = req_str(obj, "role", where)
    if role not in _FIELDS:
        raise FormatError(f"{where}.role", f"unknown role {role!r}")
    check_fields(obj, _FIELDS[role], where)
    extra: dict[str, Any] = {_P + "role": role} if role == "developer" else {}
    content, parts, shape = _content_from(obj, role, where)
    extra |= shape
    tool_name, tool_call_id, reasoning = "", "", ""
    tool_calls: tuple[ToolCall, ...] = ()
    if role == "tool":
        tool_name, name_extra = split_str(obj, "name", _P, where)
        extra |= name_extra
        tool_call_id = req_name(obj, "tool_call_id", where)
    else:
        extra |= keep(obj, {"name": STR}, _P, where)
    if role == "assistant":
        extra |= keep(obj, _ASSISTANT_KEPT, _P, where)
        reasoning, reasoning_extra = split_str(obj, "reasoning_content", _P, where)
        tool_calls, calls_extra = _tool_calls_from(obj, where)
        extra |= reasoning_extra | calls_extra
    return Message(
        role="system" if role == "developer" else role,
        content=content,
        reasoning_content=reasoning,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id,
        tool_name=tool_name,
        user_input_multi_content=() if role == "assistant" else parts,
        assistant_gen_multi_content=parts if role == "assistant" else (),
        extra=extra,
    )


def _content_from(
    obj: Mapping[str, Any], role: str, where: str
) -> tuple[str, tuple[MessagePart, ...], dict[str, Any]]:
    """The text, the parts and the shape marker of a message's ``content``."""
    if "content" not in obj:
        if role != "assistant":
            raise FormatError(where, "missing field 'content'")
        return "", (), {_SHAPE: "absent"}
    value = obj["content"]
    if value is None and role == "assistant":
        return "", (), {_SHAPE: "null"}
    if isinstance(value, str):
        return value, (), {}
    if isinstance(value, list):
        parts = tuple(
            _part_from(part, role, f"{where}.content[{i}]") for i, part in enumerate(value)
        )
        return "", parts, {} if parts else {_SHAPE: "empty_list"}
    expected = "a string, a list or null" if role == "assistant" else "a string or a list"
    raise FormatError(f"{where}.content", f"expected {expected}, got {value!r}")


def _part_from(raw: Any, role: str, where: str) -> MessagePart:
    obj = as_object(raw, where)
    kind = req_str(obj, "type", where)
    if kind not in _PART_TYPES[role]:
        known = kind in _ALL_PART_TYPES
        problem = f"part type {kind!r} is not allowed in a {role} message"
        raise FormatError(f"{where}.type", problem if known else f"unknown part type {kind!r}")
    check_fields(obj, {"type", kind}, where)
    value = required(obj, kind, where)
    inner = f"{where}.{kind}"
    if kind == "text":
        return MessagePart(type="text", text=as_str(value, inner))
    if kind == "refusal":
        return MessagePart(type="text", text=as_str(value, inner), extra={_P + "part_type": kind})
    body = as_object(value, inner)
    if kind == "image_url":
        check_fields(body, {"url", "detail"}, inner)
        url = req_str(body, "url", inner)
        detail, extra = split_str(body, "detail", _P, inner)
        return MessagePart(type="image_url", media=Media(url=url, detail=detail, extra=extra))
    if kind == "input_audio":
        check_fields(body, {"data", "format"}, inner)
        data = req_str(body, "data", inner)
        fmt = req_str(body, "format", inner)
        if fmt not in AUDIO_MIME:
            raise FormatError(f"{inner}.format", f"unknown audio format {fmt!r}")
        return MessagePart(
            type="audio_url", media=Media(base64_data=data, mime_type=AUDIO_MIME[fmt])
        )
    check_fields(body, {"file_id", "file_data", "filename"}, inner)
    file_data = as_str(body["file_data"], f"{inner}.file_data") if "file_data" in body else None
    name, extra = split_str(body, "filename", _P, inner)
    extra |= keep(body, {"file_id": STR}, _P, inner)
    media = Media(base64_data=file_data, name=name, extra=extra)
    return MessagePart(type="file_url", media=media)


def _tool_calls_from(
    obj: Mapping[str, Any], where: str
) -> tuple[tuple[ToolCall, ...], dict[str, Any]]:
    """The calls of an assistant message; an empty or ``null`` list is kept as it came."""
    value = obj.get("tool_calls")
    if value is None or value == []:
        return (), ({_P + "tool_calls": value} if "tool_calls" in obj else {})
    calls = as_list(value, f"{where}.tool_calls")
    return tuple(
        _tool_call_from(call, f"{where}.tool_calls[{i}]") for i, call in enumerate(calls)
    ), {}


def _tool_call_from(raw: Any, where: str) -> ToolCall:
    obj = as_object(raw, where)
    kind = req_str(obj, "type", where)
    if kind != "function":
        raise FormatError(f"{where}.type", f"unknown tool call type {kind!r}")
    check_fields(obj, {"id", "type", "function", "index"}, where)
    inner = f"{where}.function"
    function = as_object(required(obj, "function", where), inner)
    check_fields(function, {"name", "arguments"}, inner)
    return ToolCall(
        id=req_name(obj, "id", where),
        name=req_name(function, "name", inner),
        arguments=req_str(function, "arguments", inner),
        index=check_type(obj["index"], (int,), f"{where}.index") if "index" in obj else None,
    )


def _message_to(message: Message, where: str) -> dict[str, Any]:
    role, extra = message.role, message.extra
    if role not in ("system", "user", "assistant", "tool"):
        raise FormatError(f"{where}.role", f"unknown role {role!r}")
    wire_role = "developer" if role == "system" and extra.get(_P + "role") == "developer" else role
    assistant = role == "assistant"
    parts = message.assistant_gen_multi_content if assistant else message.user_input_multi_content
    for field, roles in _ROLE_ONLY.items():
        if role not in roles and getattr(message, field):
            raise FormatError(where, f"{role} messages cannot carry {field}")
    out: dict[str, Any] = {"role": wire_role}
    if parts:
        out["content"] = [
            _part_to(part, wire_role, f"{where}.content[{i}]") for i, part in enumerate(parts)
        ]
    elif message.content or extra.get(_SHAPE) not in ("null", "absent", "empty_list"):
        out["content"] = message.content
    elif extra[_SHAPE] != "absent":
        out["content"] = None if extra[_SHAPE] == "null" else []
    if role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out |= join_str(message.tool_name, extra, "name", _P)
    else:
        out |= restore(extra, ("name",), _P)
    if assistant:
        out |= restore(extra, _ASSISTANT_KEPT, _P)
        out |= join_str(message.reasoning_content, extra, "reasoning_content", _P)
        if message.tool_calls:
            out["tool_calls"] = [
                _tool_call_to(call, f"{where}.tool_calls[{i}]")
                for i, call in enumerate(message.tool_calls)
            ]
        else:
            out |= restore(extra, ("tool_calls",), _P)
    return out


def _part_to(part: MessagePart, role: str, where: str) -> dict[str, Any]:
    wire_type = {"image_url": "image_url", "audio_url": "input_audio", "file_url": "file"}.get(
        part.type, str(part.extra.get(_P + "part_type", part.type))
    )
    if wire_type not in _PART_TYPES[role]:
        raise FormatError(where, f"part type {part.type!r} cannot go in an OpenAI {role} message")
    if part.type == "text":
        return {"type": wire_type, wire_type: part.text}
    media = part.media
    if media is None:
        raise FormatError(where, f"part type {part.type!r} has no media")
    if part.type == "image_url":
        url = media.url
        if url is None:
            if media.base64_data is None:
                raise FormatError(where, "an image part needs a url or base64_data")
            url = f"data:{media.mime_type};base64,{media.base64_data}"
        image = {"url": url} | join_str(media.detail, media.extra, "detail", _P)
        return {"type": "image_url", "image_url": image}
    if part.type == "audio_url":
        if media.base64_data is None or media.mime_type not in AUDIO_FORMAT:
            raise FormatError(where, "an audio part needs base64_data and a wav or mp3 mime_type")
        audio = {"data": media.base64_data, "format": AUDIO_FORMAT[media.mime_type]}
        return {"type": "input_audio", "input_audio": audio}
    file: dict[str, Any] = restore(media.extra, ("file_id",), _P)
    if media.base64_data is not None:
        file["file_data"] = media.base64_data
    file |= join_str(media.name, media.extra, "filename", _P)
    return {"type": "file", "file": file}


def _tool_call_to(call: ToolCall, where: str) -> dict[str, Any]:
    if call.type != "function":
        raise FormatError(f"{where}.type", f"unknown tool call type {call.type!r}")
    out: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }
    if call.index is not None:
        out["index"] = call.index
    return out
