"""Anthropic Messages: exact values, lossless round trips, strict errors."""

from __future__ import annotations

import json
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
    UserInputAudio,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats import messages_from_anthropic, messages_to_anthropic
from reduction_app.engine.messages import Media

CACHE = {"type": "ephemeral"}
WEATHER_INPUT = {"city": "Zürich", "days": 3, "units": None, "hourly": [True, False], "at": 1.5}


def test_messages_from_anthropic_reads_system_text_and_tool_use() -> None:
    messages = [
        {"role": "user", "content": "Weather in Zürich?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Use the tool.", "signature": "EqQB"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": WEATHER_INPUT},
            ],
        },
    ]

    assert messages_from_anthropic(messages, system="Be brief.") == [
        AgenticMessage(
            role="system",
            content_blocks=(UserInputText(text="Be brief."),),
            extra={"anthropic.content_shape": "string"},
        ),
        AgenticMessage(
            role="user",
            content_blocks=(UserInputText(text="Weather in Zürich?"),),
            extra={"anthropic.content_shape": "string"},
        ),
        AgenticMessage(
            role="assistant",
            content_blocks=(
                Reasoning(text="Use the tool.", extra={"anthropic.signature": "EqQB"}),
                AssistantGenText(text="Checking."),
                FunctionToolCall(
                    call_id="toolu_1",
                    name="weather",
                    arguments=json.dumps(WEATHER_INPUT, ensure_ascii=False),
                ),
            ),
        ),
    ]


def test_messages_from_anthropic_keeps_parallel_results_in_one_message() -> None:
    messages = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {"q": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file a"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "no match"},
                        {
                            "type": "image",
                            "source": {
                                "type": "base64",
                                "media_type": "image/png",
                                "data": "iVBOR",
                            },
                        },
                    ],
                },
            ],
        },
    ]

    results = messages_from_anthropic(messages)[1]

    assert results == AgenticMessage(
        role="user",
        content_blocks=(
            FunctionToolResult(
                call_id="toolu_1",
                name="read",
                content=(ToolResultContent(type="text", text="file a"),),
                extra={"anthropic.content_shape": "string"},
            ),
            FunctionToolResult(
                call_id="toolu_2",
                name="grep",
                content=(
                    ToolResultContent(type="text", text="no match"),
                    ToolResultContent(
                        type="image", media=Media(base64_data="iVBOR", mime_type="image/png")
                    ),
                ),
                extra={"anthropic.is_error": True},
            ),
        ),
    )


def test_messages_from_anthropic_maps_media_sources() -> None:
    content = [
        {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
        {"type": "image", "source": {"type": "file", "file_id": "file_01"}, "cache_control": CACHE},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
            "title": "Spec",
        },
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hi"}},
    ]

    (message,) = messages_from_anthropic([{"role": "user", "content": content}])

    assert message.content_blocks == (
        UserInputImage(media=Media(url="https://x.test/a.png")),
        UserInputImage(
            media=Media(extra={"anthropic.file_id": "file_01"}),
            extra={"anthropic.cache_control": CACHE},
        ),
        UserInputFile(
            media=Media(base64_data="JVBER", mime_type="application/pdf"),
            extra={"anthropic.title": "Spec"},
        ),
        UserInputFile(
            extra={"anthropic.source": {"type": "text", "media_type": "text/plain", "data": "hi"}}
        ),
    )


def test_messages_from_anthropic_carries_server_blocks_verbatim() -> None:
    server_use = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "eino"},
    }
    (message,) = messages_from_anthropic([{"role": "assistant", "content": [server_use]}])

    assert message.content_blocks == (RawBlock(data=server_use),)


