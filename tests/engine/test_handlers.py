"""Tests for the default handlers and the part helpers they use: ``stringify``,
``concat_tool_results``, ``text_prefix`` (docs/behaviour.md §3.2, §3.4, §4.7; cases 22, 44–49)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from reduction_app.engine import default_clear_handler, default_trunc_handler
from reduction_app.engine._handlers._defaults import joint_parts
from reduction_app.engine.errors import MessageError
from reduction_app.engine.messages import Media
from reduction_app.engine.notices import stream_notice, trunc_notice
from reduction_app.engine.parts import concat_tool_results, stringify, text_prefix
from reduction_app.engine.tool_io import (
    ClearResult,
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)

IMAGE = ToolOutputPart(type="image", media=Media(url="https://x/i.png", mime_type="image/png"))
AUDIO = ToolOutputPart(type="audio", media=Media(url="https://x/a.mp3"))


def text(value: str, **extra: object) -> ToolOutputPart:
    return ToolOutputPart(type="text", text=value, extra=extra)


def detail(*parts: ToolOutputPart, call_id: str = "call_1", argument: str = "{}") -> ToolDetail:
    return ToolDetail(
        tool_context=ToolContext(name="t", call_id=call_id),
        tool_argument=ToolArgument(text=argument),
        tool_result=ToolResult(parts=parts),
    )


def streamed(*chunks: ToolResult | None, error: Exception | None = None) -> ToolDetail:
    def stream() -> Iterator[ToolResult]:
        yield from chunks  # type: ignore[misc]
        if error is not None:
            raise error

    return ToolDetail(
        tool_context=ToolContext(name="t", call_id="call_1"), stream_tool_result=stream()
    )


class PathLog:
    """A path generator that records what it was asked for."""

    def __init__(self, kind: str = "clear") -> None:
        self.kind = kind
        self.seen: list[ToolDetail] = []

    def __call__(self, d: ToolDetail) -> str:
        self.seen.append(d)
        return f"/tmp/{self.kind}/{d.tool_context.call_id or 'generated'}"


def failing_path(d: ToolDetail) -> str:
    raise OSError("gen path error")


# default_clear_handler (§4.7) ----------------------------------------------------------


def test_default_clear_handler_offloads_and_places_a_pointer() -> None:
    """Case 44."""
    handler = default_clear_handler(PathLog(), True, "read_file")
    d = detail(text("hello"), call_id="mock_call_id_12345", argument="anything")
    assert handler(d) == ClearResult(
        need_clear=True,
        tool_argument=ToolArgument(text="anything"),
        tool_result=ToolResult(
            parts=(
                text(
                    "<persisted-output>Tool result saved to: /tmp/clear/mock_call_id_12345\n"
                    "Use read_file to view</persisted-output>"
                ),
            )
        ),
        need_offload=True,
        offload_file_path="/tmp/clear/mock_call_id_12345",
        offload_content="hello",
    )


def test_default_clear_handler_empty_parts_need_no_clear() -> None:
    """Case 45."""
    assert default_clear_handler(PathLog(), True, "read_file")(detail()) == ClearResult(
        need_clear=False
    )


def test_default_clear_handler_keeps_media_and_offloads_them_as_json() -> None:
    """Case 45 / §4.7: an image-only result is "cleared" with its parts unchanged."""
    result = default_clear_handler(PathLog(), True, "read_file")(detail(IMAGE))
    assert result.tool_result == ToolResult(parts=(IMAGE,))
    assert (result.need_clear, result.need_offload) == (True, True)
    assert result.offload_content == (
        '[\n  {\n    "type": "image",\n    "image": {\n      "url": "https://x/i.png",\n'
        '      "mime_type": "image/png"\n    }\n  }\n]'
    )


def test_default_clear_handler_empty_call_id_uses_the_generator_fallback() -> None:
    """Case 45."""
    result = default_clear_handler(PathLog(), True, "read_file")(detail(text("x"), call_id=""))
    assert result.offload_file_path == "/tmp/clear/generated"


def test_default_clear_handler_reads_a_stream() -> None:
    """Case 45: stream ["streaming content"]; the generator sees the joined result."""
    paths = PathLog()
    result = default_clear_handler(paths, True, "read_file")(
        streamed(ToolResult.of_text("streaming content"))
    )
    assert result.offload_content == "streaming content"
    assert paths.seen[0].tool_result == ToolResult.of_text("streaming content")


def test_default_clear_handler_generator_error_propagates() -> None:
    """Case 45."""
    with pytest.raises(OSError, match=r"^gen path error$"):
        default_clear_handler(failing_path, True, "read_file")(detail(text("x")))


def test_default_clear_handler_every_text_part_gets_the_placeholder() -> None:
    """§4.7: several text parts give several copies; media stay in place."""
    result = default_clear_handler(PathLog(), False, "read_file")(
        detail(text("a"), IMAGE, text("b"))
    )
    cleared = text("[Old tool result content cleared]")
    assert result == ClearResult(
        need_clear=True,
        tool_argument=ToolArgument(text="{}"),
        tool_result=ToolResult(parts=(cleared, IMAGE, cleared)),
    )


def test_default_clear_handler_without_offload_in_chinese() -> None:
    result = default_clear_handler(PathLog(), False, "read_file", language="zh")(detail(text("a")))
    assert result.tool_result == ToolResult.of_text("[工具输出结果已清理]")


def test_default_clear_handler_with_offload_in_chinese() -> None:
    result = default_clear_handler(PathLog(), True, "cat", language="zh")(detail(text("a")))
    assert result.tool_result == ToolResult.of_text(
        "<persisted-output>工具结果已保存至: /tmp/clear/call_1\n"
        "使用 cat 进行查看</persisted-output>"
    )


@pytest.mark.parametrize("language", ["en", "zh"])
def test_default_clear_handler_points_a_truncated_result_at_its_file(language: str) -> None:
    """§4.7: "truncated, then cleared" reuses the truncation file and writes nothing."""
    notice = trunc_notice(
        original_size=500,
        file_path="/tmp/trunc/call_1",
        preview_size=5,
        preview_first="aaaaa",
        preview_last="bbbbb",
        read_tool_name="read_file",
        language=language,  # type: ignore[arg-type]
    )
    paths = PathLog()
    result = default_clear_handler(paths, True, "read_file")(detail(text(notice)))
    assert result.need_offload is False
    assert result.offload_file_path == "/tmp/trunc/call_1"
    assert result.tool_result == ToolResult.of_text(
        "<persisted-output>Tool result saved to: /tmp/trunc/call_1\n"
        "Use read_file to view</persisted-output>"
    )
    assert paths.seen == []


def test_default_clear_handler_points_a_truncated_stream_at_its_file() -> None:
    closing = "x" * 10 + stream_notice(
        limit=10, file_path="/tmp/trunc/s1", read_tool_name="read_file", error=""
    )
    result = default_clear_handler(PathLog(), True, "read_file")(detail(text("abc" + closing)))
    assert (result.need_offload, result.offload_file_path) == (False, "/tmp/trunc/s1")


def test_default_clear_handler_offloads_a_stream_whose_save_failed() -> None:
    """A stream notice that reports a failed save names no file: the content is offloaded."""
    body = "x" * 10 + stream_notice(
        limit=10, file_path="", read_tool_name="read_file", error="disk full"
    )
    result = default_clear_handler(PathLog(), True, "read_file")(detail(text(body)))
    assert (result.need_offload, result.offload_file_path, result.offload_content) == (
        True,
        "/tmp/clear/call_1",
        body,
    )


# default_trunc_handler (§3.2) ----------------------------------------------------------


def test_default_trunc_handler_short_stream_is_kept() -> None:
    """Case 22."""
    handler = default_trunc_handler(PathLog("trunc"), 100, "read_file")
    assert handler(streamed(ToolResult.of_text("short text"))) == TruncResult(need_trunc=False)


def test_default_trunc_handler_long_stream_is_truncated_into_a_one_chunk_stream() -> None:
    """Case 22: "hello world" × 20 (220 characters) with M=100."""
    handler = default_trunc_handler(PathLog("trunc"), 100, "read_file")
    chunks = [ToolResult.of_text("hello world")] * 20
    result = handler(streamed(*chunks))
    assert (result.need_trunc, result.need_offload, result.tool_result) == (True, True, None)
    assert result.offload_file_path == "/tmp/trunc/call_1"
    assert result.offload_content == "hello world" * 20
    assert result.stream_tool_result is not None
    assert list(result.stream_tool_result) == [
        ToolResult.of_text(
            "<persisted-output>\nOutput too large (220). Full output saved to: /tmp/trunc/call_1\n"
            "Preview (first 50):\n"
            + ("hello world" * 5)[:50]
            + "\n\nPreview (last 50):\n"
            + ("hello world" * 5)[-50:]
            + "\n\nUse read_file to view\n</persisted-output>"
        )
    ]


def test_default_trunc_handler_generator_error_propagates() -> None:
    """Case 22: 1000 x, M=10, failing path generator."""
    with pytest.raises(OSError, match=r"^gen path error$"):
        default_trunc_handler(failing_path, 10, "read_file")(detail(text("x" * 1000)))


def test_default_trunc_handler_calls_the_generator_only_when_truncating() -> None:
    """§3.2 step 5."""
    paths = PathLog("trunc")
    handler = default_trunc_handler(paths, 10, "read_file")
    assert handler(detail(text("x" * 10))) == TruncResult(need_trunc=False)
    assert handler(detail(IMAGE)) == TruncResult(need_trunc=False)
    assert handler(detail()) == TruncResult(need_trunc=False)
    assert paths.seen == []


def test_default_trunc_handler_previews_in_characters() -> None:
    """Decision 1: previews never split a character."""
    result = default_trunc_handler(PathLog("trunc"), 4, "read_file")(detail(text("天气晴朗微风")))
    assert result.tool_result == ToolResult.of_text(
        "<persisted-output>\nOutput too large (6). Full output saved to: /tmp/trunc/call_1\n"
        "Preview (first 2):\n天气\n\nPreview (last 2):\n微风\n\n"
        "Use read_file to view\n</persisted-output>"
    )
    assert result.offload_content == "天气晴朗微风"


def test_default_trunc_handler_offloads_the_original_parts_as_json() -> None:
    """§3.2 step 3: the content is taken before the parts change; extras kept."""
    parts = (text("a" * 30, source="grep"), IMAGE, text("b" * 4))
    result = default_trunc_handler(PathLog("trunc"), 20, "read_file")(detail(*parts))
    assert result.offload_content == (
        '[\n  {\n    "type": "text",\n    "text": "' + "a" * 30 + '",\n'
        '    "extra": {\n      "source": "grep"\n    }\n  },\n'
        '  {\n    "type": "image",\n    "image": {\n      "url": "https://x/i.png",\n'
        '      "mime_type": "image/png"\n    }\n  },\n'
        '  {\n    "type": "text",\n    "text": "bbbb"\n  }\n]'
    )
    assert result.tool_result is not None
    first, image, last = result.tool_result.parts
    assert first.extra == {"source": "grep"}
    assert first.text.startswith("<persisted-output>\nOutput too large (30). ")
    assert (image, last) == (IMAGE, text("b" * 4))


def test_default_trunc_handler_with_zero_part_limit_replaces_every_text_part() -> None:
    """§3.2 step 4: four text parts under M=3 give part_limit 0 and empty previews."""
    result = default_trunc_handler(PathLog("trunc"), 3, "read_file")(
        detail(*(text(c * 2) for c in "abcd"))
    )
    empty = text(
        "<persisted-output>\nOutput too large (2). Full output saved to: /tmp/trunc/call_1\n"
        "Preview (first 0):\n\n\nPreview (last 0):\n\n\nUse read_file to view\n</persisted-output>"
    )
    assert result.tool_result == ToolResult(parts=(empty,) * 4)


def test_default_trunc_handler_in_chinese() -> None:
    result = default_trunc_handler(PathLog("trunc"), 2, "read_file", language="zh")(
        detail(text("abc"))
    )
    assert result.tool_result == ToolResult.of_text(
        "<persisted-output>\n输出结果过大 (3). 完整输出保存到: /tmp/trunc/call_1\n"
        "预览 (前 1):\na\n\n预览 (后 1):\nc\n\n使用 read_file 进行查看\n</persisted-output>"
    )


def test_default_trunc_handler_failed_stream_is_kept() -> None:
    """Case 46: a stream error gives need_trunc=false and no error."""
    handler = default_trunc_handler(PathLog("trunc"), 1, "read_file")
    assert handler(streamed(ToolResult.of_text("hello"), error=RuntimeError("x"))) == TruncResult()


# joint_parts (case 46) -----------------------------------------------------------------


def test_joint_parts_keeps_a_results_parts_as_given() -> None:
    assert joint_parts(detail(text("hello "), text("world"))) == [text("hello "), text("world")]


def test_joint_parts_joins_stream_chunks() -> None:
    joined = joint_parts(streamed(ToolResult.of_text("hello "), ToolResult.of_text("world")))
    assert joined == [text("hello world")]


def test_joint_parts_failed_stream_gives_none() -> None:
    assert joint_parts(streamed(ToolResult.of_text("a"), error=RuntimeError("boom"))) is None


def test_joint_parts_without_any_result_raises() -> None:
    with pytest.raises(MessageError, match=r"^tool_result and stream_tool_result are both None$"):
        joint_parts(ToolDetail(tool_context=ToolContext()))


def test_joint_parts_empty_and_media() -> None:
    assert joint_parts(detail()) == []
    assert joint_parts(streamed(ToolResult(parts=(IMAGE,)))) == [IMAGE]


# stringify (case 47, decision 9) -------------------------------------------------------


def test_stringify_no_parts_is_empty() -> None:
    assert stringify([]) == ""


def test_stringify_one_text_part_is_raw() -> None:
    assert stringify([text("line 1\r\n<b>天气</b>")]) == "line 1\r\n<b>天气</b>"


def test_stringify_two_text_parts_are_indented_json() -> None:
    assert stringify([text("a"), text("")]) == (
        '[\n  {\n    "type": "text",\n    "text": "a"\n  },\n  {\n    "type": "text"\n  }\n]'
    )


def test_stringify_one_media_part_is_json_without_html_escaping() -> None:
    part = ToolOutputPart(type="file", media=Media(url="https://x/a?b=1&c=<2>", name="报告.pdf"))
    assert stringify([part]) == (
        '[\n  {\n    "type": "file",\n    "file": {\n'
        '      "url": "https://x/a?b=1&c=<2>",\n      "name": "报告.pdf"\n    }\n  }\n]'
    )


def test_stringify_tool_search_result_part() -> None:
    part = ToolOutputPart(type="tool_search_result", tool_search_result={"hits": ["grep"]})
    assert stringify([part]) == (
        '[\n  {\n    "type": "tool_search_result",\n    "tool_search_result": {\n'
        '      "hits": [\n        "grep"\n      ]\n    }\n  }\n]'
    )


# concat_tool_results (§1.2) ------------------------------------------------------------


def test_concat_merges_adjacent_text_and_their_extras() -> None:
    chunks = [
        ToolResult(parts=(text("a", k=1),)),
        None,
        ToolResult(parts=(text("b", j=2), IMAGE, text("c"))),
    ]
    assert concat_tool_results(chunks) == [text("ab", k=1, j=2), IMAGE, text("c")]


def test_concat_conflicting_media_across_chunks_raises() -> None:
    chunks = [ToolResult(parts=(AUDIO,)), ToolResult(), ToolResult(parts=(text("x"), AUDIO))]
    with pytest.raises(
        MessageError, match=r"^conflicting audio parts found in chunk 0 and chunk 2$"
    ):
        concat_tool_results(chunks)


def test_concat_same_media_type_within_one_chunk_is_kept() -> None:
    assert concat_tool_results([ToolResult(parts=(IMAGE, IMAGE))]) == [IMAGE, IMAGE]


def test_concat_does_not_change_its_input() -> None:
    first = text("a", k=1)
    chunks = [ToolResult(parts=(first,)), ToolResult(parts=(text("b", j=2),))]
    concat_tool_results(chunks)
    assert chunks == [ToolResult(parts=(text("a", k=1),)), ToolResult(parts=(text("b", j=2),))]
    assert dict(first.extra) == {"k": 1}


# text_prefix (case 49) -----------------------------------------------------------------


def test_text_prefix_empty_inputs_and_zero_budget_give_none() -> None:
    assert text_prefix(None, 10) is None
    assert text_prefix(ToolResult(), 10) is None
    assert text_prefix(ToolResult.of_text("abc"), 0) is None


def test_text_prefix_cuts_the_first_text_part_that_does_not_fit() -> None:
    chunk = ToolResult(parts=(IMAGE, text("abc"), text("def")))
    assert text_prefix(chunk, 5) == ToolResult(parts=(IMAGE, text("abc"), text("de")))


def test_text_prefix_stops_at_an_exact_fit() -> None:
    assert text_prefix(ToolResult(parts=(text("abc"), text("def"))), 3) == ToolResult.of_text("abc")


def test_text_prefix_counts_characters() -> None:
    assert text_prefix(ToolResult.of_text("天气晴朗"), 3) == ToolResult.of_text("天气晴")


def test_text_prefix_zero_budget_keeps_leading_media() -> None:
    """With the strict trigger a stream can sit exactly at the limit; media before the cut pass."""
    assert text_prefix(ToolResult(parts=(IMAGE, text("a"), AUDIO)), 0) == ToolResult(parts=(IMAGE,))


def test_default_clear_handler_fails_on_unserialisable_parts_before_choosing_a_path() -> None:
    """The offload content is made first, so no path is promised to content never written."""
    paths = PathLog()
    odd = ToolOutputPart(type="tool_search_result", tool_search_result=object())
    with pytest.raises(TypeError, match="not JSON serializable"):
        default_clear_handler(paths, True, "read_file")(detail(text("x"), odd))
    assert paths.seen == []
