"""The format registry: one record per wire format, dispatch by name, exact errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reduction_app import engine
from reduction_app.engine.blocks import AgenticMessage, UserInputText
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats import (
    FORMAT_NAMES,
    FORMATS,
    WireFormat,
    dump,
    dump_tools,
    get_format,
    messages_from_anthropic,
    messages_from_openai,
    messages_from_responses,
    parse,
    parse_following,
    parse_tools,
    tools_from_anthropic,
    tools_from_openai,
    tools_from_responses,
)
from reduction_app.engine.messages import Message, ToolInfo

ARGS = json.dumps({"city": "Paris"})
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

# One conversation per format: (system, messages, tools), each as the wire has it.
SAMPLES: dict[str, tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]] = {
    "openai_chat": (
        None,
        [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": ARGS},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18°C"},
            {"role": "assistant", "content": "18°C in Paris."},
        ],
        [
            {
                "type": "function",
                "function": {"name": "weather", "parameters": SCHEMA, "strict": True},
            }
        ],
    ),
    "anthropic": (
        "Be brief.",
        [
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "weather",
                        "input": {"city": "Paris"},
                    }
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18°C"}],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "18°C in Paris."}]},
        ],
        [{"name": "weather", "input_schema": SCHEMA, "strict": True}],
    ),
    "openai_responses": (
        None,
        [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": ARGS},
            {"type": "function_call_output", "call_id": "call_1", "output": "18°C"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "18°C in Paris."}],
            },
        ],
        [{"type": "function", "name": "weather", "parameters": SCHEMA, "strict": True}],
    ),
}

UNKNOWN = (
    "format: unknown format 'gemini'; "
    "expected one of ['openai_chat', 'anthropic', 'openai_responses']"
)


def test_formats_lists_each_format_once_in_order() -> None:
    assert FORMAT_NAMES == ("openai_chat", "anthropic", "openai_responses")
    assert tuple(FORMATS) == FORMAT_NAMES
    assert [(f.name, f.label, f.key, f.style) for f in FORMATS.values()] == [
        ("openai_chat", "OpenAI chat", "openai", "chat"),
        ("anthropic", "Anthropic Messages", "anthropic", "agentic"),
        ("openai_responses", "OpenAI Responses", "responses", "agentic"),
    ]
    assert engine.FORMATS is FORMATS
    assert engine.get_format is get_format


def test_formats_records_are_frozen() -> None:
    with pytest.raises(AttributeError):
        FORMATS["anthropic"].takes_system = False  # type: ignore[misc]
    with pytest.raises(TypeError):
        FORMATS["gemini"] = FORMATS["anthropic"]  # type: ignore[index]
    assert repr(FORMATS["anthropic"]) == "WireFormat('anthropic')"


def test_formats_body_shapes() -> None:
    """Where each format keeps its messages, and which one carries a system parameter."""
    assert {f.name: (f.messages_key, f.takes_system) for f in FORMATS.values()} == {
        "openai_chat": ("messages", False),
        "anthropic": ("messages", True),
        "openai_responses": ("input", False),
    }
    for wire in FORMATS.values():
        assert {wire.messages_key, "tools"} <= wire.body_fields
        assert ("system" in wire.body_fields) == wire.takes_system


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_parse_and_dump_round_trip_each_format(fmt: str) -> None:
    system, messages, tools = SAMPLES[fmt]
    assert dump(fmt, parse(fmt, messages, system=system)) == (system, messages)
    assert dump_tools(fmt, parse_tools(fmt, tools)) == tools


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_parse_gives_values_of_the_format_style(fmt: str) -> None:
    system, messages, _ = SAMPLES[fmt]
    style = {"chat": Message, "agentic": AgenticMessage}[FORMATS[fmt].style]
    parsed = parse(fmt, messages, system=system)
    assert [type(m) for m in parsed] == [style] * len(parsed)


def test_parse_is_the_format_modules_parse() -> None:
    _, chat, chat_tools = SAMPLES["openai_chat"]
    system, anthropic, anthropic_tools = SAMPLES["anthropic"]
    _, items, responses_tools = SAMPLES["openai_responses"]
    assert parse("openai_chat", chat) == messages_from_openai(chat)
    assert parse("anthropic", anthropic, system=system) == messages_from_anthropic(
        anthropic, system=system
    )
    assert parse("openai_responses", items) == messages_from_responses(items)
    assert parse_tools("openai_chat", chat_tools) == tools_from_openai(chat_tools)
    assert parse_tools("anthropic", anthropic_tools) == tools_from_anthropic(anthropic_tools)
    assert parse_tools("openai_responses", responses_tools) == tools_from_responses(responses_tools)


@pytest.mark.parametrize("fmt", FORMAT_NAMES)
def test_formats_key_names_the_extra_keys(fmt: str) -> None:
    """A wire field with no slot of its own is kept under ``"<key>.<field>"``."""
    (tool,) = parse_tools(fmt, SAMPLES[fmt][2])
    assert dict(tool.extra) == {f"{FORMATS[fmt].key}.strict": True}


def test_dump_without_a_system_message_gives_none() -> None:
    _, messages, _ = SAMPLES["anthropic"]
    assert dump("anthropic", parse("anthropic", messages)) == (None, messages)


def test_get_format_returns_the_record() -> None:
    wire = get_format("anthropic")
    assert isinstance(wire, WireFormat)
    assert wire is FORMATS["anthropic"]


@pytest.mark.parametrize(
    "call",
    [
        lambda: get_format("gemini"),
        lambda: parse("gemini", []),
        lambda: dump("gemini", []),
        lambda: parse_tools("gemini", []),
        lambda: dump_tools("gemini", [ToolInfo(name="now")]),
    ],
)
def test_registry_refuses_an_unknown_format_quoting_it(call: Any) -> None:
    with pytest.raises(FormatError) as info:
        call()
    assert str(info.value) == UNKNOWN
    assert (info.value.where, info.value.problem) == ("format", UNKNOWN.removeprefix("format: "))


@pytest.mark.parametrize("fmt", ["openai_chat", "openai_responses"])
def test_parse_refuses_a_system_parameter_where_the_format_takes_none(fmt: str) -> None:
    with pytest.raises(FormatError) as info:
        parse(fmt, [], system="Be brief.")
    assert str(info.value) == f"system: format {fmt!r} takes no system parameter"


def test_dump_refuses_messages_of_the_other_style() -> None:
    chat = Message(role="user", content="hi")
    agentic = AgenticMessage(role="user", content_blocks=(UserInputText(text="hi"),))
    with pytest.raises(FormatError) as info:
        dump("openai_chat", [chat, agentic])
    assert str(info.value) == (
        "messages[1]: format 'openai_chat' takes Message values, got AgenticMessage"
    )
    for fmt in ("anthropic", "openai_responses"):
        with pytest.raises(FormatError) as info:
            dump(fmt, [chat])
        assert str(info.value) == (
            f"messages[0]: format {fmt!r} takes AgenticMessage values, got Message"
        )


ANTHROPIC_TURNS = [
    {"role": "user", "content": "go"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "grep", "input": {}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
    {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "ls", "input": {}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "b"}]},
]
RESPONSES_TURNS = [
    {"role": "user", "content": "go"},
    {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "a"},
    {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c2", "output": "b"},
]


@pytest.mark.parametrize(
    ("name", "turns"),
    [("anthropic", ANTHROPIC_TURNS), ("openai_responses", RESPONSES_TURNS)],
)
@pytest.mark.parametrize("cut", [1, 2, 3, 4])
def test_parse_following_parses_as_the_whole_list_does(
    name: str, turns: list[dict[str, Any]], cut: int
) -> None:
    """A tool result whose call came before takes the call's tool name, as it does when the
    whole conversation is parsed at once (a parse of the rest alone leaves it unnamed)."""
    whole = parse(name, turns)
    earlier = parse(name, turns[:cut])
    assert [*earlier, *parse_following(name, turns[cut:], earlier)] == whole
    if cut in (2, 4):
        assert parse(name, turns[cut:]) != whole[cut:]
