"""Conversations built by hand for the simulator tests, with their token arithmetic."""

from __future__ import annotations

from reduction_app.engine import Message, ToolCall, ToolInfo
from simulator.importers import RecordedConversation
from simulator.pricing import DEFAULT_PRICING, engine_measure

TOOLS = (ToolInfo(name="read_file", description="Read a file."),)


def call(call_id: str, arguments: str, name: str = "read_file") -> Message:
    return Message.assistant(tool_calls=(ToolCall(id=call_id, name=name, arguments=arguments),))


def result(call_id: str, text: str, name: str = "read_file") -> Message:
    return Message.tool(text, tool_call_id=call_id, tool_name=name)


def hand_conversation() -> RecordedConversation:
    """System, user, three rounds of read_file with results of 400, 800 and 4,000
    characters, and a final answer."""
    return RecordedConversation(
        "hand",
        [
            Message.system("You are a test agent."),
            Message.user("Find the answer."),
            call("call_1", '{"path": "a"}'),
            result("call_1", "x" * 400),
            call("call_2", '{"path": "b"}'),
            result("call_2", "y" * 800),
            call("call_3", '{"path": "c"}'),
            result("call_3", "z" * 4000),
            Message.assistant("The answer is 42."),
        ],
        TOOLS,
    )


# Approx tokens (characters // 4 of each rendered string, tokens.render_message):
#   tool schema  '{"description": "Read a file.", "name": "read_file", "parameters": null}'
#                72 chars -> 18
#   system       "system\n" + "\n" + "You are a test agent." + "\n" = 30 chars -> 7
#   user         "user\n\nFind the answer.\n" = 23 chars -> 5
#   each call    "assistant\n\n\n" + "read_file" + "\n" + '{"path": "a"}' = 35 chars -> 8
#   result 1     "tool\n\n" + 400 + "\n" = 407 chars -> 101
#   result 2     807 chars -> 201   (800 is not > max_length_for_trunc=800: kept whole)
#   result 3     4,000 > 800: truncated to the notice with 800 // 2 = 400-character previews:
#                "<persisted-output>\n" 19
#                + "Output too large (4000). Full output saved to: /tmp/trunc/call_3\n" 65
#                + "Preview (first 400):\n" 21 + 400 + "\n\n" 2
#                + "Preview (last 400):\n" 20 + 400 + "\n\n" 2
#                + "Use read_file to view\n" 22 + "</persisted-output>" 19  = 970 chars
#                as a message 977 chars -> 244   (the original, 4,007 chars, is 1,001)
#   placeholder  "<persisted-output>Tool result saved to: /tmp/clear/call_N\n"
#                "Use read_file to view</persisted-output>" = 98 chars, message 105 -> 26
HAND_CONFIG = {"max_length_for_trunc": 800, "max_tokens_for_clear": 300}


ENGINE = engine_measure(DEFAULT_PRICING)
"""gpt-4o prices, tokens counted by each config's own counter: the unit the hand
arithmetic in these tests is done in."""
