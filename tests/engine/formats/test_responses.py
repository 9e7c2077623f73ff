"""OpenAI Responses input items: grouping, exact values, lossless round trips, strict errors."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.engine.blocks import (
    AgenticMessage,
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    RawBlock,
    Reasoning,
    ToolResultContent,
    UserInputImage,
    UserInputText,
    UserInputVideo,
)
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats import messages_from_responses, messages_to_responses
from reduction_app.engine.messages import Media

REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [
        {"type": "summary_text", "text": "Look up both cities."},
        {"type": "summary_text", "text": "Then compare."},
    ],
    "encrypted_content": "gAAAAB",
}
CALL_PARIS = {
    "type": "function_call",
    "id": "fc_1",
    "call_id": "call_1",
    "name": "weather",
    "arguments": '{"city": "Paris"}',
    "status": "completed",
}
CALL_ROME = {
    "type": "function_call",
    "call_id": "call_2",
    "name": "weather",
    "arguments": '{"city": "Rome"}',
}
TURN: list[dict[str, Any]] = [
    {"role": "developer", "content": "Answer in one line."},
    {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "Paris or Rome?"}],
    },
    REASONING,
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Checking both.", "annotations": []}],
    },
    CALL_PARIS,
    CALL_ROME,
    {"type": "function_call_output", "call_id": "call_1", "output": "18°C"},
    {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": [{"type": "input_text", "text": "24°C"}],
    },
    {"role": "assistant", "content": "Rome is warmer."},
]


def test_messages_from_responses_groups_a_turn_into_messages() -> None:
    assert messages_from_responses(TURN) == [
        AgenticMessage(
            role="system",
            content_blocks=(UserInputText(text="Answer in one line."),),
            extra={"responses.role": "developer", "responses.content_shape": "string"},
        ),
        AgenticMessage(
            role="user",
            content_blocks=(UserInputText(text="Paris or Rome?"),),
            extra={"responses.type": "message"},
        ),
        AgenticMessage(
            role="assistant",
            content_blocks=(
                Reasoning(
                    text="Look up both cities.\n\nThen compare.",
                    extra={
                        "responses.id": "rs_1",
                        "responses.summary": REASONING["summary"],
                        "responses.encrypted_content": "gAAAAB",
                    },
                ),
                AssistantGenText(text="Checking both.", extra={"responses.annotations": []}),
                FunctionToolCall(
                    call_id="call_1",
                    name="weather",
                    arguments='{"city": "Paris"}',
                    extra={"responses.id": "fc_1", "responses.status": "completed"},
                ),
                FunctionToolCall(call_id="call_2", name="weather", arguments='{"city": "Rome"}'),
            ),
            extra={
                "responses.type": "message",
                "responses.id": "msg_1",
                "responses.status": "completed",
            },
        ),
        AgenticMessage(
            role="user",
            content_blocks=(
                FunctionToolResult(
                    call_id="call_1",
                    name="weather",
                    content=(ToolResultContent(type="text", text="18°C"),),
                    extra={"responses.content_shape": "string"},
                ),
                FunctionToolResult(
                    call_id="call_2",
                    name="weather",
                    content=(ToolResultContent(type="text", text="24°C"),),
                ),
            ),
        ),
        AgenticMessage(
            role="assistant",
            content_blocks=(AssistantGenText(text="Rome is warmer."),),
            extra={"responses.content_shape": "string"},
        ),
    ]


def test_messages_to_responses_gives_the_turn_back() -> None:
    assert messages_to_responses(messages_from_responses(TURN)) == TURN


def test_messages_from_responses_starts_a_new_message_for_a_second_assistant_text() -> None:
    items = [
        {"role": "assistant", "content": "First."},
        CALL_ROME,
        {"role": "assistant", "content": "Second."},
    ]

    assert [len(m.content_blocks) for m in messages_from_responses(items)] == [2, 1]


def test_messages_from_responses_keeps_user_text_apart_from_tool_results() -> None:
    items = [
        CALL_ROME,
        {"role": "user", "content": "Also Oslo?"},
        {"type": "function_call_output", "call_id": "call_2", "output": "24°C"},
    ]

    assert [m.role for m in messages_from_responses(items)] == ["assistant", "user", "user"]


ROUND_TRIPS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": ""}],
    [{"role": "user", "content": []}],
    [{"role": "assistant", "content": []}, CALL_ROME],
    [{"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Rules"}]}],
    [REASONING, CALL_ROME],
    [{"type": "reasoning", "summary": []}, {"role": "assistant", "content": "Hi"}],
    [
        {
            "type": "reasoning",
            "id": "rs_2",
            "summary": [],
            "content": [{"type": "reasoning_text", "text": "hm"}],
        }
    ],
    [
        {
            "role": "user",
            "content": [
                {
                    "type": "input_image",
                    "image_url": "data:image/png;base64,iVBOR",
                    "detail": "auto",
                },
                {"type": "input_image", "file_id": "file-1", "detail": "low"},
                {"type": "input_image", "image_url": None, "file_id": None, "detail": ""},
                {"type": "input_file", "file_id": "file-2"},
                {
                    "type": "input_file",
                    "file_data": "data:application/pdf;base64,JVBER",
                    "filename": "a.pdf",
                },
                {"type": "input_file", "file_url": "https://x.test/a.pdf"},
                {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
            ],
        }
    ],
    [
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_2",
            "status": "incomplete",
            "content": [
                {"type": "output_text", "text": "Partly", "annotations": [], "logprobs": []},
                {"type": "refusal", "refusal": "Not that part."},
            ],
        }
    ],
    [
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "eino"},
        },
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""},
        {
            "type": "function_call_output",
            "call_id": "c",
            "output": [],
            "id": "fco_1",
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": "c2", "output": ""},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
        {"type": "item_reference", "id": "msg_0"},
        {"role": "user", "content": "Next."},
    ],
    [
        {
            "type": "function_call_output",
            "call_id": "c",
            "output": [
                {"type": "input_text", "text": "chart:"},
                {"type": "input_image", "image_url": "https://x.test/c.png", "detail": "high"},
                {"type": "input_file", "file_id": "file-3", "filename": "c.csv"},
            ],
        }
    ],
]


@pytest.mark.parametrize("items", ROUND_TRIPS)
def test_messages_to_responses_gives_back_what_was_parsed(items: list[dict[str, Any]]) -> None:
    assert messages_to_responses(messages_from_responses(items)) == items


def test_messages_to_responses_writes_engine_built_messages() -> None:
    messages = [
        AgenticMessage(role="user", content_blocks=(UserInputText(text="hi"),)),
        AgenticMessage(
            role="assistant",
            content_blocks=(FunctionToolCall(call_id="c1", name="ls", arguments="{}"),),
            extra={"_reduction_mw_processed": True, "anthropic.cache_control": {}},
        ),
        AgenticMessage(
            role="user",
            content_blocks=(
                FunctionToolResult(
                    call_id="c1", content=(ToolResultContent(type="text", text="a"),)
                ),
            ),
        ),
        AgenticMessage(role="user"),
    ]

    assert messages_to_responses(messages) == [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "a"}],
        },
        {"role": "user", "content": []},
    ]


def test_messages_to_responses_writes_a_data_url_for_inline_images() -> None:
    image = UserInputImage(media=Media(base64_data="iVBOR", mime_type="image/png"))

    assert messages_to_responses([AgenticMessage(role="user", content_blocks=(image,))]) == [
        {
            "role": "user",
            "content": [{"type": "input_image", "image_url": "data:image/png;base64,iVBOR"}],
        }
    ]


def test_messages_to_responses_writes_an_edited_reasoning_text() -> None:
    (message,) = messages_from_responses([REASONING])
    (reasoning,) = message.content_blocks
    edited = Reasoning(text="Shorter.", extra=reasoning.extra)

    assert messages_to_responses([AgenticMessage(role="assistant", content_blocks=(edited,))]) == [
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Shorter."}],
            "encrypted_content": "gAAAAB",
        }
    ]


def test_messages_from_responses_keeps_data_urls_as_urls() -> None:
    items = [
        {
            "role": "user",
            "content": [{"type": "input_image", "image_url": "data:image/png;base64,iVBOR"}],
        }
    ]

    assert messages_from_responses(items)[0].content_blocks == (
        UserInputImage(media=Media(url="data:image/png;base64,iVBOR")),
    )


def test_messages_from_responses_carries_model_items_verbatim() -> None:
    item = {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "c",
        "action": {"type": "click", "x": 1, "y": 2},
    }

    assert messages_from_responses([item]) == [
        AgenticMessage(role="assistant", content_blocks=(RawBlock(data=item),))
    ]


PARSE_ERRORS: list[tuple[Any, str]] = [
    (
        {"role": "user", "content": "hi"},
        "input: expected a list, got {'role': 'user', 'content': 'hi'}",
    ),
    ([{"role": "tool", "content": "x"}], "input[0].role: unknown role 'tool'"),
    ([{"role": "user", "content": "x", "foo": 1}], "input[0]: unknown field 'foo'"),
    ([{"role": "user"}], "input[0]: missing field 'content'"),
    ([{"role": "user", "content": 5}], "input[0].content: expected a string or a list, got 5"),
    ([{"type": 3, "role": "user", "content": "x"}], "input[0].type: expected a string, got 3"),
    ([{"type": "telepathy"}], "input[0].type: unknown item type 'telepathy'"),
    (
        [{"role": "user", "content": [{"type": "input_video", "url": "v"}]}],
        "input[0].content[0].type: unknown part type 'input_video'",
    ),
    (
        [{"role": "user", "content": [{"type": "input_text", "text": "a", "cache_control": {}}]}],
        "input[0].content[0]: unknown field 'cache_control'",
    ),
    (
        [{"role": "user", "content": [{"type": "input_image", "image_url": 7}]}],
        "input[0].content[0].image_url: expected a string or null, got 7",
    ),
    (
        [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}],
        "input[0].arguments: expected a string, got {'a': 1}",
    ),
    (
        [{"type": "function_call", "call_id": "c", "name": "f"}],
        "input[0]: missing field 'arguments'",
    ),
    (
        [{"type": "function_call_output", "call_id": "c", "output": None}],
        "input[0].output: expected a string or a list, got None",
    ),
    (
        [
            {
                "type": "function_call_output",
                "call_id": "c",
                "output": [{"type": "output_text", "text": "x"}],
            }
        ],
        "input[0].output[0].type: unknown output part type 'output_text'",
    ),
    (
        [{"type": "reasoning", "summary": [{"type": "reasoning_text", "text": "x"}]}],
        "input[0].summary[0].type: unknown summary type 'reasoning_text'",
    ),
    ([{"type": "reasoning", "summary": "x"}], "input[0].summary: expected a list, got 'x'"),
]


@pytest.mark.parametrize(("items", "error"), PARSE_ERRORS)
def test_messages_from_responses_refuses_what_it_does_not_know(items: Any, error: str) -> None:
    with pytest.raises(FormatError) as caught:
        messages_from_responses(items)

    assert str(caught.value) == error


DUMP_ERRORS: list[tuple[AgenticMessage, str]] = [
    (AgenticMessage(role="tool"), "messages[0].role: unknown role 'tool'"),
    (
        AgenticMessage(role="user", content_blocks=(UserInputVideo(),)),
        "messages[0].content_blocks[0]: block type 'user_input_video' has no Responses form",
    ),
    (
        AgenticMessage(
            role="user",
            content_blocks=(
                FunctionToolResult(call_id="c", content=(ToolResultContent(type="video"),)),
            ),
        ),
        "messages[0].content_blocks[0].content[0]: "
        "tool result part type 'video' has no Responses form",
    ),
]


@pytest.mark.parametrize(("message", "error"), DUMP_ERRORS)
def test_messages_to_responses_refuses_what_the_api_would_not_take(
    message: AgenticMessage, error: str
) -> None:
    with pytest.raises(FormatError) as caught:
        messages_to_responses([message])

    assert str(caught.value) == error
