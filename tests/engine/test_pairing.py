"""The pairing rules of each wire format (engine/_clear/_pairing.py), one rule at a time, on
engine messages and on wire-format lists, and the edit check the clear phase runs."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.engine._clear._pairing import (
    PairingProblem,
    broken_by_edit,
    edited_region,
    pairing_problems,
    wire_pairing_problems,
)
from reduction_app.engine.blocks import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    UserInputText,
)
from reduction_app.engine.errors import FormatError, MessageError
from reduction_app.engine.messages import Message, ToolCall


def chat_call(*ids: str) -> Message:
    return Message.assistant(tool_calls=tuple(ToolCall(id=i, name="grep") for i in ids))


def tool(call_id: str) -> Message:
    return Message.tool("out", call_id)


def a_call(*ids: str) -> AgenticMessage:
    blocks = tuple(FunctionToolCall(call_id=i, name="grep", arguments="{}") for i in ids)
    return AgenticMessage(role="assistant", content_blocks=blocks)


def a_results(*ids: str) -> AgenticMessage:
    blocks = tuple(FunctionToolResult(call_id=i, name="grep") for i in ids)
    return AgenticMessage(role="user", content_blocks=blocks)


def a_user(text: str = "go on") -> AgenticMessage:
    return AgenticMessage(role="user", content_blocks=(UserInputText(text=text),))


def a_reply(text: str = "done") -> AgenticMessage:
    return AgenticMessage(role="assistant", content_blocks=(AssistantGenText(text=text),))


# OpenAI chat -----------------------------------------------------------------------------


def test_pairing_chat_paired_conversation_has_no_problem() -> None:
    messages = [
        Message.system("s"),
        Message.user("q"),
        chat_call("a", "b"),
        tool("b"),
        tool("a"),
        Message.assistant("done"),
        Message.user("again"),
    ]
    assert pairing_problems("openai_chat", messages) == []
    assert pairing_problems("openai_chat", messages, allow_pending=False) == []


def test_pairing_chat_tool_message_must_answer_the_nearest_assistant() -> None:
    messages = [Message.user("q"), chat_call("a"), tool("a"), chat_call("b"), tool("a")]
    messages.append(Message.user("and?"))
    assert pairing_problems("openai_chat", messages) == [
        PairingProblem(
            3,
            "b",
            "tool call 'b' (grep) has no result in the tool messages after it (before messages[5])",
        ),
        PairingProblem(
            4, "a", "result for call 'a' answers no call of the assistant message at messages[3]"
        ),
    ]


def test_pairing_chat_results_must_follow_their_call_contiguously() -> None:
    messages = [Message.user("q"), chat_call("a", "b"), tool("a"), Message.user("hm"), tool("b")]
    assert [str(p) for p in pairing_problems("openai_chat", messages)] == [
        "messages[1]: tool call 'b' (grep) has no result in the tool messages after it "
        "(before messages[3])",
        "messages[4]: tool message for call 'b' follows no assistant message with calls",
    ]


def test_pairing_chat_tool_message_with_no_call_before_it() -> None:
    assert pairing_problems("openai_chat", [Message.user("q"), tool("x")]) == [
        PairingProblem(1, "x", "tool message for call 'x' follows no assistant message with calls")
    ]


def test_pairing_chat_unanswered_call_before_a_later_message() -> None:
    messages = [Message.user("q"), chat_call("a"), Message.assistant("hm"), Message.user("u")]
    assert pairing_problems("openai_chat", messages) == [
        PairingProblem(
            1,
            "a",
            "tool call 'a' (grep) has no result in the tool messages after it (before messages[2])",
        )
    ]


def test_pairing_chat_trailing_calls_are_pending_unless_asked() -> None:
    """The model just asked for tools (one answered so far): not a problem by default."""
    messages = [Message.user("q"), chat_call("a", "b"), tool("b")]
    assert pairing_problems("openai_chat", messages) == []
    assert pairing_problems("openai_chat", messages, allow_pending=False) == [
        PairingProblem(
            1,
            "a",
            "tool call 'a' (grep) has no result in the tool messages after it "
            "(the conversation ends)",
        )
    ]


def test_pairing_reused_id_answers_every_call_using_it() -> None:
    assert pairing_problems("openai_chat", [chat_call("", ""), tool("")]) == []


# Anthropic -------------------------------------------------------------------------------


def test_pairing_anthropic_results_in_the_very_next_message() -> None:
    messages = [a_user("q"), a_call("t1", "t2"), a_results("t2", "t1"), a_reply()]
    assert pairing_problems("anthropic", messages) == []
    late = [a_user("q"), a_call("t1"), a_user("wait"), a_results("t1")]
    assert [str(p) for p in pairing_problems("anthropic", late)] == [
        "messages[1]: tool call 't1' (grep) has no result in the next message, messages[2]",
        "messages[3]: tool_result for call 't1' follows no assistant message with calls",
    ]


def test_pairing_anthropic_results_split_over_two_messages() -> None:
    """The chat rule would take this; Anthropic wants every result in the next message."""
    messages = [a_user("q"), a_call("t1", "t2"), a_results("t1"), a_results("t2")]
    assert pairing_problems("anthropic", messages) == [
        PairingProblem(
            1, "t2", "tool call 't2' (grep) has no result in the next message, messages[2]"
        ),
        PairingProblem(
            3, "t2", "tool_result for call 't2' follows no assistant message with calls"
        ),
    ]


def test_pairing_anthropic_result_for_another_turns_call() -> None:
    messages = [a_user("q"), a_call("t1"), a_results("t1"), a_call("t2"), a_results("t1")]
    messages.append(a_reply())
    assert pairing_problems("anthropic", messages) == [
        PairingProblem(
            3, "t2", "tool call 't2' (grep) has no result in the next message, messages[4]"
        ),
        PairingProblem(
            4, "t1", "result for call 't1' answers no call of the assistant message at messages[3]"
        ),
    ]


def test_pairing_anthropic_trailing_tool_use_is_pending_unless_asked() -> None:
    messages = [a_user("q"), a_call("t1")]
    assert pairing_problems("anthropic", messages) == []
    assert pairing_problems("anthropic", messages, allow_pending=False) == [
        PairingProblem(
            1,
            "t1",
            "tool call 't1' (grep) has no result in a next message: the conversation ends with it",
        )
    ]


# OpenAI Responses ------------------------------------------------------------------------


def test_pairing_responses_pairs_across_any_distance() -> None:
    """Anthropic would refuse this; Responses takes a message between call and output."""
    messages = [a_user("q"), a_call("c1", "c2"), a_results("c1"), a_user("hm"), a_results("c2")]
    assert pairing_problems("openai_responses", messages) == []
    assert len(pairing_problems("anthropic", messages)) == 2


def test_pairing_responses_call_without_output_and_output_without_call() -> None:
    messages = [a_user("q"), a_results("c0"), a_call("c1"), a_user("hm"), a_reply()]
    assert pairing_problems("openai_responses", messages) == [
        PairingProblem(1, "c0", "function_call_output for 'c0' has no function_call before it"),
        PairingProblem(2, "c1", "function_call 'c1' (grep) has no function_call_output after it"),
    ]


def test_pairing_responses_output_before_its_call() -> None:
    messages = [a_user("q"), a_results("c1"), a_call("c1"), a_results("c1")]
    assert pairing_problems("openai_responses", messages) == [
        PairingProblem(1, "c1", "function_call_output for 'c1' has no function_call before it")
    ]


def test_pairing_responses_trailing_call_is_pending_unless_asked() -> None:
    messages = [a_user("q"), a_call("c1", "c2"), a_results("c2")]
    assert pairing_problems("openai_responses", messages) == []
    assert pairing_problems("openai_responses", messages, allow_pending=False) == [
        PairingProblem(1, "c1", "function_call 'c1' (grep) has no function_call_output after it")
    ]


# Wire formats ----------------------------------------------------------------------------


def test_wire_pairing_problems_anthropic_counts_the_system_parameter() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "g", "input": {}}],
        },
        {"role": "user", "content": "hi"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}]},
    ]
    assert [str(p) for p in wire_pairing_problems("anthropic", messages, system="sys")] == [
        "messages[2]: tool call 't1' (g) has no result in the next message, messages[3]",
        "messages[4]: tool_result for call 't1' follows no assistant message with calls",
    ]


def test_wire_pairing_problems_responses_items() -> None:
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"type": "function_call", "call_id": "c1", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r"},
        {"type": "function_call_output", "call_id": "c9", "output": "r"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"role": "user", "content": "and?"},
    ]
    assert wire_pairing_problems("openai_responses", items) == [
        PairingProblem(2, "c9", "function_call_output for 'c9' has no function_call before it"),
        PairingProblem(3, "c2", "function_call 'c2' (g) has no function_call_output after it"),
    ]


def test_wire_pairing_problems_openai_chat() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "tool", "tool_call_id": "x", "content": "r"},
    ]
    assert wire_pairing_problems("openai_chat", messages) == [
        PairingProblem(1, "x", "tool message for call 'x' follows no assistant message with calls")
    ]


def test_pairing_rules_must_match_the_message_style() -> None:
    with pytest.raises(MessageError) as info:
        pairing_problems("anthropic", [Message.user("q")])
    assert str(info.value) == "pairing rules 'anthropic' take agentic messages, got chat ones"
    with pytest.raises(MessageError) as info:
        pairing_problems("gemini", [Message.user("q")])
    assert str(info.value) == (
        "unknown pairing rules 'gemini'; expected one of "
        "['openai_chat', 'anthropic', 'openai_responses']"
    )
    with pytest.raises(FormatError):
        wire_pairing_problems("openai_chat", [{"role": "robot", "content": "x"}])


# The edit check --------------------------------------------------------------------------


def test_edited_region_finds_the_replaced_stretch() -> None:
    m = [Message.user(str(i)) for i in range(6)]
    new = Message.user("new")
    assert edited_region(tuple(m), tuple(m)) == (6, 6, 6)
    assert edited_region(tuple(m), (*m[:2], new, *m[4:])) == (2, 4, 3)
    assert edited_region(tuple(m), (*m[:3], new, *m[3:])) == (3, 3, 4)
    assert edited_region(tuple(m), (new, *m[1:])) == (0, 1, 1)
    assert edited_region(tuple(m), tuple(m[:5])) == (5, 6, 5)


def test_broken_by_edit_reports_what_the_edit_broke() -> None:
    before = [Message.user("q"), chat_call("a"), tool("a"), chat_call("b"), tool("b")]
    dropped = [*before[:2], *before[3:]]
    assert broken_by_edit(before, dropped, 2, 3, 2) == [
        PairingProblem(
            1,
            "a",
            "tool call 'a' (grep) has no result in the tool messages after it (before messages[2])",
        )
    ]
    # Replacing a message by one with the same calls and results cannot break anything.
    same = [*before[:2], Message.tool("cleared", "a"), *before[3:]]
    assert broken_by_edit(before, same, 2, 3, 3) == []


def test_broken_by_edit_keeps_quiet_where_the_input_was_already_unpaired() -> None:
    before = [Message.user("q"), chat_call("a"), Message.user("u"), chat_call("b"), tool("b")]
    after = [*before[:3], chat_call("b")]
    assert broken_by_edit(before, after, 3, 5, 4) == []


def test_broken_by_edit_falls_back_to_responses_rules() -> None:
    """An agentic conversation that is not Anthropic-paired around the edit is held to the
    Responses rules, over the whole list."""
    before = [a_user("q"), a_call("c1"), a_user("hm"), a_results("c1"), a_reply()]
    kept = [*before[:4], a_reply("other")]
    assert broken_by_edit(before, kept, 4, 5, 5) == []
    dropped = [*before[:3], a_reply()]
    assert broken_by_edit(before, dropped, 3, 5, 4) == [
        PairingProblem(1, "c1", "function_call 'c1' (grep) has no function_call_output after it")
    ]


def test_broken_by_edit_may_not_leave_an_answered_call_pending() -> None:
    """A pending call at the end is fine only where the input had one."""
    before = [Message.user("q"), chat_call("a"), tool("a")]
    assert broken_by_edit(before, before[:2], 2, 3, 2) == [
        PairingProblem(
            1,
            "a",
            "tool call 'a' (grep) has no result in the tool messages after it "
            "(the conversation ends)",
        )
    ]
    pending = [Message.user("q"), chat_call("a", "b"), tool("a")]
    assert broken_by_edit(pending, [*pending[:2], tool("b")], 2, 3, 3) == []
