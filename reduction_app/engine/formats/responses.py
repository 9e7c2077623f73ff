"""OpenAI Responses: ``input`` items to and from :class:`AgenticMessage` values.

This module owns the one parser (and dumper) of Responses input items: messages,
function calls and their outputs, reasoning, and the provider's other items carried
whole as RawBlocks. Tool definitions live in :mod:`.tools`. How items group into
messages and how fields map is in docs/engine.md, "Wire formats".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reduction_app.engine.blocks import (
    AgenticMessage,
    AssistantGenText,
    ContentBlock,
    FunctionToolCall,
    FunctionToolResult,
    RawBlock,
    Reasoning,
    ToolResultContent,
    UserInputText,
)
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._common import (
    LIST,
    NULL,
    STR,
    as_list,
    as_object,
    as_sequence,
    check_fields,
    check_type,
    copy_json,
    keep,
    req_name,
    req_str,
    required,
    restore,
)
from reduction_app.engine.formats._responses_parts import (
    checked,
    is_part,
    part_from,
    part_to,
    result_part_from,
    result_part_to,
)

__all__ = ["messages_from_responses", "messages_to_responses"]

_P = "responses."
_SHAPE = _P + "content_shape"
_ROLES = frozenset({"user", "assistant", "system", "developer"})
_MESSAGE_KEPT = {"type": STR, "id": STR, "status": STR}
_ITEM_KEPT = {"id": STR, "status": STR}
_REASONING_KEPT = {
    "id": STR,
    "content": LIST + NULL,
    "encrypted_content": STR + NULL,
    "status": STR,
}
# Every field of each modelled item type.
_FIELDS: dict[str, frozenset[str]] = {
    "message": frozenset({"role", "content", *_MESSAGE_KEPT}),
    "function_call": frozenset({"type", "call_id", "name", "arguments", *_ITEM_KEPT}),
    "function_call_output": frozenset({"type", "call_id", "output", *_ITEM_KEPT}),
    "reasoning": frozenset({"type", "summary", *_REASONING_KEPT}),
}
_ITEM_TYPES = frozenset({"function_call", "function_call_output", "reasoning"})
# Documented items the engine never rewrites, carried whole, by the side that sends them.
_MODEL_ITEMS = frozenset(
    {"web_search_call", "file_search_call", "computer_call", "image_generation_call"}
    | {"code_interpreter_call", "local_shell_call", "shell_call", "apply_patch_call"}
    | {"mcp_list_tools", "mcp_approval_request", "mcp_call", "custom_tool_call"}
)
_CLIENT_ITEMS = frozenset(
    {"computer_call_output", "local_shell_call_output", "shell_call_output"}
    | {"apply_patch_call_output", "mcp_approval_response", "custom_tool_call_output"}
    | {"item_reference"}
)
_RAW_ITEMS = dict.fromkeys(_MODEL_ITEMS, "assistant") | dict.fromkeys(_CLIENT_ITEMS, "user")


class _Group:
    """An AgenticMessage being built from consecutive items."""

    def __init__(self, role: str, has_message: bool) -> None:
        self.role, self.has_message = role, has_message
        self.extra: dict[str, Any] = {}
        self.blocks: list[ContentBlock] = []


def messages_from_responses(
    items: Sequence[Mapping[str, Any]], *, names: Mapping[str, str] | None = None
) -> list[AgenticMessage]:
    """Parse a Responses ``input`` item list; raises FormatError on anything unknown.
    ``names``: the tool names of calls made before these items, by call id.

    Items group into messages so that dumping, which walks the blocks in order, gives the
    same item list back. A message item starts a new AgenticMessage, except that an
    assistant message with content joins the assistant items just before it (reasoning,
    calls) when no message has joined them yet, so one turn stays one AgenticMessage.
    Model-side items (``function_call``, ``reasoning``, ``web_search_call``, ...) join the
    assistant AgenticMessage before them; client-side items (``function_call_output``,
    ``computer_call_output``, ...) join a user AgenticMessage made of such items only.
    Otherwise an item starts a new one.
    """
    as_sequence(items, "input")
    groups: list[_Group] = []
    names = dict(names or {})
    for i, raw in enumerate(items):
        where = f"input[{i}]"
        obj = as_object(raw, where)
        kind = req_str(obj, "type", where) if "type" in obj else "message"
        last = groups[-1] if groups else None
        if kind == "message":
            role, blocks, extra = _message_from(obj, where)
            joins = blocks and last and last.role == role == "assistant" and not last.has_message
            if last is None or not joins:
                last = _Group(role, has_message=True)
                groups.append(last)
            last.extra |= extra
            last.has_message = True
            last.blocks += blocks
            continue
        side, block = _item_from(obj, kind, where, names)
        if last is None or last.role != side or (side == "user" and last.has_message):
            last = _Group(side, has_message=False)
            groups.append(last)
        last.blocks.append(block)
    return [
        AgenticMessage(role=g.role, content_blocks=tuple(g.blocks), extra=g.extra) for g in groups
    ]


def _message_from(
    obj: Mapping[str, Any], where: str
) -> tuple[str, list[ContentBlock], dict[str, Any]]:
    check_fields(obj, _FIELDS["message"], where)
    role = req_str(obj, "role", where)
    if role not in _ROLES:
        raise FormatError(f"{where}.role", f"unknown role {role!r}")
    extra = keep(obj, _MESSAGE_KEPT, _P, where) | (
        {_P + "role": role} if role == "developer" else {}
    )
    content = required(obj, "content", where)
    if isinstance(content, str):
        text = (
            AssistantGenText(text=content) if role == "assistant" else UserInputText(text=content)
        )
        return _agentic_role(role), [text], extra | {_SHAPE: "string"}
    content = check_type(content, (str, list), f"{where}.content")
    blocks = [part_from(part, f"{where}.content[{j}]") for j, part in enumerate(content)]
    return _agentic_role(role), blocks, extra | ({} if blocks else {_SHAPE: "empty_list"})


def _agentic_role(role: str) -> str:
    return "system" if role == "developer" else role


def _item_from(
    obj: Mapping[str, Any], kind: str, where: str, names: dict[str, str]
) -> tuple[str, ContentBlock]:
    """The side an item belongs to and its block; ``names`` maps call ids to tool names."""
    if kind in _RAW_ITEMS:
        return _RAW_ITEMS[kind], RawBlock(data=copy_json(obj, where))
    obj, kind = checked(obj, _ITEM_TYPES, _FIELDS, where, "item")
    if kind == "reasoning":
        extra = keep(obj, _REASONING_KEPT | {"summary": LIST}, _P, where)
        texts = []
        for j, raw in enumerate(as_list(required(obj, "summary", where), f"{where}.summary")):
            inner = f"{where}.summary[{j}]"
            part = as_object(raw, inner)
            check_fields(part, {"type", "text"}, inner)
            if req_str(part, "type", inner) != "summary_text":
                raise FormatError(f"{inner}.type", f"unknown summary type {part['type']!r}")
            texts.append(req_str(part, "text", inner))
        return "assistant", Reasoning(text="\n\n".join(texts), extra=extra)
    call_id = req_name(obj, "call_id", where)
    extra = keep(obj, _ITEM_KEPT, _P, where)
    if kind == "function_call":
        names[call_id] = req_name(obj, "name", where)
        arguments = req_str(obj, "arguments", where)
        return "assistant", FunctionToolCall(
            call_id=call_id, name=names[call_id], arguments=arguments, extra=extra
        )
    output = check_type(required(obj, "output", where), (str, list), f"{where}.output")
    if isinstance(output, str):
        content: tuple[ToolResultContent, ...] = (ToolResultContent(type="text", text=output),)
        extra[_SHAPE] = "string"
    else:
        content = tuple(result_part_from(p, f"{where}.output[{j}]") for j, p in enumerate(output))
    return "user", FunctionToolResult(
        call_id=call_id, name=names.get(call_id, ""), content=content, extra=extra
    )


def messages_to_responses(messages: Sequence[AgenticMessage]) -> list[dict[str, Any]]:
    """Dump agentic messages as a Responses ``input`` item list."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if message.role not in ("system", "user", "assistant"):
            raise FormatError(f"{where}.role", f"unknown role {message.role!r}")
        blocks = message.content_blocks
        # The message's own fields go to its first run of content parts, or to an empty one.
        meta = True
        if not blocks or (not is_part(blocks[0]) and message.extra.get(_SHAPE) == "empty_list"):
            out.append(_message_to(message, (), True, where))
            meta = False
        j = 0
        while j < len(blocks):
            if not is_part(blocks[j]):
                out.append(_item_to(blocks[j], f"{where}.content_blocks[{j}]"))
                j += 1
                continue
            end = j
            while end < len(blocks) and is_part(blocks[end]):
                end += 1
            out.append(_message_to(message, blocks[j:end], meta, f"{where}.content_blocks", j))
            meta, j = False, end
    return out


