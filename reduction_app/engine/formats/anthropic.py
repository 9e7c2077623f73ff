"""Anthropic Messages: ``system`` and ``messages`` to and from :class:`AgenticMessage` values.

This module owns the one parser (and dumper) of Anthropic request messages: roles, the
``system`` parameter and the content shape. Each block is read and written by
:mod:`._anthropic_blocks`; tool definitions live in :mod:`.tools`. How fields map is in
docs/engine.md, "Wire formats".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reduction_app.engine.blocks import (
    AgenticMessage,
    RawBlock,
    UserInputText,
)
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._anthropic_blocks import (
    ROLE_BLOCKS,
    SHAPE,
    TEXT_BLOCKS,
    block_from,
    shaped,
    wire_block,
)
from reduction_app.engine.formats._common import (
    as_object,
    as_sequence,
    check_fields,
    check_type,
    req_str,
    required,
)

__all__ = ["messages_from_anthropic", "messages_to_anthropic"]


def messages_from_anthropic(
    messages: Sequence[Mapping[str, Any]],
    system: str | Sequence[Mapping[str, Any]] | None = None,
    *,
    names: Mapping[str, str] | None = None,
) -> list[AgenticMessage]:
    """Parse an Anthropic ``messages`` list, with the request's ``system`` parameter if any.
    ``names``: the tool names of calls made before these messages, by call id (a
    ``tool_result`` takes its tool's name from its ``tool_use``)."""
    out = [] if system is None else [_system_from(system)]
    as_sequence(messages, "messages")
    names = dict(names or {})
    for i, raw in enumerate(messages):
        where = f"messages[{i}]"
        obj = as_object(raw, where)
        check_fields(obj, {"role", "content"}, where)
        role = req_str(obj, "role", where)
        if role not in ROLE_BLOCKS:
            raise FormatError(f"{where}.role", f"unknown role {role!r}")
        content = required(obj, "content", where)
        if isinstance(content, str):
            text = TEXT_BLOCKS[role](text=content)
            out.append(AgenticMessage(role=role, content_blocks=(text,), extra={SHAPE: "string"}))
            continue
        check_type(content, (str, list), f"{where}.content")
        blocks = [
            block_from(b, role, f"{where}.content[{j}]", names) for j, b in enumerate(content)
        ]
        out.append(AgenticMessage(role=role, content_blocks=tuple(blocks)))
    return out


def _system_from(system: Any) -> AgenticMessage:
    if isinstance(system, str):
        return AgenticMessage(
            role="system", content_blocks=(UserInputText(text=system),), extra={SHAPE: "string"}
        )
    check_type(system, (str, list), "system")
    blocks = []
    for i, raw in enumerate(system):
        where = f"system[{i}]"
        obj = as_object(raw, where)
        kind = required(obj, "type", where)
        if kind != "text":
            raise FormatError(f"{where}.type", f"expected a text block, got {kind!r}")
        blocks.append(block_from(obj, "user", where, {}))
    return AgenticMessage(role="system", content_blocks=tuple(blocks))


def messages_to_anthropic(
    messages: Sequence[AgenticMessage],
) -> tuple[str | list[dict[str, Any]] | None, list[dict[str, Any]]]:
    """Dump agentic messages as Anthropic ``(system, messages)``; ``system`` is ``None``
    when the conversation has no leading system message."""
    system: str | list[dict[str, Any]] | None = None
    out = []
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if message.role == "system":
            if i != 0:
                raise FormatError(f"{where}.role", "a system message can only come first")
            system = shaped(_blocks_to(message, "system"), message.extra)
        elif message.role in ROLE_BLOCKS:
            content = shaped(_blocks_to(message, f"{where}.content"), message.extra)
            out.append({"role": message.role, "content": content})
        else:
            raise FormatError(f"{where}.role", f"unknown role {message.role!r}")
    return system, out


def _blocks_to(message: AgenticMessage, where: str) -> list[dict[str, Any]]:
    """The wire blocks of a message, each checked against what its role may send."""
    role, out = message.role, []
    for i, block in enumerate(message.content_blocks):
        wire = wire_block(block, f"{where}[{i}]")
        raw_ok = isinstance(block, RawBlock) and role in ROLE_BLOCKS
        if wire["type"] not in ROLE_BLOCKS.get(role, {"text"}) and not raw_ok:
            problem = f"block type {block.type!r} cannot go in an Anthropic {role} message"
            raise FormatError(f"{where}[{i}]", problem)
        out.append(wire)
    return out
