"""The deprecated entry points of docs/behaviour.md §6 (conformance cases 54 and 55)."""

from __future__ import annotations

import warnings

import pytest

from reduction_app.engine import (
    ClearToolResultConfig,
    InMemoryBackend,
    Message,
    ToolContext,
    ToolResultConfig,
    new_clear_tool_result,
    new_tool_result_middleware,
)
from reduction_app.engine._storage._paths import content_digest
from reduction_app.engine.errors import ConfigError, OffloadError, ReductionError
from reduction_app.engine.legacy import LEGACY_PLACEHOLDER, content_sample, legacy_token_count

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _clear(**kwargs: object):
    return new_clear_tool_result(ClearToolResultConfig(**kwargs))  # type: ignore[arg-type]


def test_new_clear_tool_result_warns_deprecation() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        new_clear_tool_result()
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "new_clear_tool_result is deprecated" in str(caught[0].message)


def test_new_tool_result_middleware_warns_deprecation() -> None:
    with pytest.warns(DeprecationWarning, match="new_tool_result_middleware is deprecated"):
        new_tool_result_middleware(ToolResultConfig(backend=InMemoryBackend()))


def test_legacy_token_count_rounds_up() -> None:
    assert legacy_token_count(Message.tool("a" * 40, "1")) == 10
    assert legacy_token_count(Message.tool("short tool result", "1")) == 5
    assert legacy_token_count(Message.user("")) == 0


def test_legacy_clear_clears_all_but_recent_budget() -> None:
    """Case 54a: threshold 20, keep 10: the first two results cleared, the third kept."""
    msgs = [
        Message.user("msg1"),
        Message.tool("a" * 40, "1"),
        Message.user("msg2"),
        Message.tool("b" * 40, "2"),
        Message.user("msg3"),
        Message.tool("c" * 40, "3"),
    ]
    out = _clear(tool_result_token_threshold=20, keep_recent_tokens=10).before_chat_model(msgs)
    assert [m.content for m in out] == [
        "msg1",
        LEGACY_PLACEHOLDER,
        "msg2",
        LEGACY_PLACEHOLDER,
        "msg3",
        "c" * 40,
    ]
    assert msgs[1].content == "a" * 40, "the caller's list is untouched"


def test_legacy_clear_protects_overflowing_boundary_message() -> None:
    """Case 54b: the message whose tokens overflow the keep budget is itself kept."""
    msgs = [
        Message.user("u"),
        Message.tool("x" * 100, "1"),
        Message.user("u"),
        Message.tool("x" * 100, "2"),
    ]
    out = _clear(tool_result_token_threshold=10, keep_recent_tokens=20).before_chat_model(msgs)
    assert [m.content for m in out] == ["u", LEGACY_PLACEHOLDER, "u", "x" * 100]


def test_legacy_clear_custom_placeholder_not_counted_or_changed() -> None:
    """Case 54c: results already holding the placeholder are neither counted nor changed."""
    placeholder = "[历史工具结果已清除]"
    msgs = [
        Message.tool(placeholder, "0"),
        Message.tool("x" * 100, "1"),
        Message.user("u"),
        Message.tool("y" * 100, "2"),
    ]
    hook = _clear(
        tool_result_token_threshold=30,
        keep_recent_tokens=20,
        clear_tool_result_placeholder=placeholder,
    )
    out = hook.before_chat_model(msgs)
    assert [m.content for m in out] == [placeholder, placeholder, "u", "y" * 100]
    assert out[0] is msgs[0]


def test_legacy_clear_below_threshold_or_empty_changes_nothing() -> None:
    """Case 54d/e: keep 1000 protects all; no tool messages, empty lists and the
    default config leave everything as it was."""
    msgs = [Message.user("u"), Message.tool("short tool result", "1")]
    assert _clear(tool_result_token_threshold=100).before_chat_model(msgs) == msgs
    big = [Message.tool("x" * 400, "1"), Message.tool("x" * 400, "2")]
    assert (
        _clear(tool_result_token_threshold=10, keep_recent_tokens=1000).before_chat_model(big)
        == big
    )
    assert _clear(tool_result_token_threshold=0).before_chat_model([Message.user("hi")]) == [
        Message.user("hi")
    ]
    assert new_clear_tool_result().before_chat_model([]) == []
    assert new_clear_tool_result(None).before_chat_model(msgs) == msgs