def _message_to(
    message: AgenticMessage, parts: Sequence[ContentBlock], meta: bool, where: str, start: int = 0
) -> dict[str, Any]:
    extra = message.extra
    developer = message.role == "system" and extra.get(_P + "role") == "developer"
    out = restore(extra, _MESSAGE_KEPT, _P) if meta else {}
    out["role"] = "developer" if developer else message.role
    wire = [part_to(part, f"{where}[{start + k}]") for k, part in enumerate(parts)]
    bare = len(wire) == 1 and wire[0].keys() == {"type", "text"}
    string = meta and bare and extra.get(_SHAPE) == "string"
    out["content"] = wire[0]["text"] if string else wire
    return out


def _item_to(block: ContentBlock, where: str) -> dict[str, Any]:
    match block:
        case RawBlock():
            return dict(copy_json(block.data))
        case FunctionToolCall():
            call = {"type": "function_call", "call_id": block.call_id, "name": block.name}
            return call | {"arguments": block.arguments} | restore(block.extra, _ITEM_KEPT, _P)
        case FunctionToolResult():
            parts = [
                result_part_to(p, f"{where}.content[{k}]") for k, p in enumerate(block.content)
            ]
            bare = len(parts) == 1 and parts[0].keys() == {"type", "text"}
            output = parts[0]["text"] if bare and block.extra.get(_SHAPE) == "string" else parts
            head: dict[str, Any] = {
                "type": "function_call_output",
                "call_id": block.call_id,
                "output": output,
            }
            return head | restore(block.extra, _ITEM_KEPT, _P)
        case Reasoning():
            stored = block.extra.get(_P + "summary")
            if stored is None or "\n\n".join(s["text"] for s in stored) != block.text:
                stored = [{"type": "summary_text", "text": block.text}] if block.text else []
            kept = restore(block.extra, _REASONING_KEPT, _P)
            return {"type": "reasoning", "summary": copy_json(stored)} | kept
    raise FormatError(where, f"block type {block.type!r} has no Responses form")
