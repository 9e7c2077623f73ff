"""Anthropic content blocks, one at a time, to and from the engine's content blocks.

Owned here: every block type a request may carry (``text``, ``image``,
``document``, ``thinking``, ``tool_use``, ``tool_result`` and its content, and the
block types carried whole as RawBlocks), their media sources, and which role may
send which. Messages, roles and the ``system`` parameter are :mod:`.anthropic`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from reduction_app.engine.blocks import (
    AssistantGenText,
    ContentBlock,
    FunctionToolCall,
    FunctionToolResult,
    RawBlock,
    Reasoning,
    ToolResultContent,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._common import (
    BOOL,
    LIST,
    NULL,
    OBJECT,
    STR,
    as_object,
    check_depth,
    check_fields,
    check_type,
    copy_json,
    keep,
    req_name,
    req_object,
    req_str,
    required,
    restore,
)
from reduction_app.engine.messages import Media

__all__ = ["ROLE_BLOCKS", "SHAPE", "TEXT_BLOCKS", "block_from", "shaped", "wire_block"]

_P = "anthropic."
SHAPE = _P + "content_shape"

# Per block type: its fields kept verbatim in extra, with their allowed JSON types.
_KEPT: dict[str, dict[str, tuple[type, ...]]] = {
    "text": {"cache_control": OBJECT, "citations": LIST + NULL},
    "image": {"cache_control": OBJECT},
    "document": {"title": STR + NULL, "context": STR + NULL}
    | {"citations": OBJECT + NULL, "cache_control": OBJECT},
    "thinking": {"signature": STR},
    "tool_use": {"cache_control": OBJECT},
    "tool_result": {"is_error": BOOL, "cache_control": OBJECT},
}
# Per block type: every field it may carry.
_FIELDS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text", *_KEPT["text"]}),
    "image": frozenset({"type", "source", *_KEPT["image"]}),
    "document": frozenset({"type", "source", *_KEPT["document"]}),
    "thinking": frozenset({"type", "thinking", *_KEPT["thinking"]}),
    "tool_use": frozenset({"type", "id", "name", "input", *_KEPT["tool_use"]}),
    "tool_result": frozenset({"type", "tool_use_id", "content", *_KEPT["tool_result"]}),
}
# The modelled block types each role may send.
ROLE_BLOCKS = {
    "user": frozenset({"text", "image", "document", "tool_result"}),
    "assistant": frozenset({"text", "thinking", "tool_use"}),
}
# Documented block types the engine never rewrites: carried whole as RawBlock.
_RAW_TYPES = frozenset(
    {"redacted_thinking", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result"}
    | {"code_execution_tool_result", "bash_code_execution_tool_result"}
    | {"text_editor_code_execution_tool_result", "tool_search_tool_result"}
    | {"mcp_tool_use", "mcp_tool_result", "container_upload", "search_result"}
)
_SOURCE_FIELDS = {
    "base64": frozenset({"type", "media_type", "data"}),
    "url": frozenset({"type", "url"}),
    "file": frozenset({"type", "file_id"}),
}
TEXT_BLOCKS: dict[str, type[UserInputText | AssistantGenText]] = {
    "user": UserInputText,
    "assistant": AssistantGenText,
}
# Document sources that hold the document itself rather than point at it.
_INLINE_SOURCES = frozenset({"text", "content"})


def block_from(raw: Any, role: str, where: str, names: dict[str, str]) -> ContentBlock:
    """One content block; ``names`` maps the tool_use ids seen so far to their tool names."""
    obj = as_object(raw, where)
    kind = req_str(obj, "type", where)
    if kind in _RAW_TYPES:
        return RawBlock(data=copy_json(obj, where))
    if kind not in _FIELDS:
        raise FormatError(f"{where}.type", f"unknown block type {kind!r}")
    if kind not in ROLE_BLOCKS[role]:
        raise FormatError(
            f"{where}.type", f"block type {kind!r} is not allowed in a {role} message"
        )
    check_fields(obj, _FIELDS[kind], where)
    extra = keep(obj, _KEPT[kind], _P, where)
    if kind == "text":
        return TEXT_BLOCKS[role](text=req_str(obj, "text", where), extra=extra)
    if kind in ("image", "document"):
        media, source_extra = _source_from(obj, kind, where)
        if kind == "image":
            return UserInputImage(media=media, extra=extra)
        return UserInputFile(media=media, extra=extra | source_extra)
    if kind == "thinking":
        required(obj, "signature", where)
        return Reasoning(text=req_str(obj, "thinking", where), extra=extra)
    if kind == "tool_use":
        call_id = req_name(obj, "id", where)
        names[call_id] = req_name(obj, "name", where)
        arguments = check_depth(req_object(obj, "input", where), f"{where}.input")
        return FunctionToolCall(
            call_id=call_id,
            name=names[call_id],
            arguments=json.dumps(arguments, ensure_ascii=False),
            extra=extra,
        )
    call_id = req_name(obj, "tool_use_id", where)
    content, shape = _result_content_from(obj, where)
    return FunctionToolResult(
        call_id=call_id, name=names.get(call_id, ""), content=content, extra=extra | shape
    )


def _source_from(obj: Mapping[str, Any], kind: str, where: str) -> tuple[Media, dict[str, Any]]:
    """The media of an image or document, and the extra of a document's inline source."""
    source = req_object(obj, "source", where)
    where += ".source"
    source_type = req_str(source, "type", where)
    if kind == "document" and source_type in _INLINE_SOURCES:
        return Media(), {_P + "source": copy_json(source, where)}
    if source_type not in _SOURCE_FIELDS:
        raise FormatError(f"{where}.type", f"unknown source type {source_type!r}")
    check_fields(source, _SOURCE_FIELDS[source_type], where)
    if source_type == "base64":
        return Media(
            base64_data=req_str(source, "data", where),
            mime_type=req_str(source, "media_type", where),
        ), {}
    if source_type == "url":
        return Media(url=req_str(source, "url", where)), {}
    file_id = req_str(source, "file_id", where)
    return Media(extra={_P + "file_id": file_id}), {}