ROUND_TRIPS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": ""}, {"role": "assistant", "content": "Hello"}],
    [{"role": "user", "content": []}],
    [{"role": "user", "content": [{"type": "text", "text": "one bare text block"}]}],
    [{"role": "user", "content": [{"type": "text", "text": "Question", "cache_control": CACHE}]}],
    [
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                {"type": "thinking", "thinking": "", "signature": "sig"},
                {
                    "type": "text",
                    "text": "Eino is a framework.",
                    "citations": [
                        {
                            "type": "web_search_result_location",
                            "url": "https://x.test",
                            "title": "Eino",
                            "encrypted_index": "Eo8B",
                            "cited_text": "Eino is",
                        }
                    ],
                },
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "eino"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": [
                        {"type": "web_search_result", "url": "https://x.test", "title": "Eino"}
                    ],
                },
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "weather",
                    "input": WEATHER_INPUT,
                    "cache_control": CACHE,
                },
                {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
            ],
        }
    ],
    [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": ""},
                {"type": "tool_result", "tool_use_id": "toolu_3", "content": []},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_4",
                    "content": "boom",
                    "is_error": True,
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_5",
                    "cache_control": CACHE,
                    "content": [
                        {"type": "text", "text": "see image"},
                        {"type": "image", "source": {"type": "url", "url": "https://x.test/p.png"}},
                        {
                            "type": "document",
                            "source": {
                                "type": "content",
                                "content": [{"type": "text", "text": "p1"}],
                            },
                            "citations": {"enabled": True},
                            "context": "from the wiki",
                        },
                    ],
                },
                {"type": "text", "text": "Keep going."},
            ],
        }
    ],
    [
        {
            "role": "user",
            "content": [
                {
                    "type": "document",
                    "source": {"type": "url", "url": "https://x.test/a.pdf"},
                    "title": None,
                },
                {
                    "type": "document",
                    "source": {"type": "file", "file_id": "file_02"},
                    "cache_control": CACHE,
                },
                {"type": "search_result", "source": "https://x.test", "title": "T", "content": []},
                {"type": "container_upload", "file_id": "file_03"},
            ],
        }
    ],
]


@pytest.mark.parametrize("messages", ROUND_TRIPS)
def test_messages_to_anthropic_gives_back_what_was_parsed(messages: list[dict[str, Any]]) -> None:
    assert messages_to_anthropic(messages_from_anthropic(messages)) == (None, messages)


@pytest.mark.parametrize(
    "system",
    ["You are helpful.", [{"type": "text", "text": "Rules", "cache_control": CACHE}], []],
)
def test_messages_to_anthropic_gives_the_system_parameter_back(system: Any) -> None:
    messages = [{"role": "user", "content": "Hi"}]

    assert messages_to_anthropic(messages_from_anthropic(messages, system=system)) == (
        system,
        messages,
    )


def test_messages_to_anthropic_writes_a_rewritten_string_result_as_a_string() -> None:
    (message,) = messages_from_anthropic(
        [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 90}],
            }
        ]
    )
    (result,) = message.content_blocks
    assert isinstance(result, FunctionToolResult)
    cleared = FunctionToolResult(
        call_id=result.call_id,
        content=(ToolResultContent(type="text", text="<persisted-output>"),),
        extra=result.extra,
    )

    assert messages_to_anthropic([AgenticMessage(role="user", content_blocks=(cleared,))]) == (
        None,
        [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "<persisted-output>"}
                ],
            }
        ],
    )


def test_messages_to_anthropic_never_writes_engine_markers() -> None:
    message = AgenticMessage(
        role="assistant",
        content_blocks=(FunctionToolCall(call_id="t1", name="ls", arguments='{"path": "."}'),),
        extra={"_reduction_mw_processed": True, "openai.name": "bot"},
    )

    assert messages_to_anthropic([message]) == (
        None,
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}],
            }
        ],
    )