def test_legacy_clear_excludes_by_tool_message_name() -> None:
    msgs = [
        Message(role="tool", content="x" * 100, tool_call_id="1", tool_name="keep_me"),
        Message(role="tool", content="x" * 100, tool_call_id="2", tool_name="other"),
        Message.user("u" * 100),
    ]
    out = _clear(
        tool_result_token_threshold=10, keep_recent_tokens=20, exclude_tools=["keep_me"]
    ).before_chat_model(msgs)
    assert [m.content for m in out] == ["x" * 100, LEGACY_PLACEHOLDER, "u" * 100]


def test_content_sample_numbers_lines() -> None:
    """Case 55: samples of lines, of 12 lines, of a long ASCII and a long Chinese line."""
    assert content_sample("line1\nline2\nline3") == "1: line1\n2: line2\n3: line3\n"
    twelve = "\n".join(f"l{i}" for i in range(1, 13))
    assert content_sample(twelve) == "".join(f"{i}: l{i}\n" for i in range(1, 11))
    assert content_sample("a" * 1500) == "1: " + "a" * 1000 + "\n"
    assert content_sample("你" * 1500) == "1: " + "你" * 1000 + "\n"
    assert content_sample("a\r\nb\n") == "1: a\n2: b\n"
    assert content_sample("x" * (64 * 1024 + 1)) == ""


def _offloader(backend: InMemoryBackend, **kwargs: object):
    return new_tool_result_middleware(ToolResultConfig(backend=backend, **kwargs))  # type: ignore[arg-type]


def test_legacy_offload_small_result_unchanged() -> None:
    backend = InMemoryBackend()
    wrapped = _offloader(backend, offloading_token_limit=100).wrap_invokable_tool_call(
        lambda _: "This is a small result", ToolContext(name="t", call_id="call_1")
    )
    assert wrapped("{}") == "This is a small result"
    assert len(backend) == 0


def test_legacy_offload_large_result_saved_with_notice() -> None:
    """Case 55: 620 characters (155 tokens) over limit 10 (40 tokens)."""
    backend = InMemoryBackend()
    text = "0123456789" * 62
    wrapped = _offloader(backend, offloading_token_limit=10).wrap_invokable_tool_call(
        lambda _: text, ToolContext(name="t", call_id="call_456")
    )
    out = wrapped("{}")
    assert out.startswith(
        "Tool result too large, the result of this tool call call_456 was saved in the "
        "filesystem at this path: /large_tool_result/call_456\n"
    )
    assert out.endswith("Here are the first 10 lines of the result:\n1: " + text + "\n")
    assert backend.read("/large_tool_result/call_456") == text


def test_legacy_offload_default_limit_passes_1000_chars() -> None:
    backend = InMemoryBackend()
    wrapped = _offloader(backend).wrap_invokable_tool_call(
        lambda _: "x" * 1000, ToolContext(name="t", call_id="c")
    )
    assert wrapped("{}") == "x" * 1000
    assert len(backend) == 0


def test_legacy_offload_custom_path_and_chinese() -> None:
    backend = InMemoryBackend()
    mw = _offloader(
        backend,
        offloading_token_limit=1,
        path_generator=lambda ctx: f"/custom/{ctx.call_id}.txt",
        language="zh",
    )
    out = mw.wrap_invokable_tool_call(lambda _: "y" * 100, ToolContext(name="t", call_id="c9"))(
        "{}"
    )
    # The reference's Chinese notice, word for word.
    assert out == (
        "工具结果过大，此工具调用 c9 的结果已保存到文件系统的以下路径：/custom/c9.txt\n"
        "你可以使用 'read_file' 工具从文件系统读取结果，但请确保每次只读取部分结果。\n"
        "你可以通过在 'read_file' 工具调用中指定 offset 和 limit 来实现。\n"
        "例如，要读取前 100 行，你可以使用 'read_file' 工具，设置 offset=0 和 limit=100。\n"
        "\n"
        "以下是结果的前 10 行：\n"
        "1: " + "y" * 100 + "\n"
    )
    assert backend.read("/custom/c9.txt") == "y" * 100


def test_legacy_offload_stream_offloaded_whole() -> None:
    """Case 55: a 2400-character stream in two chunks is offloaded whole, as one chunk back."""
    backend = InMemoryBackend()
    wrapped = _offloader(backend, offloading_token_limit=10).wrap_streamable_tool_call(
        lambda _: iter(["a" * 1200, "b" * 1200]), ToolContext(name="t", call_id="s1")
    )
    chunks = list(wrapped("{}"))
    assert len(chunks) == 1
    assert "/large_tool_result/s1" in chunks[0]
    assert backend.read("/large_tool_result/s1") == "a" * 1200 + "b" * 1200