def _result_content_from(
    obj: Mapping[str, Any], where: str
) -> tuple[tuple[ToolResultContent, ...], dict[str, Any]]:
    if "content" not in obj:
        return (), {SHAPE: "absent"}
    value = check_type(obj["content"], (str, list), f"{where}.content")
    if isinstance(value, str):
        return (ToolResultContent(type="text", text=value),), {SHAPE: "string"}
    parts = []
    for i, raw in enumerate(value):
        inner = f"{where}.content[{i}]"
        block = block_from(raw, "user", inner, {})
        if isinstance(block, UserInputText):
            parts.append(ToolResultContent(type="text", text=block.text, extra=block.extra))
        elif isinstance(block, UserInputImage):
            parts.append(ToolResultContent(type="image", media=block.media, extra=block.extra))
        elif isinstance(block, UserInputFile):
            parts.append(ToolResultContent(type="file", media=block.media, extra=block.extra))
        else:
            kind = raw["type"]
            raise FormatError(f"{inner}.type", f"block type {kind!r} cannot be in a tool_result")
    return tuple(parts), {}


def shaped(blocks: list[dict[str, Any]], extra: Mapping[str, Any]) -> Any:
    """``blocks``, or its text when it came as a plain string and is still one bare text."""
    bare = len(blocks) == 1 and blocks[0].keys() == {"type", "text"} and blocks[0]["type"] == "text"
    return blocks[0]["text"] if bare and extra.get(SHAPE) == "string" else blocks


def wire_block(block: ContentBlock, where: str) -> dict[str, Any]:
    match block:
        case RawBlock():
            return dict(copy_json(block.data))
        case UserInputText() | AssistantGenText():
            return {"type": "text", "text": block.text} | restore(block.extra, _KEPT["text"], _P)
        case UserInputImage():
            source = _source_to(block.media, block.extra, where)
            return {"type": "image", "source": source} | restore(block.extra, _KEPT["image"], _P)
        case UserInputFile():
            source = _source_to(block.media, block.extra, where)
            kept = restore(block.extra, _KEPT["document"], _P)
            return {"type": "document", "source": source} | kept
        case Reasoning():
            kept = restore(block.extra, _KEPT["thinking"], _P)
            return {"type": "thinking", "thinking": block.text} | kept
        case FunctionToolCall():
            head: dict[str, Any] = {"type": "tool_use", "id": block.call_id, "name": block.name}
            head["input"] = _input_to(block.arguments, where)
            return head | restore(block.extra, _KEPT["tool_use"], _P)
        case FunctionToolResult():
            out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.call_id}
            parts = [_part_to(p, f"{where}.content[{i}]") for i, p in enumerate(block.content)]
            if parts or block.extra.get(SHAPE) != "absent":
                out["content"] = shaped(parts, block.extra)
            return out | restore(block.extra, _KEPT["tool_result"], _P)
    raise FormatError(where, f"block type {block.type!r} has no Anthropic form")


def _input_to(arguments: str, where: str) -> dict[str, Any]:
    """A tool call's arguments as the ``input`` object; no arguments at all is ``{}``."""
    try:
        value = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise FormatError(f"{where}.arguments", f"expected a JSON object, got {arguments!r}")
    return value


def _part_to(part: ToolResultContent, where: str) -> dict[str, Any]:
    if part.type == "text":
        return wire_block(UserInputText(text=part.text, extra=part.extra), where)
    if part.media is not None and part.type == "image":
        return wire_block(UserInputImage(media=part.media, extra=part.extra), where)
    if part.media is not None and part.type == "file":
        return wire_block(UserInputFile(media=part.media, extra=part.extra), where)
    raise FormatError(where, f"tool result part type {part.type!r} has no Anthropic form")


def _source_to(media: Media, extra: Mapping[str, Any], where: str) -> dict[str, Any]:
    if _P + "source" in extra:
        return dict(copy_json(extra[_P + "source"]))
    if media.base64_data is not None:
        return {"type": "base64", "media_type": media.mime_type, "data": media.base64_data}
    if media.url is not None:
        return {"type": "url", "url": media.url}
    if _P + "file_id" in media.extra:
        return {"type": "file", "file_id": media.extra[_P + "file_id"]}
    raise FormatError(where, "the media has no url, base64_data or file id")
