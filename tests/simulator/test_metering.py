"""Counting requests as providers bill them: framing, tool text, engine measure."""

from __future__ import annotations

import dataclasses

from reduction_app.engine import Message, ToolCall, ToolInfo, get_token_counter
from simulator.metering import Meter
from simulator.pricing import OPENAI_CHAT_FRAMING, Framing, pricing_for
from simulator.tool_text import typescript_tools
from tests.simulator.cases import ENGINE

LOOKUP = ToolInfo(
    name="get_user",
    description="Get a user.",
    parameters={
        "type": "object",
        "properties": {
            "user_id": {"type": "string", "description": "The user id."},
            "limit": {"type": "integer"},
            "kind": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
        },
        "required": ["user_id"],
        "$defs": {"Tag": {"type": "object", "properties": {"name": {"type": "string"}}}},
    },
)


def test_typescript_tools_renders_the_namespace() -> None:
    """Parameters sorted by name, so a schema counts the same whatever kept it (jsonb)."""
    text, params = typescript_tools([LOOKUP, ToolInfo(name="ping", description="")])
    assert text == (
        "# Tools\n\n## functions\n\nnamespace functions {\n\n"
        "// Get a user.\n"
        "type get_user = (_: {\n"
        'kind?: "a" | "b",\n'
        "limit?: number,\n"
        "tags?: {\nname?: string,\n}[],\n"
        "// The user id.\n"
        "user_id: string,\n"
        "}) => any;\n\n"
        "type ping = () => any;\n\n"
        "} // namespace functions"
    )
    assert params == 5  # four parameters and the nested one


def test_meter_openai_framing_by_hand() -> None:
    """o200k counts of each piece plus 3 a message, 8 a tool call, 3 for the reply."""
    pricing = pricing_for("gpt-4o")
    counter = get_token_counter("o200k_base")
    meter = Meter(pricing, get_token_counter("approx"))
    call = Message.assistant(tool_calls=(ToolCall(id="c1", name="ls", arguments='{"p": 1}'),))
    pieces = ["assistant", "", "ls", '{"p": 1}']
    expected = 3 + 8 + sum(counter.count_text(p) for p in pieces if p)
    assert meter.message(call) == expected
    user = Message.user("hello there")
    expected_user = 3 + counter.count_text("user") + counter.count_text("hello there")
    assert meter.message(user) == expected_user
    text, params = typescript_tools([LOOKUP])
    tools = counter.count_text(text) + 5 * params
    assert meter.request([user, call], [LOOKUP]) == tools + expected_user + expected + 3
    assert meter.describe() == "o200k_base + openai-chat framing"


def test_meter_reasoning_is_not_billed_as_input() -> None:
    meter = Meter(pricing_for("gpt-4o"), get_token_counter("approx"))
    plain = Message.assistant("ok")
    thinking = dataclasses.replace(plain, reasoning_content="let me think " * 50)
    assert meter.message(thinking) == meter.message(plain)


def test_meter_engine_measure_is_the_engines_count() -> None:
    approx = get_token_counter("approx")
    meter = Meter(ENGINE, approx)
    msg = Message.user("x" * 40)
    assert meter.message(msg) == approx([msg], []) == 11  # "user\n\n" + 40 x + "\n": 47 // 4
    assert meter.request([msg], [LOOKUP]) == approx([msg], [LOOKUP])


def test_meter_json_tools_with_a_tool_prompt() -> None:
    """Anthropic-style framing: JSON schemas, plus the provider's tool-use prompt once."""
    framing = Framing(name="t", tools_prompt=100, per_tool=2)
    pricing = dataclasses.replace(pricing_for("gpt-4o"), framing=framing)
    counter = get_token_counter("o200k_base")
    meter = Meter(pricing, get_token_counter("approx"))
    from reduction_app.engine._tokens._counters import render_tool

    assert meter.tools([LOOKUP]) == 100 + counter.count_text(render_tool(LOOKUP)) + 2
    assert meter.tools([]) == 0
    assert OPENAI_CHAT_FRAMING.tool_text == "typescript"


def test_typescript_tools_counts_parameters_not_commas() -> None:
    """A description ending in a comma is no parameter."""
    tool = ToolInfo(
        name="f",
        description="Does things,",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "string", "description": "first,\nthen more,"}},
        },
    )
    text, params = typescript_tools([tool])
    assert params == 1
    assert "// first,\n// then more,\na?: string," in text


def test_typescript_tools_recursive_schema_is_declared_any() -> None:
    """A schema that refers to itself (a tree of nodes) ends in ``any`` where it recurs."""
    node = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
    }
    tool = ToolInfo(
        name="tree",
        description="",
        parameters={
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": node},
        },
    )
    text, params = typescript_tools([tool])
    assert "root?: {\nchildren?: any[],\nname?: string,\n}," in text
    assert params == 3
