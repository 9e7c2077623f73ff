"""The registry of wire formats: one record per format, and dispatch by its name.

Everything that takes a format by name (the REST API, the database's choices, the
simulator's importer, the app's replays) reads it here, so a new format is a new record
here and a module next to this one. It parses nothing itself; code that knows its format
statically may call the format's module directly and keep its precise types.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeVar

from reduction_app.engine.access import AnyMessage, result_ids, tool_calls_of
from reduction_app.engine.blocks import AgenticMessage
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats.anthropic import messages_from_anthropic, messages_to_anthropic
from reduction_app.engine.formats.openai_chat import messages_from_openai, messages_to_openai
from reduction_app.engine.formats.responses import messages_from_responses, messages_to_responses
from reduction_app.engine.formats.tools import (
    tools_from_anthropic,
    tools_from_openai,
    tools_from_responses,
    tools_to_anthropic,
    tools_to_openai,
    tools_to_responses,
)
from reduction_app.engine.messages import Message, ToolInfo

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "MessageStyle",
    "SystemParam",
    "WireFormat",
    "dump",
    "dump_tools",
    "get_format",
    "parse",
    "parse_following",
    "parse_tools",
]

MessageStyle = Literal["chat", "agentic"]
"""``chat``: :class:`~reduction_app.engine.messages.Message` values;
``agentic``: :class:`~reduction_app.engine.blocks.AgenticMessage` values."""

SystemParam = str | list[dict[str, Any]] | None
"""A top-level ``system`` parameter as it is on the wire (Anthropic: a string or a list
of text blocks); ``None`` when there is none."""

_M = TypeVar("_M", Message, AgenticMessage)


@dataclass(frozen=True, kw_only=True, slots=True)
class WireFormat:
    """One wire format: its names, the shape of its request body, and its functions."""

    name: str
    """The name the REST API, the database and the simulator use: ``openai_chat``."""
    label: str
    """The name people read: ``OpenAI chat``."""
    key: str
    """The short name its ``extra`` keys are filed under (``openai.role``), and its key in
    the read_file tool's definitions."""
    style: MessageStyle
    """The engine values its messages parse into."""
    messages_key: str
    """The request-body field that holds the conversation: ``messages`` or ``input``."""
    takes_system: bool
    """Whether a ``system`` parameter sits beside the messages (Anthropic). It is parsed
    into a leading system message and dumped back out of it."""
    body_fields: frozenset[str]
    """The top-level fields a conversation saved in this format may have: those read
    (the messages, ``tools``, ``system``) and request parameters kept beside them that
    the engine ignores (``model``, ``max_tokens``, ``instructions``)."""
    parse_messages: Callable[[Sequence[Mapping[str, Any]], SystemParam], list[AnyMessage]]
    """``(messages, system)`` to engine messages; ``system`` is ``None`` unless
    :attr:`takes_system`."""
    dump_messages: Callable[[Sequence[AnyMessage]], tuple[SystemParam, list[dict[str, Any]]]]
    """Engine messages to ``(system, messages)``; ``system`` is ``None`` unless
    :attr:`takes_system` and the conversation starts with a system message."""
    parse_tools: Callable[[Sequence[Mapping[str, Any]]], list[ToolInfo]]
    """The ``tools`` parameter to tool definitions."""
    dump_tools: Callable[[Sequence[ToolInfo]], list[dict[str, Any]]]
    """Tool definitions to the ``tools`` parameter."""

    def __repr__(self) -> str:
        return f"WireFormat({self.name!r})"


def _of_style(messages: Sequence[AnyMessage], cls: type[_M], name: str) -> list[_M]:
    """``messages``, each checked to be a ``cls``: a format dumps one message style only."""
    out: list[_M] = []
    for i, message in enumerate(messages):
        if not isinstance(message, cls):
            problem = f"format {name!r} takes {cls.__name__} values, got {type(message).__name__}"
            raise FormatError(f"messages[{i}]", problem)
        out.append(message)
    return out


def _no_system(name: str, system: SystemParam) -> None:
    if system is not None:
        raise FormatError("system", f"format {name!r} takes no system parameter")


def _parse_openai_chat(
    messages: Sequence[Mapping[str, Any]], system: SystemParam
) -> list[AnyMessage]:
    _no_system("openai_chat", system)
    return list(messages_from_openai(messages))


def _dump_openai_chat(
    messages: Sequence[AnyMessage],
) -> tuple[SystemParam, list[dict[str, Any]]]:
    return None, messages_to_openai(_of_style(messages, Message, "openai_chat"))


def _parse_anthropic(
    messages: Sequence[Mapping[str, Any]], system: SystemParam
) -> list[AnyMessage]:
    return list(messages_from_anthropic(messages, system=system))


def _dump_anthropic(
    messages: Sequence[AnyMessage],
) -> tuple[SystemParam, list[dict[str, Any]]]:
    return messages_to_anthropic(_of_style(messages, AgenticMessage, "anthropic"))