PARSE_ERRORS: list[tuple[Any, Any, str]] = [
    ("hi", None, "messages: expected a list, got 'hi'"),
    ([{"role": "system", "content": "x"}], None, "messages[0].role: unknown role 'system'"),
    ([{"role": "user", "content": "x", "name": "a"}], None, "messages[0]: unknown field 'name'"),
    ([{"role": "user"}], None, "messages[0]: missing field 'content'"),
    (
        [{"role": "user", "content": 5}],
        None,
        "messages[0].content: expected a string or a list, got 5",
    ),
    (
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "video", "source": {}}],
            }
        ],
        None,
        "messages[0].content[1].type: unknown block type 'video'",
    ),
    (
        [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}],
        None,
        "messages[0].content[0].type: block type 'tool_use' is not allowed in a user message",
    ),
    (
        [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "{}"}],
            }
        ],
        None,
        "messages[0].content[0].input: expected an object, got '{}'",
    ),
    (
        [{"role": "assistant", "content": [{"type": "text", "text": "a", "extra": 1}]}],
        None,
        "messages[0].content[0]: unknown field 'extra'",
    ),
    (
        [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a", "cache_control": "ephemeral"}],
            }
        ],
        None,
        "messages[0].content[0].cache_control: expected an object, got 'ephemeral'",
    ),
    (
        [{"role": "assistant", "content": [{"type": "thinking", "thinking": "a"}]}],
        None,
        "messages[0].content[0]: missing field 'signature'",
    ),
    (
        [{"role": "user", "content": [{"type": "image", "source": {"type": "s3", "key": "k"}}]}],
        None,
        "messages[0].content[0].source.type: unknown source type 's3'",
    ),
    (
        [{"role": "user", "content": [{"type": "image", "source": {"type": "url"}}]}],
        None,
        "messages[0].content[0].source: missing field 'url'",
    ),
    (
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": 3}]}],
        None,
        "messages[0].content[0].content: expected a string or a list, got 3",
    ),
    (
        [
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [
                            {"type": "search_result", "source": "s", "title": "t", "content": []}
                        ],
                    }
                ],
            }
        ],
        None,
        "messages[0].content[0].content[0].type: "
        "block type 'search_result' cannot be in a tool_result",
    ),
    ([], 42, "system: expected a string or a list, got 42"),
    ([], [{"type": "image", "source": {}}], "system[0].type: expected a text block, got 'image'"),
]


@pytest.mark.parametrize(("messages", "system", "error"), PARSE_ERRORS)
def test_messages_from_anthropic_refuses_what_it_does_not_know(
    messages: Any, system: Any, error: str
) -> None:
    with pytest.raises(FormatError) as caught:
        messages_from_anthropic(messages, system=system)

    assert str(caught.value) == error


DUMP_ERRORS: list[tuple[list[AgenticMessage], str]] = [
    (
        [AgenticMessage(role="user"), AgenticMessage(role="system")],
        "messages[1].role: a system message can only come first",
    ),
    ([AgenticMessage(role="tool")], "messages[0].role: unknown role 'tool'"),
    (
        [
            AgenticMessage(
                role="assistant", content_blocks=(FunctionToolCall(call_id="t", arguments="{bad"),)
            )
        ],
        "messages[0].content[0].arguments: expected a JSON object, got '{bad'",
    ),
    (
        [
            AgenticMessage(
                role="assistant", content_blocks=(FunctionToolCall(call_id="t", arguments="[1]"),)
            )
        ],
        "messages[0].content[0].arguments: expected a JSON object, got '[1]'",
    ),
    (
        [AgenticMessage(role="assistant", content_blocks=(FunctionToolResult(call_id="t"),))],
        "messages[0].content[0]: "
        "block type 'function_tool_result' cannot go in an Anthropic assistant message",
    ),
    (
        [AgenticMessage(role="system", content_blocks=(RawBlock(data={"type": "search_result"}),))],
        "system[0]: block type 'raw' cannot go in an Anthropic system message",
    ),
    (
        [AgenticMessage(role="user", content_blocks=(UserInputAudio(),))],
        "messages[0].content[0]: block type 'user_input_audio' has no Anthropic form",
    ),
    (
        [AgenticMessage(role="user", content_blocks=(UserInputImage(),))],
        "messages[0].content[0]: the media has no url, base64_data or file id",
    ),
    (
        [
            AgenticMessage(
                role="user",
                content_blocks=(
                    FunctionToolResult(call_id="t", content=(ToolResultContent(type="audio"),)),
                ),
            )
        ],
        "messages[0].content[0].content[0]: tool result part type 'audio' has no Anthropic form",
    ),
]


@pytest.mark.parametrize(("messages", "error"), DUMP_ERRORS)
def test_messages_to_anthropic_refuses_what_the_api_would_not_take(
    messages: list[AgenticMessage], error: str
) -> None:
    with pytest.raises(FormatError) as caught:
        messages_to_anthropic(messages)

    assert str(caught.value) == error
