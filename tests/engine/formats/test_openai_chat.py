"""OpenAI Chat Completions messages: exact values, lossless round trips, strict errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats import messages_from_openai, messages_to_openai
from reduction_app.engine.messages import Media, Message, MessagePart, ToolCall
from tests.conftest import CONVERSATIONS, needs_recordings

DATA = CONVERSATIONS
TAU_BENCH = DATA / "tau-bench-airline-gpt-4o.json"
OPENHANDS = DATA / "openhands-multi-swe-bench-llama4.jsonl"


def test_messages_from_openai_reads_every_role() -> None:
    wire = [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "Cancel my booking.", "name": "emma"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_reservation", "arguments": '{"id": "MDCLVA"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "get_reservation", "content": "{}"},
    ]

    assert messages_from_openai(wire) == [
        Message(role="system", content="You are an airline agent."),
        Message(role="system", content="Be brief.", extra={"openai.role": "developer"}),
        Message(role="user", content="Cancel my booking.", extra={"openai.name": "emma"}),
        Message(
            role="assistant",
            tool_calls=(
                ToolCall(id="call_1", name="get_reservation", arguments='{"id": "MDCLVA"}'),
            ),
            extra={"openai.content_shape": "null"},
        ),
        Message(role="tool", content="{}", tool_call_id="call_1", tool_name="get_reservation"),
    ]


def test_messages_from_openai_maps_user_parts_to_media() -> None:
    wire = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                {
                    "type": "image_url",
                    "image_url": {"url": "https://x.test/a.jpg", "detail": "low"},
                },
                {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
                {"type": "file", "file": {"file_data": "JVBER", "filename": "a.pdf"}},
                {"type": "file", "file": {"file_id": "file-abc"}},
            ],
        }
    ]

    (message,) = messages_from_openai(wire)

    assert message.content == ""
    assert message.user_input_multi_content == (
        MessagePart(type="text", text="What is this?"),
        MessagePart(type="image_url", media=Media(url="data:image/png;base64,iVBOR")),
        MessagePart(type="image_url", media=Media(url="https://x.test/a.jpg", detail="low")),
        MessagePart(type="audio_url", media=Media(base64_data="UklGR", mime_type="audio/wav")),
        MessagePart(type="file_url", media=Media(base64_data="JVBER", name="a.pdf")),
        MessagePart(type="file_url", media=Media(extra={"openai.file_id": "file-abc"})),
    )


def test_messages_from_openai_puts_assistant_and_tool_parts_in_their_slots() -> None:
    wire = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I can't"},
                {"type": "refusal", "refusal": "help with that."},
            ],
            "reasoning_content": "The user asks for ...",
        },
        {
            "role": "tool",
            "tool_call_id": "call_9",
            "content": [{"type": "text", "text": "line 1"}, {"type": "text", "text": "line 2"}],
        },
    ]

    assistant, tool = messages_from_openai(wire)

    assert assistant == Message(
        role="assistant",
        reasoning_content="The user asks for ...",
        assistant_gen_multi_content=(
            MessagePart(type="text", text="I can't"),
            MessagePart(type="text", text="help with that.", extra={"openai.part_type": "refusal"}),
        ),
    )
    assert tool == Message(
        role="tool",
        tool_call_id="call_9",
        user_input_multi_content=(
            MessagePart(type="text", text="line 1"),
            MessagePart(type="text", text="line 2"),
        ),
    )


ROUND_TRIPS: list[list[dict[str, Any]]] = [
    [{"role": "user", "content": ""}],
    [{"role": "user", "content": []}],
    [{"role": "assistant"}],
    [{"role": "assistant", "content": None, "refusal": "I can't help with that."}],
    [{"role": "assistant", "content": "", "tool_calls": [], "function_call": None}],
    [{"role": "assistant", "content": "Hi", "tool_calls": None, "name": "bot", "refusal": None}],
    [{"role": "assistant", "content": None, "audio": {"id": "audio_abc"}}],
    [
        {
            "role": "assistant",
            "content": "Paris.",
            "refusal": None,
            "annotations": [],
            "audio": None,
            "function_call": None,
            "tool_calls": None,
        }
    ],
    [{"role": "assistant", "content": "4", "reasoning_content": "2+2"}],
    [{"role": "assistant", "content": "4", "reasoning_content": ""}],
    [{"role": "assistant", "content": "4", "reasoning_content": None}],
    [
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "index": 1,
                    "id": "toolu_49",
                    "type": "function",
                    "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'},
                },
                {
                    "id": "toolu_50",
                    "type": "function",
                    "function": {"name": "think", "arguments": ""},
                },
            ],
        }
    ],
    [{"role": "tool", "tool_call_id": "c1", "content": "ok"}],
    [{"role": "tool", "tool_call_id": "c1", "content": "ok", "name": ""}],
    [{"role": "tool", "tool_call_id": "", "content": [{"type": "text", "text": "a"}]}],
    [{"role": "system", "content": [{"type": "text", "text": "Rules"}], "name": "ops"}],
    [{"role": "developer", "content": "Answer in French."}],
    [
        {
            "role": "user",
            "content": [
                {
                    "type": "image_url",
                    "image_url": {"url": "https://x.test/a.png", "detail": "auto"},
                },
                {"type": "image_url", "image_url": {"url": "https://x.test/b.png", "detail": ""}},
                {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
                {"type": "file", "file": {"file_id": "file-1", "filename": ""}},
                {"type": "file", "file": {}},
            ],
        }
    ],
]


@pytest.mark.parametrize("wire", ROUND_TRIPS)
def test_messages_to_openai_gives_back_what_was_parsed(wire: list[dict[str, Any]]) -> None:
    assert messages_to_openai(messages_from_openai(wire)) == wire


@needs_recordings
def test_messages_openai_round_trip_every_tau_bench_trajectory() -> None:
    runs = json.loads(TAU_BENCH.read_text())
    messages = 0
    for run in runs:
        parsed = messages_from_openai(run["traj"])
        assert messages_to_openai(parsed) == run["traj"]
        messages += len(parsed)

    assert (len(runs), messages) == (200, 5308)


@needs_recordings
def test_messages_openai_round_trip_every_openhands_model_message() -> None:
    seen = 0
    for line in OPENHANDS.read_text().splitlines():
        for event in json.loads(line)["history"]:
            if "tool_call_metadata" not in event:
                continue
            wire = [event["tool_call_metadata"]["model_response"]["choices"][0]["message"]]
            assert messages_to_openai(messages_from_openai(wire)) == wire
            seen += 1

    assert seen == 208


def test_messages_from_openai_does_not_share_state_with_the_payload() -> None:
    wire = [{"role": "assistant", "content": "x", "audio": {"id": "a1"}}]
    (message,) = messages_from_openai(wire)

    wire[0]["audio"]["id"] = "changed"
    dumped = messages_to_openai([message])
    dumped[0]["audio"]["id"] = "changed again"

    assert message.extra == {"openai.audio": {"id": "a1"}}


def test_messages_to_openai_never_writes_engine_markers_or_other_formats_keys() -> None:
    message = Message(
        role="assistant",
        content="done",
        extra={"_reduction_mw_processed": True, "anthropic.cache_control": {"type": "ephemeral"}},
    )

    assert messages_to_openai([message]) == [{"role": "assistant", "content": "done"}]


def test_messages_to_openai_writes_new_text_over_a_remembered_null() -> None:
    (parsed,) = messages_from_openai([{"role": "assistant", "content": None}])
    edited = Message(role="assistant", content="rewritten", extra=parsed.extra)

    assert messages_to_openai([edited]) == [{"role": "assistant", "content": "rewritten"}]


def test_messages_to_openai_writes_a_data_url_for_inline_images() -> None:
    part = MessagePart(
        type="image_url", media=Media(base64_data="iVBOR", mime_type="image/png", detail="high")
    )

    assert messages_to_openai([Message(role="user", user_input_multi_content=(part,))]) == [
        {
            "role": "user",
            "content": [
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,iVBOR", "detail": "high"},
                }
            ],
        }
    ]


PARSE_ERRORS: list[tuple[Any, str]] = [
    ({"role": "user"}, "messages: expected a list, got {'role': 'user'}"),
    (["hi"], "messages[0]: expected an object, got 'hi'"),
    ([{"content": "hi"}], "messages[0]: missing field 'role'"),
    ([{"role": "bot", "content": "hi"}], "messages[0].role: unknown role 'bot'"),
    ([{"role": 1, "content": "hi"}], "messages[0].role: expected a string, got 1"),
    (
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "user", "content": "c", "foo": 1},
        ],
        "messages[2]: unknown field 'foo'",
    ),
    ([{"role": "user", "content": 5}], "messages[0].content: expected a string or a list, got 5"),
    (
        [{"role": "user", "content": None}],
        "messages[0].content: expected a string or a list, got None",
    ),
    (
        [{"role": "assistant", "content": 5}],
        "messages[0].content: expected a string, a list or null, got 5",
    ),
    ([{"role": "user"}], "messages[0]: missing field 'content'"),
    ([{"role": "tool", "content": "x"}], "messages[0]: missing field 'tool_call_id'"),
    (
        [{"role": "tool", "content": "x", "tool_call_id": 7}],
        "messages[0].tool_call_id: expected a string, got 7",
    ),
    (
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "video", "video": {}}],
            }
        ],
        "messages[0].content[1].type: unknown part type 'video'",
    ),
    (
        [
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": [{"type": "image_url", "image_url": {"url": "u"}}],
            }
        ],
        "messages[0].content[0].type: part type 'image_url' is not allowed in a tool message",
    ),
    (
        [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {}}]}],
        "messages[0].content[0]: unknown field 'cache_control'",
    ),
    (
        [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "u", "size": 1}}],
            }
        ],
        "messages[0].content[0].image_url: unknown field 'size'",
    ),
    (
        [
            {
                "role": "user",
                "content": [{"type": "input_audio", "input_audio": {"data": "x", "format": "ogg"}}],
            }
        ],
        "messages[0].content[0].input_audio.format: unknown audio format 'ogg'",
    ),
    (
        [{"role": "assistant", "content": None, "tool_calls": "get_weather"}],
        "messages[0].tool_calls: expected a list, got 'get_weather'",
    ),
    (
        [{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}],
        "messages[0].tool_calls[0].type: unknown tool call type 'custom'",
    ),
    (
        [
            {
                "role": "assistant",
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f"}}],
            }
        ],
        "messages[0].tool_calls[0].function: missing field 'arguments'",
    ),
    (
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": True,
                        "id": "c",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                    }
                ],
            }
        ],
        "messages[0].tool_calls[0].index: expected an integer, got True",
    ),
    (
        [{"role": "assistant", "refusal": 3}],
        "messages[0].refusal: expected a string or null, got 3",
    ),
    (
        [{"role": "user", "content": "x", "name": None}],
        "messages[0].name: expected a string, got None",
    ),
]


@pytest.mark.parametrize(("wire", "error"), PARSE_ERRORS)
def test_messages_from_openai_refuses_what_it_does_not_know(wire: Any, error: str) -> None:
    with pytest.raises(FormatError) as caught:
        messages_from_openai(wire)

    assert str(caught.value) == error


DUMP_ERRORS: list[tuple[Message, str]] = [
    (Message(role="function", content="x"), "messages[0].role: unknown role 'function'"),
    (
        Message(role="user", content="x", tool_calls=(ToolCall(id="c"),)),
        "messages[0]: user messages cannot carry tool_calls",
    ),
    (
        Message(role="assistant", user_input_multi_content=(MessagePart(type="text"),)),
        "messages[0]: assistant messages cannot carry user_input_multi_content",
    ),
    (
        Message(
            role="tool",
            tool_call_id="c",
            user_input_multi_content=(MessagePart(type="image_url", media=Media(url="u")),),
        ),
        "messages[0].content[0]: part type 'image_url' cannot go in an OpenAI tool message",
    ),
    (
        Message(role="user", user_input_multi_content=(MessagePart(type="video_url"),)),
        "messages[0].content[0]: part type 'video_url' cannot go in an OpenAI user message",
    ),
    (
        Message(role="user", user_input_multi_content=(MessagePart(type="image_url"),)),
        "messages[0].content[0]: part type 'image_url' has no media",
    ),
    (
        Message(role="assistant", tool_calls=(ToolCall(id="c", type="custom"),)),
        "messages[0].tool_calls[0].type: unknown tool call type 'custom'",
    ),
]


@pytest.mark.parametrize(("message", "error"), DUMP_ERRORS)
def test_messages_to_openai_refuses_what_the_api_would_not_take(
    message: Message, error: str
) -> None:
    with pytest.raises(FormatError) as caught:
        messages_to_openai([message])

    assert str(caught.value) == error


@pytest.mark.parametrize(
    ("call_id", "problem"),
    [
        ("c\x00", "must not contain NUL characters"),
        ("ok\udcff", "must not contain a lone surrogate ('\\udcff' at 2)"),
        ("i" * 201, "longer than the limit of 200 characters (201 characters)"),
    ],
)
def test_messages_from_openai_refuses_ids_no_store_can_hold(call_id: str, problem: str) -> None:
    wire = [{"role": "tool", "tool_call_id": call_id, "content": "x"}]
    with pytest.raises(FormatError) as caught:
        messages_from_openai(wire)
    assert str(caught.value) == f"messages[0].tool_call_id: {problem}"
