"""Putting reduced results back from their offload files (engine/_storage/_restore.py)."""

from __future__ import annotations

import copy

from reduction_app.engine import (
    AgenticMessage,
    ChatModelAgentState,
    FunctionToolCall,
    FunctionToolResult,
    InMemoryBackend,
    Media,
    Message,
    MessagePart,
    ReductionConfig,
    ToolCall,
    ToolContext,
    ToolResultContent,
    UserInputText,
    new,
)
from reduction_app.engine._storage._restore import offload_paths, restore_results


def _round(call_id: str, content: str) -> list[Message]:
    call = ToolCall(id=call_id, name="grep", arguments="{}")
    return [Message.assistant(tool_calls=[call]), Message.tool(content, call_id)]


def _chat() -> list[Message]:
    return [
        Message.system("s"),
        Message.user("u"),
        *_round("c1", "A" * 500),
        *_round("c2", "B" * 3000),
        *_round("c3", "C" * 50),
    ]


def test_restore_puts_cleared_and_truncated_results_back() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_tokens_for_clear=10, max_length_for_trunc=1000))
    msgs = _chat()
    wrapped = mw.wrap_invokable_tool_call(
        lambda _: "B" * 3000, ToolContext(name="grep", call_id="c2")
    )
    msgs[5] = Message.tool(wrapped("{}"), "c2")
    reduced = mw.before_model_rewrite_state(ChatModelAgentState(messages=msgs)).messages
    assert offload_paths(reduced) == {"/tmp/clear/c1", "/tmp/trunc/c2"}
    before = copy.deepcopy(list(reduced))
    restored = restore_results(reduced, backend.files)
    assert [m.content for m in restored if m.role == "tool"] == ["A" * 500, "B" * 3000, "C" * 50]
    assert list(reduced) == before, "the messages passed in are not changed"
    assert restored[6] is reduced[6], "untouched messages are the same objects"


def test_restore_leaves_results_whose_file_is_missing() -> None:
    placeholder = (
        "<persisted-output>Tool result saved to: /tmp/clear/gone\n"
        "Use read_file to view</persisted-output>"
    )
    msgs = [*_round("gone", placeholder), *_round("c2", "[Old tool result content cleared]")]

    def read(path: str) -> str:
        raise FileNotFoundError(path)

    assert restore_results(msgs, read) == msgs
    assert offload_paths(msgs) == {"/tmp/clear/gone"}


def test_restore_chinese_placeholder_and_multi_part_json() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_tokens_for_clear=1, language="zh"))
    parts = (
        MessagePart(type="text", text="first " * 50),
        MessagePart(type="image_url", media=Media(url="https://example.test/a.png", detail="low")),
        MessagePart(type="text", text="second"),
    )
    result = Message(role="tool", tool_call_id="c1", user_input_multi_content=parts)
    msgs = [
        Message.user("u"),
        Message.assistant(tool_calls=[ToolCall(id="c1", name="t")]),
        result,
        *_round("c2", "last"),
    ]
    reduced = mw.before_model_rewrite_state(ChatModelAgentState(messages=msgs)).messages
    assert (
        reduced[2].user_input_multi_content[0].text.startswith("<persisted-output>工具结果已保存至")
    )
    restored = restore_results(reduced, backend.files)
    assert restored[2].user_input_multi_content == parts


def test_restore_agentic_results_in_one_message() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_tokens_for_clear=1))
    msgs = [
        AgenticMessage(role="user", content_blocks=[UserInputText(text="go")]),
        AgenticMessage(
            role="assistant",
            content_blocks=[
                FunctionToolCall(call_id="t1", name="ls", arguments="{}"),
                FunctionToolCall(call_id="t2", name="grep", arguments="{}"),
            ],
        ),
        AgenticMessage(
            role="user",
            content_blocks=[
                FunctionToolResult(
                    call_id="t1", name="ls", content=[ToolResultContent(text="x" * 300)]
                ),
                FunctionToolResult(
                    call_id="t2", name="grep", content=[ToolResultContent(text="y" * 300)]
                ),
            ],
        ),
        AgenticMessage(
            role="assistant", content_blocks=[FunctionToolCall(call_id="t3", name="ls")]
        ),
    ]
    reduced = mw.before_model_rewrite_state(ChatModelAgentState(messages=msgs)).messages
    assert offload_paths(reduced) == {"/tmp/clear/t1", "/tmp/clear/t2"}
    restored = restore_results(reduced, backend.read)
    assert restored[2] == msgs[2]
