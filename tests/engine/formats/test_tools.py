"""Tool definitions in the three wire formats: exact values, round trips, strict errors."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats import (
    tools_from_anthropic,
    tools_from_openai,
    tools_from_responses,
    tools_to_anthropic,
    tools_to_openai,
    tools_to_responses,
)
from reduction_app.engine.messages import ToolInfo
from tests.conftest import CONVERSATIONS, needs_recordings

OPENHANDS = CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = ToolInfo(name="weather", description="Current weather.", parameters=SCHEMA)


def test_tools_from_openai_reads_a_function_tool() -> None:
    wire = [
        {
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Current weather.",
                "parameters": SCHEMA,
            },
        }
    ]

    assert tools_from_openai(wire) == [WEATHER]


def test_tools_from_responses_reads_a_flat_function_tool() -> None:
    wire = [
        {
            "type": "function",
            "name": "weather",
            "description": "Current weather.",
            "parameters": SCHEMA,
            "strict": True,
        }
    ]

    assert tools_from_responses(wire) == [
        ToolInfo(
            name="weather",
            description="Current weather.",
            parameters=SCHEMA,
            extra={"responses.strict": True},
        )
    ]


def test_tools_from_anthropic_reads_a_custom_tool_and_keeps_server_tools_whole() -> None:
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    wire = [{"name": "weather", "description": "Current weather.", "input_schema": SCHEMA}, search]

    assert tools_from_anthropic(wire) == [
        WEATHER,
        ToolInfo(name="web_search", extra={"anthropic.tool": search}),
    ]


ROUND_TRIPS: list[
    tuple[
        Callable[[Any], list[ToolInfo]], Callable[[Any], list[dict[str, Any]]], list[dict[str, Any]]
    ]
] = [
    (
        tools_from_openai,
        tools_to_openai,
        [
            {"type": "function", "function": {"name": "now"}},
            {"type": "function", "function": {"name": "a", "description": "", "parameters": None}},
            {
                "type": "function",
                "function": {"name": "b", "description": None, "parameters": {}, "strict": None},
            },
            {"type": "function", "function": {"name": "c", "parameters": SCHEMA, "strict": False}},
        ],
    ),
    (
        tools_from_responses,
        tools_to_responses,
        [
            {"type": "function", "name": "weather", "parameters": SCHEMA, "strict": True},
            {
                "type": "function",
                "name": "now",
                "description": "",
                "parameters": None,
                "strict": None,
            },
            {"type": "web_search", "search_context_size": "low"},
            {
                "type": "mcp",
                "server_label": "deepwiki",
                "server_url": "https://mcp.deepwiki.com/mcp",
            },
            {"type": "custom", "name": "grammar_tool", "description": "Emit SQL."},
        ],
    ),
    (
        tools_from_anthropic,
        tools_to_anthropic,
        [
            {"name": "weather", "input_schema": SCHEMA, "cache_control": {"type": "ephemeral"}},
            {
                "type": "custom",
                "name": "now",
                "description": "",
                "input_schema": {"type": "object"},
            },
            {"name": "strict_one", "input_schema": SCHEMA, "strict": True},
            {"type": "bash_20250124", "name": "bash"},
            {
                "type": "text_editor_20250728",
                "name": "str_replace_based_edit_tool",
                "max_characters": 10000,
            },
        ],
    ),
]


@pytest.mark.parametrize(("parse", "dump", "wire"), ROUND_TRIPS)
def test_tools_round_trip_each_format(
    parse: Callable[[Any], list[ToolInfo]],
    dump: Callable[[Sequence[ToolInfo]], list[dict[str, Any]]],
    wire: list[dict[str, Any]],
) -> None:
    assert dump(parse(wire)) == wire


@needs_recordings
def test_tools_openai_round_trip_the_openhands_tool_schemas() -> None:
    first = json.loads(OPENHANDS.read_text().splitlines()[0])
    (system,) = [event for event in first["history"] if event.get("action") == "system"]
    wire = system["args"]["tools"]

    tools = tools_from_openai(wire)

    assert tools_to_openai(tools) == wire
    assert [tool.name for tool in tools] == [
        "execute_bash",
        "think",
        "finish",
        "str_replace_editor",
    ]


def test_tools_convert_between_formats() -> None:
    (tool,) = tools_from_openai([{"type": "function", "function": {"name": "now"}}])

    assert tools_to_anthropic([tool]) == [
        {"name": "now", "input_schema": {"type": "object", "properties": {}}}
    ]
    assert tools_to_responses([WEATHER]) == [
        {
            "type": "function",
            "name": "weather",
            "description": "Current weather.",
            "parameters": SCHEMA,
        }
    ]


ERRORS: list[tuple[Callable[[Any], list[ToolInfo]], Any, str]] = [
    (tools_from_openai, {"type": "function"}, "tools: expected a list, got {'type': 'function'}"),
    (
        tools_from_openai,
        [{"type": "custom", "custom": {}}],
        "tools[0].type: unknown tool type 'custom'",
    ),
    (tools_from_openai, [{"type": "function"}], "tools[0]: missing field 'function'"),
    (
        tools_from_openai,
        [{"type": "function", "function": {"name": "f", "params": {}}}],
        "tools[0].function: unknown field 'params'",
    ),
    (
        tools_from_openai,
        [{"type": "function", "function": {"name": "f", "parameters": "{}"}}],
        "tools[0].function.parameters: expected an object or null, got '{}'",
    ),
    (
        tools_from_openai,
        [{"type": "function", "function": {}}],
        "tools[0].function: missing field 'name'",
    ),
    (tools_from_responses, [{"name": "f"}], "tools[0]: missing field 'type'"),
    (tools_from_responses, [{"type": "telepathy"}], "tools[0].type: unknown tool type 'telepathy'"),
    (
        tools_from_responses,
        [{"type": "function", "function": {"name": "f"}}],
        "tools[0]: unknown field 'function'",
    ),
    (tools_from_anthropic, [{"name": "f"}], "tools[0]: missing field 'input_schema'"),
    (
        tools_from_anthropic,
        [{"type": "function", "name": "f"}],
        "tools[0].type: unknown tool type 'function'",
    ),
    (
        tools_from_anthropic,
        [{"name": "f", "input_schema": {}, "parameters": {}}],
        "tools[0]: unknown field 'parameters'",
    ),
    (
        tools_from_anthropic,
        [{"name": "f", "input_schema": {}, "strict": "yes"}],
        "tools[0].strict: expected a boolean, got 'yes'",
    ),
    # A tool's name is a name: at most 200 storable characters, in every shape.
    (
        tools_from_openai,
        [{"type": "function", "function": {"name": "f" * 10_000}}],
        "tools[0].function.name: longer than the limit of 200 characters (10000 characters)",
    ),
    (
        tools_from_responses,
        [{"type": "function", "name": "f"}, {"type": "function", "name": "f" * 201}],
        "tools[1].name: longer than the limit of 200 characters (201 characters)",
    ),
    (
        tools_from_responses,
        [{"type": "mcp", "name": "m\x00", "server_label": "x"}],
        "tools[0].name: must not contain NUL characters",
    ),
    (
        tools_from_anthropic,
        [{"name": "f" * 201, "input_schema": {}}],
        "tools[0].name: longer than the limit of 200 characters (201 characters)",
    ),
    (
        tools_from_anthropic,
        [{"type": "bash_20250124", "name": "b\ud800"}],
        "tools[0].name: must not contain a lone surrogate ('\\ud800' at 1)",
    ),
]


@pytest.mark.parametrize(("parse", "wire", "error"), ERRORS)
def test_tools_refuse_what_they_do_not_know(
    parse: Callable[[Any], list[ToolInfo]], wire: Any, error: str
) -> None:
    with pytest.raises(FormatError) as caught:
        parse(wire)

    assert str(caught.value) == error


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize("levels", [129, 100_000])
def test_tools_nested_too_deeply_are_refused_without_recursing(levels: int) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": _nested(levels)}}
    with pytest.raises(FormatError) as caught:
        tools_from_openai([tool])
    assert str(caught.value) == (
        "tools[0].function.parameters: nested deeper than the limit of 128 levels"
    )


def test_tools_nested_to_the_limit_round_trip() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": _nested(128)}}
    assert tools_to_openai(tools_from_openai([tool])) == [tool]