def _parse_openai_responses(
    messages: Sequence[Mapping[str, Any]], system: SystemParam
) -> list[AnyMessage]:
    _no_system("openai_responses", system)
    return list(messages_from_responses(messages))


def _dump_openai_responses(
    messages: Sequence[AnyMessage],
) -> tuple[SystemParam, list[dict[str, Any]]]:
    return None, messages_to_responses(_of_style(messages, AgenticMessage, "openai_responses"))


_ALL = (
    WireFormat(
        name="openai_chat",
        label="OpenAI chat",
        key="openai",
        style="chat",
        messages_key="messages",
        takes_system=False,
        body_fields=frozenset({"messages", "tools"}),
        parse_messages=_parse_openai_chat,
        dump_messages=_dump_openai_chat,
        parse_tools=tools_from_openai,
        dump_tools=tools_to_openai,
    ),
    WireFormat(
        name="anthropic",
        label="Anthropic Messages",
        key="anthropic",
        style="agentic",
        messages_key="messages",
        takes_system=True,
        body_fields=frozenset({"messages", "tools", "system", "model", "max_tokens"}),
        parse_messages=_parse_anthropic,
        dump_messages=_dump_anthropic,
        parse_tools=tools_from_anthropic,
        dump_tools=tools_to_anthropic,
    ),
    WireFormat(
        name="openai_responses",
        label="OpenAI Responses",
        key="responses",
        style="agentic",
        messages_key="input",
        takes_system=False,
        body_fields=frozenset({"input", "tools", "model", "instructions"}),
        parse_messages=_parse_openai_responses,
        dump_messages=_dump_openai_responses,
        parse_tools=tools_from_responses,
        dump_tools=tools_to_responses,
    ),
)

FORMATS: Mapping[str, WireFormat] = MappingProxyType({f.name: f for f in _ALL})
"""Every wire format by name, in the order they are offered (OpenAI chat first: the
default everywhere a format may be left out)."""

FORMAT_NAMES: tuple[str, ...] = tuple(FORMATS)
"""The formats' names, in :data:`FORMATS` order."""


def get_format(name: str) -> WireFormat:
    """The format called ``name``; an unknown name raises :class:`FormatError` quoting it."""
    try:
        return FORMATS[name]
    except KeyError:
        problem = f"unknown format {name!r}; expected one of {list(FORMAT_NAMES)}"
        raise FormatError("format", problem) from None


def parse(
    fmt: str, messages: Sequence[Mapping[str, Any]], *, system: SystemParam = None
) -> list[AnyMessage]:
    """Engine messages of ``messages`` in format ``fmt`` (with its ``system`` parameter,
    for a format that takes one)."""
    return get_format(fmt).parse_messages(messages, system)


def dump(fmt: str, messages: Sequence[AnyMessage]) -> tuple[SystemParam, list[dict[str, Any]]]:
    """``(system, messages)`` of engine messages in format ``fmt``; ``system`` is ``None``
    for a format that takes none."""
    return get_format(fmt).dump_messages(messages)


def parse_tools(fmt: str, tools: Sequence[Mapping[str, Any]]) -> list[ToolInfo]:
    """Tool definitions of a ``tools`` parameter in format ``fmt``."""
    return get_format(fmt).parse_tools(tools)


def dump_tools(fmt: str, tools: Sequence[ToolInfo]) -> list[dict[str, Any]]:
    """The ``tools`` parameter of tool definitions in format ``fmt``."""
    return get_format(fmt).dump_tools(tools)


def parse_following(
    name: str, messages: Sequence[Mapping[str, Any]], earlier: Sequence[AnyMessage]
) -> list[AnyMessage]:
    """``messages`` in format ``name`` that follow ``earlier`` (engine messages) in one
    conversation, parsed as the whole conversation parses them: a tool result whose call
    is among ``earlier`` takes that call's tool name. ``messages`` start a message of
    their own (a Responses item does not join the last of ``earlier``). Only the calls
    ``messages`` answer without making them are looked for, from the end of ``earlier``."""
    wire = get_format(name)
    parsed = wire.parse_messages(messages, None)
    if wire.style == "chat":  # a chat tool message names its tool itself
        return parsed
    made = {ref.call_id for message in parsed for ref in tool_calls_of(message)}
    missing = {i for message in parsed for i in result_ids(message)} - made
    if not missing:
        return parsed
    names: dict[str, str] = {}
    for message in reversed(earlier):
        for ref in tool_calls_of(message):
            if ref.call_id in missing and ref.call_id not in names:
                names[ref.call_id] = ref.name
        if len(names) == len(missing):
            break
    if wire.name == "anthropic":
        return list(messages_from_anthropic(messages, names=names))
    return list(messages_from_responses(messages, names=names))
