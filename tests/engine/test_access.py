"""Tests for reduction_app.engine.access: reading and rewriting both message styles
(docs/behaviour.md §1.3, §4.11, §5, cases 50–53)."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.engine._clear._phase import clear_range
from reduction_app.engine.access import (
    PROCESSED_FLAG,
    CallRef,
    call_results,
    classify,
    conversation_kind,
    find_result,
    is_cleared,
    is_processed,
    mark_processed,
    read_result,
    result_ids,
    tool_calls_of,
    write_arguments,
    write_result,
)
from reduction_app.engine.blocks import (
    AgenticMessage,
    FunctionToolCall,
    FunctionToolResult,
    ToolResultContent,
    ToolSearchResult,
    UserInputText,
)
from reduction_app.engine.errors import MessageError
from reduction_app.engine.messages import Media, Message, MessagePart, ToolCall
from reduction_app.engine.tool_io import ToolOutputPart, ToolResult
from tests.engine.clear_support import (
    agentic_call,
    agentic_results,
    agentic_text,
    c2,
    call_msg,
    containing,
    exactly,
    starting,
)

URL = "https://example.com/x"


# --- processed flag (case 50) -----------------------------------------------------------------


def test_access_processed_flag_unset_is_false() -> None:
    assert PROCESSED_FLAG == "_reduction_mw_processed"
    assert is_processed(Message.assistant("a")) is False


def test_access_mark_processed_keeps_other_extra_keys() -> None:
    msg = Message(role="assistant", extra={"keep": 1})
    marked = mark_processed(msg)
    assert is_processed(marked) is True
    assert marked.extra == {"keep": 1, PROCESSED_FLAG: True}
    assert msg.extra == {"keep": 1}


def test_access_mark_processed_on_a_flagged_message_returns_it() -> None:
    msg = Message(role="assistant", extra={PROCESSED_FLAG: True})
    assert mark_processed(msg) is msg


@pytest.mark.parametrize("value", ["not a bool", "true", 1, {}])
def test_access_only_boolean_true_counts_as_processed(value: Any) -> None:
    assert is_processed(Message(role="assistant", extra={PROCESSED_FLAG: value})) is False
    agentic = AgenticMessage(role="assistant", extra={PROCESSED_FLAG: value})
    assert is_processed(agentic) is False


def test_access_agentic_flag_lives_in_extra() -> None:
    marked = mark_processed(agentic_call(("a", "t")))
    assert marked.extra == {PROCESSED_FLAG: True}
    assert is_processed(marked) is True


# --- chat results (case 51) -------------------------------------------------------------------


def test_access_chat_tool_message_reads_as_content() -> None:
    assert read_result(Message.tool("test content", "id"), "id") == (
        ToolResult.of_text("test content"),
        True,
    )


def test_access_chat_multi_content_reads_as_parts() -> None:
    msg = Message(
        role="tool",
        tool_call_id="id",
        user_input_multi_content=(MessagePart(type="text", text="test text"),),
    )
    assert read_result(msg, "id") == (ToolResult.of_text("test text"), False)


def test_access_chat_non_tool_message_is_an_error() -> None:
    with pytest.raises(MessageError, match=exactly("message role user is not a tool")):
        read_result(Message.user("hi"), "id")


@pytest.mark.parametrize(
    ("part_type", "tool_type"),
    [("image_url", "image"), ("audio_url", "audio"), ("video_url", "video"), ("file_url", "file")],
)
def test_access_chat_media_parts_become_tool_media(part_type: Any, tool_type: str) -> None:
    media = Media(url=URL, mime_type="x/y", detail="low", name="n")
    msg = Message(role="tool", user_input_multi_content=(MessagePart(type=part_type, media=media),))
    result, from_content = read_result(msg, "")  # type: ignore[misc]
    assert from_content is False
    assert result.parts == (ToolOutputPart(type=tool_type, media=media),)  # type: ignore[arg-type]


def test_access_chat_unknown_part_type_is_an_error() -> None:
    msg = Message(role="tool", user_input_multi_content=(MessagePart(type="reasoning", text="r"),))
    with pytest.raises(MessageError, match=exactly("unknown msg part type: reasoning")):
        read_result(msg, "")


def test_access_chat_write_back_content_uses_the_first_part() -> None:
    msg = Message.tool("old", "id")
    parts = (ToolOutputPart.of_text("new"), ToolOutputPart.of_text("ignored"))
    assert write_result(msg, "id", parts, True) == Message.tool("new", "id")
    assert write_result(msg, "id", (), True) is msg


def test_access_chat_write_back_parts_replaces_multi_content() -> None:
    msg = Message(
        role="tool", content="c", user_input_multi_content=(MessagePart(type="text", text="old"),)
    )
    out = write_result(msg, "", (ToolOutputPart.of_text("new"),), False)
    assert out.user_input_multi_content == (MessagePart(type="text", text="new"),)
    assert out.content == "c"


def test_access_chat_write_back_media_without_media_leaves_the_message() -> None:
    """§4.6 step 8: a conversion error is ignored and the message stays as it was."""
    msg = Message(role="tool", user_input_multi_content=(MessagePart(type="text", text="old"),))
    assert write_result(msg, "", (ToolOutputPart(type="image"),), False) is msg


def test_access_chat_write_arguments() -> None:
    msg = call_msg(("a", "t", "{}"), ("b", "t", "[]"))
    ref = tool_calls_of(msg)[1]
    out = write_arguments(msg, ref, '{"x":1}')
    assert [tc.arguments for tc in out.tool_calls] == ["{}", '{"x":1}']
    assert msg.tool_calls[1].arguments == "[]"
    assert write_arguments(msg, ref, "[]") is msg


# --- agentic results (case 52) ----------------------------------------------------------------


def result_msg(*content: ToolResultContent, call_id: str = "c") -> AgenticMessage:
    return AgenticMessage(
        role="user", content_blocks=(FunctionToolResult(call_id=call_id, content=content),)
    )


def test_access_agentic_one_text_block_reads_as_content() -> None:
    assert read_result(result_msg(ToolResultContent(text="hi")), "c") == (
        ToolResult.of_text("hi"),
        True,
    )


def test_access_agentic_two_text_blocks_read_as_parts() -> None:
    msg = result_msg(ToolResultContent(text="a"), ToolResultContent(text="b"))
    result, from_content = read_result(msg, "c")  # type: ignore[misc]
    assert from_content is False
    assert [p.text for p in result.parts] == ["a", "b"]


def test_access_agentic_empty_content_reads_as_empty_text() -> None:
    assert read_result(result_msg(), "c") == (ToolResult.of_text(""), True)


def test_access_agentic_media_blocks_keep_their_urls() -> None:
    kinds = ("image", "audio", "video", "file")
    msg = result_msg(*(ToolResultContent(type=k, media=Media(url=f"{URL}/{k}")) for k in kinds))  # type: ignore[arg-type]
    result, from_content = read_result(msg, "c")  # type: ignore[misc]
    assert from_content is False
    assert [(p.type, p.media.url if p.media else None) for p in result.parts] == [
        (k, f"{URL}/{k}") for k in kinds
    ]


def test_access_agentic_write_back_text() -> None:
    out = write_result(
        result_msg(ToolResultContent(text="old")),
        "c",
        (ToolOutputPart.of_text("new content"),),
        True,
    )
    assert out == result_msg(ToolResultContent(text="new content"))


def test_access_agentic_write_back_text_and_image_keeps_url_and_mime() -> None:
    image = Media(url=URL, mime_type="image/png")
    out = write_result(
        result_msg(ToolResultContent(text="old")),
        "c",
        (ToolOutputPart.of_text("t"), ToolOutputPart(type="image", media=image)),
        False,
    )
    assert out == result_msg(
        ToolResultContent(text="t"), ToolResultContent(type="image", media=image)
    )


def test_access_agentic_write_back_drops_media_parts_without_media() -> None:
    out = write_result(result_msg(), "c", (ToolOutputPart(type="image"),), False)
    assert out == result_msg()


def test_access_agentic_write_back_refuses_a_tool_search_part() -> None:
    with pytest.raises(MessageError, match=containing("tool_search_result part cannot be written")):
        write_result(result_msg(), "c", (ToolOutputPart(type="tool_search_result"),), False)


def test_access_agentic_several_results_are_addressed_by_call_id() -> None:
    msg = agentic_results(("a", "A"), ("b", "B"))
    assert read_result(msg, "b") == (ToolResult.of_text("B"), True)
    out = write_result(msg, "b", (ToolOutputPart.of_text("new"),), True)
    assert out == agentic_results(("a", "A"), ("b", "new"))


def test_access_agentic_repeated_id_is_addressed_by_occurrence() -> None:
    msg = agentic_results(("d", "one"), ("d", "two"))
    assert read_result(msg, "d", 1) == (ToolResult.of_text("two"), True)
    assert read_result(msg, "d", 2) is None
    out = write_result(msg, "d", (ToolOutputPart.of_text("x"),), True, 1)
    assert out == agentic_results(("d", "one"), ("d", "x"))
    assert write_result(msg, "d", (ToolOutputPart.of_text("x"),), True, 2) is msg


def test_access_agentic_tool_search_result_is_not_a_clearable_result() -> None:
    msg = AgenticMessage(
        role="user",
        content_blocks=(ToolSearchResult(call_id="s"), FunctionToolResult(call_id="f")),
    )
    assert result_ids(msg) == ["s", "f"]
    assert read_result(msg, "s") is None
    assert write_result(msg, "s", (ToolOutputPart.of_text("x"),), True) is msg


def test_access_agentic_write_arguments_targets_the_block() -> None:
    msg = AgenticMessage(
        role="assistant",
        content_blocks=(UserInputText(text="x"), FunctionToolCall(call_id="a", arguments="{}")),
    )
    (ref,) = tool_calls_of(msg)
    assert ref == CallRef("a", "", "{}", 1)
    out = write_arguments(msg, ref, "[1]")
    assert out.content_blocks[1] == FunctionToolCall(call_id="a", arguments="[1]")


# --- classification and lookup (case 53) ------------------------------------------------------


def test_access_agentic_result_only_message_is_not_a_user_message() -> None:
    assert classify(agentic_results(("a", "A"))) == "tool_result"


def test_access_agentic_mixed_user_text_and_result_is_a_tool_result() -> None:
    mixed = AgenticMessage(
        role="user",
        content_blocks=(UserInputText(text="hi"), FunctionToolResult(call_id="a")),
    )
    assert classify(mixed) == "tool_result"
    assert classify(agentic_text("user", "hi")) == "user"


def test_access_agentic_user_without_blocks_is_unknown() -> None:
    assert classify(AgenticMessage(role="user")) is None
    assert classify(AgenticMessage(role="tool")) is None


def test_access_chat_classification() -> None:
    assert [classify(m) for m in c2()] == [
        "system",
        "user",
        "assistant",
        "tool_result",
        "assistant",
        "tool_result",
    ]
    assert classify(Message(role="critic")) is None


def test_access_agentic_tool_calls_get_block_index() -> None:
    refs = tool_calls_of(agentic_call(("c1", "a"), ("c2", "b")))
    assert [(r.call_id, r.position) for r in refs] == [("c1", 0), ("c2", 1)]


def test_access_tool_calls_only_on_assistant_messages() -> None:
    user = Message(role="user", tool_calls=(ToolCall(id="x", name="y"),))
    assert tool_calls_of(user) == []


def test_access_find_result_in_window() -> None:
    """Case 53: ``call_2`` is found at 2; an unknown id is not; the scan stops at a user."""
    msgs = [
        agentic_call(("call_1", "t"), ("call_2", "t")),
        agentic_results(("call_1", "1")),
        agentic_results(("call_2", "2")),
        agentic_text("user", "u"),
        agentic_results(("call_3", "3")),
    ]
    assert find_result(msgs, 0, "call_2") == (2, 0)
    assert find_result(msgs, 0, "nope") is None
    assert find_result(msgs, 0, "call_3") is None


def test_access_find_result_skips_taken_slots() -> None:
    msgs = [call_msg(("d", "t"), ("d", "t")), Message.tool("1", "d"), Message.tool("2", "d")]
    assert find_result(msgs, 0, "d", [(1, 0)]) == (2, 0)
    assert find_result(msgs, 0, "d", [(1, 0), (2, 0)]) is None


def test_access_empty_ids_match_each_other() -> None:
    msgs = [call_msg(("", "t")), Message.tool("r", "")]
    assert find_result(msgs, 0, "") == (1, 0)


def test_access_conversation_kind() -> None:
    assert conversation_kind(c2()) == "chat"
    assert conversation_kind([agentic_text("user", "u")]) == "agentic"
    assert conversation_kind([]) is None


def test_access_conversation_kind_refuses_mixed_and_foreign_values() -> None:
    with pytest.raises(
        MessageError, match=exactly("messages mix chat Message and AgenticMessage values")
    ):
        conversation_kind([Message.user("u"), agentic_text("user", "u")])
    with pytest.raises(MessageError, match=starting("messages[1] is NoneType, not a Message or")):
        conversation_kind([Message.user("u"), None])
    with pytest.raises(MessageError, match=starting("messages[0] is dict, not a Message or")):
        conversation_kind([{"role": "user"}])


def test_access_clear_range_rounds() -> None:
    """§4.3: ``end`` is the r-th latest assistant with tool calls; fewer rounds → 0."""
    msgs = c2()
    assert clear_range(msgs, 1) == (2, 4)
    assert clear_range(msgs, 2) == (2, 2)
    assert clear_range(msgs, 3) == (2, 0)
    assert clear_range(msgs, -1) == (2, 6)
    assert clear_range([Message.user("u")], 1) == (1, 0)


def test_access_call_results_pair_a_reused_id_in_order() -> None:
    msgs = [
        call_msg(("d", "t"), ("x", "t"), ("d", "t")),
        Message.tool("2", "x"),
        Message.tool("d1", "d"),
        Message.tool("d2", "d"),
    ]
    assert [(ref.position, slot) for ref, slot in call_results(msgs, 0)] == [
        (0, (2, 0)),
        (1, (1, 0)),
        (2, (3, 0)),
    ]
    assert [slot for _, slot in call_results([call_msg(("a", "t"))], 0)] == [None]


def test_access_is_cleared_recognises_our_placeholders_only() -> None:
    en = (
        "<persisted-output>Tool result saved to: /tmp/clear/a\n"
        "Use read_file to view</persisted-output>"
    )
    zh = "<persisted-output>工具结果已保存至: /tmp/clear/a\n使用 cat 进行查看</persisted-output>"
    image = ToolOutputPart(type="image", media=Media(url=URL))
    assert is_cleared(ToolResult.of_text(en)) is True
    assert is_cleared(ToolResult.of_text(zh)) is True
    assert is_cleared(ToolResult.of_text("[Old tool result content cleared]")) is True
    assert is_cleared(ToolResult.of_text("[工具输出结果已清理]")) is True
    assert is_cleared(ToolResult(parts=(ToolOutputPart.of_text(en), image))) is True
    assert (
        is_cleared(ToolResult(parts=(ToolOutputPart.of_text(en), ToolOutputPart.of_text("x"))))
        is False
    )
    assert is_cleared(ToolResult(parts=(image,))) is False
    assert is_cleared(ToolResult.of_text(en + " and more")) is False