def test_legacy_offload_errors_are_passed_on() -> None:
    class FailingBackend(InMemoryBackend):
        def write(self, request):  # type: ignore[no-untyped-def]
            raise OSError("disk full")

    mw = _offloader(FailingBackend(), offloading_token_limit=1)
    ctx = ToolContext(name="t", call_id="c")
    with pytest.raises(OffloadError, match="disk full"):
        mw.wrap_invokable_tool_call(lambda _: "z" * 100, ctx)("{}")

    def failing_tool(_: str) -> str:
        raise RuntimeError("tool broke")

    with pytest.raises(RuntimeError, match="tool broke"):
        mw.wrap_invokable_tool_call(failing_tool, ctx)("{}")
    with pytest.raises(ReductionError, match="stream is nil"):
        mw.wrap_streamable_tool_call(lambda _: None, ctx)("{}")

    def bad_path(_: ToolContext) -> str:
        raise ValueError("no path")

    with pytest.raises(ValueError, match="no path"):
        _offloader(
            InMemoryBackend(), offloading_token_limit=1, path_generator=bad_path
        ).wrap_invokable_tool_call(lambda _: "z" * 100, ctx)("{}")


def test_legacy_offload_requires_backend() -> None:
    with pytest.raises(ConfigError, match="backend must be set"):
        new_tool_result_middleware(ToolResultConfig())


def test_legacy_offload_reused_id_gets_its_own_file() -> None:
    """Decision 7 holds for the shim too: a reused id never overwrites an earlier result."""
    backend = InMemoryBackend()
    mw = _offloader(backend, offloading_token_limit=1)
    ctx = ToolContext(name="t", call_id="call_1")
    first = mw.wrap_invokable_tool_call(lambda _: "FIRST " * 20, ctx)("{}")
    second = mw.wrap_invokable_tool_call(lambda _: "SECOND " * 20, ctx)("{}")
    again = mw.wrap_invokable_tool_call(lambda _: "FIRST " * 20, ctx)("{}")
    other = f"/large_tool_result/call_1-{content_digest('SECOND ' * 20)[:12]}"
    assert "/large_tool_result/call_1\n" in first and f"{other}\n" in second
    assert again == first
    assert backend.files == {"/large_tool_result/call_1": "FIRST " * 20, other: "SECOND " * 20}


def test_legacy_middleware_refuses_none() -> None:
    with pytest.raises(ConfigError, match=r"^config must not be None$"):
        new_tool_result_middleware(None)  # type: ignore[arg-type]


def test_legacy_clear_zero_and_empty_read_as_defaults() -> None:
    """As the reference: a threshold or budget of 0 and an empty placeholder are unset."""
    old = [Message.user("q"), Message.tool("a" * 40_000, "1"), Message.user("next")]
    # 10000 tokens of tool results: under the default threshold 20000, nothing changes.
    zeros = _clear(
        tool_result_token_threshold=0, keep_recent_tokens=0, clear_tool_result_placeholder=""
    )
    assert zeros.before_chat_model(old) == old
    # 100000 tokens: over the threshold. From the end, "end" is 1 token and the
    # 40000-token result takes the sum to 40001, over the default budget 40000: it is
    # protected, and the two results before it get the default placeholder.
    msgs = [
        Message.tool("a" * 120_000, "1"),
        Message.tool("b" * 120_000, "2"),
        Message.user("q2"),
        Message.tool("c" * 160_000, "3"),
        Message.user("end"),
    ]
    out = zeros.before_chat_model(msgs)
    assert [m.content for m in out] == [
        LEGACY_PLACEHOLDER,
        LEGACY_PLACEHOLDER,
        "q2",
        "c" * 160_000,
        "end",
    ]


def test_legacy_offload_zero_limit_and_empty_tool_name_read_as_defaults() -> None:
    """As the reference: offloading_token_limit 0 is 20000, an empty read tool is read_file."""
    backend = InMemoryBackend()
    mw = _offloader(backend, offloading_token_limit=0, read_file_tool_name="")
    ctx = ToolContext(name="t", call_id="c")
    # 320000 characters are 80000 tokens, not over 4 × 20000: kept.
    assert mw.wrap_invokable_tool_call(lambda _: "x" * 320_000, ctx)("{}") == "x" * 320_000
    assert len(backend) == 0
    out = mw.wrap_invokable_tool_call(lambda _: "x" * 320_001, ctx)("{}")
    assert "by using the 'read_file' tool" in out
    assert backend.read("/large_tool_result/c") == "x" * 320_001
