"""Tests for the truncation phase on buffered tools: construction, handler resolution
(docs/behaviour.md §2.3–§2.4 with decision 4) and the invokable wrappers (§3.2–§3.5, §8)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from reduction_app.engine import (
    InMemoryBackend,
    LocalFileBackend,
    WriteRequest,
    default_trunc_handler,
)
from reduction_app.engine._storage._paths import content_digest
from reduction_app.engine.config import ReductionConfig, ToolReductionConfig
from reduction_app.engine.errors import (
    ConfigError,
    NoBackendError,
    OffloadError,
    ReductionError,
)
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.messages import Media
from reduction_app.engine.middleware import new
from reduction_app.engine.notices import get_language, set_language
from reduction_app.engine.tool_io import (
    ToolArgument,
    ToolContext,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)

S = "hello world" * 10 + "\n" + "hello world" * 8
ARGS = '{"location": "London, UK", "unit": "c"}'


def trunc_notice(path: str, *, size: int = 199, read_tool: str = "read_file") -> str:
    """The case-1 notice for ``S`` with ``M=70`` (previews of 35 characters)."""
    return (
        f"<persisted-output>\nOutput too large ({size}). Full output saved to: {path}\n"
        "Preview (first 35):\nhello worldhello worldhello worldhe\n\n"
        "Preview (last 35):\nldhello worldhello worldhello world\n\n"
        f"Use {read_tool} to view\n</persisted-output>"
    )


def by_id(detail: ToolDetail) -> str:
    return f"/tmp/trunc/{detail.tool_context.call_id}"


class FailingBackend:
    """A backend whose writes always fail."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.attempts: list[str] = []

    def write(self, request: WriteRequest) -> None:
        self.attempts.append(request.file_path)
        raise OSError(self.message)

    def read(self, path: str) -> str:
        raise FileNotFoundError(path)


class ReplacingHandler:
    """A per-tool handler that truncates everything to ``truncated`` and records its calls."""

    def __init__(self, *, need_trunc: bool = True, need_offload: bool = True) -> None:
        self.need_trunc = need_trunc
        self.need_offload = need_offload
        self.seen: list[ToolDetail] = []

    def __call__(self, detail: ToolDetail) -> TruncResult:
        self.seen.append(detail)
        return TruncResult(
            need_trunc=self.need_trunc,
            tool_result=ToolResult.of_text("truncated"),
            stream_tool_result=iter([ToolResult.of_text("truncated")]),
            need_offload=self.need_offload,
            offload_file_path="/tmp/trunc/cid",
            offload_content="full content",
        )


def tool(output: str) -> object:
    return lambda arguments: output


@pytest.fixture
def default_language() -> Iterator[None]:
    """Restore the process-wide language after a test changes it."""
    before = get_language()
    yield
    set_language(before)


# Construction (§2.3) -------------------------------------------------------------------


def test_new_none_config_raises_config_error() -> None:
    """Case 42: New(nil)."""
    with pytest.raises(ConfigError) as info:
        new(None)
    assert str(info.value) == "config must not be None"
    assert info.value.field == "config"


def test_new_without_backend_raises_config_error() -> None:
    """Case 42: no backend and not skipping truncation."""
    with pytest.raises(ConfigError) as info:
        new(ReductionConfig())
    assert str(info.value) == "backend must be set when not skipping truncation"
    assert info.value.field == "backend"


def test_new_without_backend_is_allowed_when_skipping_truncation() -> None:
    mw = new(ReductionConfig(skip_truncation=True))
    assert mw.config.backend is None


class NoWrite:
    def __repr__(self) -> str:
        return "NoWrite()"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"backend": NoWrite()}, "backend must have a write(request) method, got NoWrite()"),
        ({"skip_truncation": "yes"}, "skip_truncation must be true or false, got 'yes'"),
        ({"max_length_for_trunc": -1}, "max_length_for_trunc must be at least 0, got -1"),
        ({"max_length_for_trunc": True}, "max_length_for_trunc must be an integer, got True"),
        ({"max_length_for_trunc": 7.5}, "max_length_for_trunc must be an integer, got 7.5"),
        (
            {"read_file_tool_name": "cat file"},
            "read_file_tool_name must be a non-empty string without whitespace, got 'cat file'",
        ),
        ({"root_dir": ""}, "root_dir must be a non-empty string without whitespace, got ''"),
        (
            {"trunc_exclude_tools": "grep"},
            "trunc_exclude_tools must be a list of tool names, got 'grep'",
        ),
        (
            {"trunc_exclude_tools": ["grep", ""]},
            "trunc_exclude_tools must hold non-empty tool names, got ''",
        ),
        (
            {"gen_trunc_offload_file_path": "/tmp/x"},
            "gen_trunc_offload_file_path must be callable or None, got '/tmp/x'",
        ),
        ({"on_event": 3}, "on_event must be callable or None, got 3"),
        ({"language": "fr"}, "language must be one of ['en', 'zh'] or None, got 'fr'"),
        (
            {"tool_config": {"grep": {"skip_truncation": True}}},
            "tool_config['grep'] must be a ToolReductionConfig, got {'skip_truncation': True}",
        ),
        (
            {"tool_config": {"grep": ToolReductionConfig(trunc_handler="h")}},  # type: ignore[arg-type]
            "tool_config['grep'].trunc_handler must be callable or None, got 'h'",
        ),
        (
            {"tool_config": {"grep": ToolReductionConfig(skip_truncation=1)}},  # type: ignore[arg-type]
            "tool_config['grep'].skip_truncation must be true or false, got 1",
        ),
        (
            {"tool_config": {"grep": ToolReductionConfig(reads_files="yes")}},  # type: ignore[arg-type]
            "tool_config['grep'].reads_files must be true or false, got 'yes'",
        ),
        (
            {"tool_config": {"grep": ToolReductionConfig(edits_files=0)}},  # type: ignore[arg-type]
            "tool_config['grep'].edits_files must be true or false, got 0",
        ),
        (
            {"tool_config": {"grep": ToolReductionConfig(backend=NoWrite())}},  # type: ignore[arg-type]
            "tool_config['grep'].backend must have a write(request) method, got NoWrite()",
        ),
    ],
)
def test_new_bad_field_raises_config_error_naming_it(
    changes: dict[str, object], message: str
) -> None:
    config = dataclasses.replace(ReductionConfig(backend=InMemoryBackend()), **changes)
    with pytest.raises(ConfigError) as info:
        new(config)
    assert str(info.value) == message
    assert message.startswith(info.value.field)


def test_new_fills_zero_with_defaults_without_touching_the_caller_config() -> None:
    """Case 41: zero means the default; the caller's config keeps its zero."""
    config = ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=0)
    mw = new(config)
    assert mw.config.max_length_for_trunc == 50000
    assert (mw.config.root_dir, mw.config.read_file_tool_name) == ("/tmp", "read_file")
    assert config.max_length_for_trunc == 0


def test_new_copies_tool_config() -> None:
    """A tool_config entry added after construction does not change the middleware."""
    tool_config: dict[str, ToolReductionConfig] = {}
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10, tool_config=tool_config))
    tool_config["grep"] = ToolReductionConfig(skip_truncation=True)
    wrapped = mw.wrap_invokable_tool_call(tool("y" * 20), ToolContext(name="grep", call_id="c1"))
    assert wrapped("{}").startswith("<persisted-output>")
    assert "/tmp/trunc/c1" in backend


# Handler resolution (§2.4, decision 4) -------------------------------------------------


def test_resolution_tool_without_entry_gets_default_handler() -> None:
    """Case 43: an unknown tool gets the default config."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="any", call_id="12345"))
    assert wrapped(ARGS) == trunc_notice("/tmp/trunc/12345")
    assert backend.files == {"/tmp/trunc/12345": S}


def test_resolution_entry_skipping_truncation_returns_endpoint_itself() -> None:
    """Case 43: an entry {skip_truncation} is used as it is: no handler, pass through."""
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(),
            max_length_for_trunc=10,
            tool_config={"grep": ToolReductionConfig(skip_truncation=True, skip_clear=True)},
        )
    )
    endpoint = tool("y" * 20)
    assert mw.wrap_invokable_tool_call(endpoint, ToolContext(name="grep")) is endpoint  # type: ignore[arg-type]


def test_resolution_entry_without_handler_falls_back_to_default_and_global_backend() -> None:
    """Case 43 / decision 4: {skip_truncation: False} only gets the default handler."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend,
            max_length_for_trunc=70,
            tool_config={"grep": ToolReductionConfig(skip_truncation=False)},
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="grep", call_id="g1"))
    assert wrapped(ARGS) == trunc_notice("/tmp/trunc/g1")
    assert backend.files == {"/tmp/trunc/g1": S}


def test_resolution_entry_backend_is_used_by_the_default_handler() -> None:
    """Decision 4: a per-tool backend without a handler still receives the offload."""
    global_backend, grep_backend = InMemoryBackend(), InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=global_backend,
            max_length_for_trunc=70,
            tool_config={"grep": ToolReductionConfig(backend=grep_backend)},
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="grep", call_id="g1"))
    other = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="ls", call_id="l1"))
    assert wrapped(ARGS) == trunc_notice("/tmp/trunc/g1")
    assert other(ARGS) == trunc_notice("/tmp/trunc/l1")
    assert grep_backend.files == {"/tmp/trunc/g1": S}
    assert global_backend.files == {"/tmp/trunc/l1": S}


def test_resolution_entry_handler_runs_even_when_entry_skips_truncation() -> None:
    """§2.4: skip_truncation matters only when the entry has no handler."""
    handler = ReplacingHandler()
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend,
            tool_config={"t": ToolReductionConfig(skip_truncation=True, trunc_handler=handler)},
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t", call_id="cid"))
    assert wrapped(ARGS) == "truncated"
    assert len(handler.seen) == 1


def test_resolution_entry_handler_without_backend_inherits_the_global_backend() -> None:
    """Case 20 read through decision 4: no NoBackendError when the global backend is set."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend,
            tool_config={"t": ToolReductionConfig(trunc_handler=ReplacingHandler())},
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t", call_id="cid"))
    assert wrapped(ARGS) == "truncated"
    assert backend.files == {"/tmp/trunc/cid": "full content"}


def test_resolution_global_skip_truncation_leaves_entries_without_handler_untouched() -> None:
    """§2.4: the entry falls back to the default config, which has no trunc handler."""
    mw = new(
        ReductionConfig(
            skip_truncation=True,
            max_length_for_trunc=10,
            tool_config={"grep": ToolReductionConfig(backend=InMemoryBackend())},
        )
    )
    endpoint = tool("y" * 20)
    assert mw.wrap_invokable_tool_call(endpoint, ToolContext(name="grep")) is endpoint  # type: ignore[arg-type]
    assert mw.wrap_invokable_tool_call(endpoint, ToolContext(name="ls")) is endpoint  # type: ignore[arg-type]


def test_resolution_offload_without_any_backend_raises_no_backend_error() -> None:
    """Case 20 / §3.8: neither the entry nor the config has a backend."""
    mw = new(
        ReductionConfig(
            skip_truncation=True,
            tool_config={"t": ToolReductionConfig(trunc_handler=ReplacingHandler())},
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t", call_id="cid"))
    with pytest.raises(NoBackendError) as info:
        wrapped(ARGS)
    assert str(info.value) == "truncation: no backend for offload"


def test_resolution_exclusion_beats_a_per_tool_handler() -> None:
    """Case 18: an excluded tool's handler is never called and its output passes."""
    handler = ReplacingHandler()
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(),
            trunc_exclude_tools=["t"],
            tool_config={"t": ToolReductionConfig(trunc_handler=handler)},
        )
    )
    endpoint = lambda argument: ToolResult.of_text("orig")  # noqa: E731
    wrapped = mw.wrap_enhanced_invokable_tool_call(endpoint, ToolContext(name="t"))
    assert wrapped is endpoint
    assert wrapped(ToolArgument(text=ARGS)) == ToolResult.of_text("orig")
    assert handler.seen == []


# The invokable wrapper (§3.2, §3.5) ----------------------------------------------------


def test_invokable_truncates_with_per_tool_default_handler() -> None:
    """Case 1: exact notice, and the file holds the whole output."""
    backend = InMemoryBackend()
    handler = default_trunc_handler(by_id, 70, "read_file")
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(),
            tool_config={"t": ToolReductionConfig(backend=backend, trunc_handler=handler)},
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="12345"))
    assert wrapped(ARGS) == trunc_notice("/tmp/trunc/12345")
    assert backend.files == {"/tmp/trunc/12345": S}


def test_invokable_notice_names_the_configured_read_tool() -> None:
    """Case 2."""
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), max_length_for_trunc=70, read_file_tool_name="cat_file"
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="12345"))
    assert wrapped(ARGS) == trunc_notice("/tmp/trunc/12345", read_tool="cat_file")


def test_invokable_output_of_exactly_the_limit_passes_untouched() -> None:
    """Decision 2: the trigger is strictly greater than."""
    backend, events = InMemoryBackend(), []
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=199, on_event=events.append))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="c1"))
    assert wrapped(ARGS) == S
    assert (backend.files, events) == ({}, [])


def test_invokable_output_one_over_the_limit_is_truncated() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=198))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="c1"))
    assert wrapped(ARGS) == (
        "<persisted-output>\nOutput too large (199). Full output saved to: /tmp/trunc/c1\n"
        f"Preview (first 99):\n{S[:99]}\n\nPreview (last 99):\n{S[-99:]}\n\n"
        "Use read_file to view\n</persisted-output>"
    )
    assert backend.files == {"/tmp/trunc/c1": S}


def test_invokable_counts_characters_and_never_splits_them() -> None:
    """Decision 1: Chinese text is measured and previewed in characters."""
    text = "你好世界，" * 4  # 20 characters, 60 UTF-8 bytes
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=20))
    wrapped = mw.wrap_invokable_tool_call(tool(text), ToolContext(name="t", call_id="zh"))
    assert wrapped(ARGS) == text
    longer = mw.wrap_invokable_tool_call(tool(text + "完"), ToolContext(name="t", call_id="zh"))
    assert longer(ARGS) == (
        "<persisted-output>\nOutput too large (21). Full output saved to: /tmp/trunc/zh\n"
        "Preview (first 10):\n你好世界，你好世界，\n\nPreview (last 10):\n好世界，你好世界，完\n\n"
        "Use read_file to view\n</persisted-output>"
    )
    assert backend.files == {"/tmp/trunc/zh": text + "完"}


def test_invokable_notice_in_chinese_from_config_language() -> None:
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=70, language="zh"))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="12345"))
    assert wrapped(ARGS) == (
        "<persisted-output>\n输出结果过大 (199). 完整输出保存到: /tmp/trunc/12345\n"
        "预览 (前 35):\nhello worldhello worldhello worldhe\n\n"
        "预览 (后 35):\nldhello worldhello worldhello world\n\n"
        "使用 read_file 进行查看\n</persisted-output>"
    )


def test_invokable_notice_language_is_read_when_formatting(default_language: None) -> None:
    """Decision 10 / §1.4: set_language after construction still applies."""
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=70))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="12345"))
    set_language("zh")
    assert wrapped(ARGS).startswith("<persisted-output>\n输出结果过大 (199). 完整输出保存到: ")
    set_language("en")
    assert wrapped(ARGS) == trunc_notice("/tmp/trunc/12345")


def test_invokable_config_language_overrides_set_language(default_language: None) -> None:
    set_language("zh")
    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=70, language="en"))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="12345"))
    assert wrapped(ARGS) == trunc_notice("/tmp/trunc/12345")


def test_invokable_endpoint_error_passes_through_without_calling_the_handler() -> None:
    """Case 19 / §3.1."""
    handler = ReplacingHandler()
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )

    def broken(arguments: str) -> str:
        raise LookupError("endpoint failed")

    wrapped = mw.wrap_invokable_tool_call(broken, ToolContext(name="t"))
    with pytest.raises(LookupError, match=r"^endpoint failed$"):
        wrapped(ARGS)
    assert handler.seen == []


def test_invokable_handler_error_passes_through() -> None:
    """Case 19."""

    def handler(detail: ToolDetail) -> TruncResult:
        raise ValueError("handler failed")

    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t"))
    with pytest.raises(ValueError, match=r"^handler failed$"):
        wrapped(ARGS)


def test_invokable_handler_sees_the_arguments_and_output() -> None:
    """Case 19: need_trunc=false returns the original; the handler saw "orig"."""
    handler, backend = ReplacingHandler(need_trunc=False), InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend, tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t", call_id="c1"))
    assert wrapped(ARGS) == "orig"
    assert handler.seen == [
        ToolDetail(
            tool_context=ToolContext(name="t", call_id="c1"),
            tool_argument=ToolArgument(text=ARGS),
            tool_result=ToolResult.of_text("orig"),
        )
    ]
    assert backend.files == {}


def test_invokable_returns_only_the_first_part_text() -> None:
    """§3.5 step 4: further parts of the handler's result are dropped."""

    def handler(detail: ToolDetail) -> TruncResult:
        parts = (ToolOutputPart.of_text("first"), ToolOutputPart.of_text("second"))
        return TruncResult(need_trunc=True, tool_result=ToolResult(parts=parts))

    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    assert mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t"))(ARGS) == "first"


def test_invokable_event_measures_only_the_text_returned() -> None:
    """The string wrapper returns ``parts[0].text``; its event counts just that."""

    def handler(detail: ToolDetail) -> TruncResult:
        parts = (ToolOutputPart.of_text("first"), ToolOutputPart.of_text("second"))
        return TruncResult(need_trunc=True, tool_result=ToolResult(parts=parts))

    events: list[ReductionEvent] = []
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(),
            on_event=events.append,
            tool_config={"t": ToolReductionConfig(trunc_handler=handler)},
        )
    )
    mw.wrap_invokable_tool_call(tool("original output"), ToolContext(name="t", call_id="c"))(ARGS)
    assert events == [
        ReductionEvent(
            phase="truncation",
            kind="tool",
            tool_name="t",
            call_id="c",
            chars_before=15,
            chars_after=5,
            tokens_before=3,
            tokens_after=1,
            tokens_saved=2,
        )
    ]


def test_invokable_without_offload_writes_nothing() -> None:
    handler, backend = ReplacingHandler(need_offload=False), InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend, tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    assert mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t"))(ARGS) == "truncated"
    assert backend.files == {}


def test_invokable_handler_answer_without_result_raises() -> None:
    def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult(need_trunc=True)

    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    with pytest.raises(ReductionError) as info:
        mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t"))(ARGS)
    assert str(info.value) == "trunc_handler for tool 't' set need_trunc without tool_result"


def test_invokable_handler_answer_of_the_wrong_type_raises() -> None:
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(),
            tool_config={"t": ToolReductionConfig(trunc_handler=lambda d: "short")},
        )
    )
    with pytest.raises(ReductionError) as info:
        mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t"))(ARGS)
    assert str(info.value) == "trunc_handler for tool 't' returned 'short', not a TruncResult"


def test_invokable_offload_failure_raises_and_keeps_nothing() -> None:
    """§3.8 / decision 6: the call fails with OffloadError; no notice, no event."""
    backend, events = FailingBackend("disk full"), []
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70, on_event=events.append))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="c1"))
    with pytest.raises(OffloadError) as info:
        wrapped(ARGS)
    assert str(info.value) == "truncation: failed to write /tmp/trunc/c1: disk full"
    assert isinstance(info.value.cause, OSError)
    assert (info.value.phase, info.value.path) == ("truncation", "/tmp/trunc/c1")
    assert backend.attempts == ["/tmp/trunc/c1"]
    assert events == []


def test_invokable_custom_path_generator_replaces_root_dir() -> None:
    """Case 17."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend,
            max_length_for_trunc=70,
            root_dir="/tmp/ignored",
            gen_trunc_offload_file_path=lambda d: f"/custom/trunc/{d.tool_context.call_id}",
        )
    )
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="custom_123"))
    assert wrapped(ARGS) == trunc_notice("/custom/trunc/custom_123")
    assert backend.files == {"/custom/trunc/custom_123": S}


def test_invokable_root_dir_is_a_cleaned_join() -> None:
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70, root_dir="/data//offload/"))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="c1"))
    assert wrapped(ARGS) == trunc_notice("/data/offload/trunc/c1")


def test_invokable_excluded_tools_pass_and_others_truncate() -> None:
    """Case 16 (invokable and mixed)."""
    backend = InMemoryBackend()
    mw = new(
        ReductionConfig(
            backend=backend, max_length_for_trunc=70, trunc_exclude_tools=["important_tool"]
        )
    )
    endpoint = tool(S)
    excluded = mw.wrap_invokable_tool_call(
        endpoint, ToolContext(name="important_tool", call_id="12345")
    )  # type: ignore[arg-type]
    normal = mw.wrap_invokable_tool_call(
        endpoint, ToolContext(name="normal_tool", call_id="normal_456")
    )  # type: ignore[arg-type]
    assert excluded is endpoint
    assert excluded(ARGS) == S
    assert normal(ARGS) == trunc_notice("/tmp/trunc/normal_456")
    assert backend.files == {"/tmp/trunc/normal_456": S}


def test_invokable_emits_event_with_exact_figures_after_the_write() -> None:
    backend = InMemoryBackend()
    seen: list[tuple[ReductionEvent, dict[str, str]]] = []
    mw = new(
        ReductionConfig(
            backend=backend,
            max_length_for_trunc=70,
            on_event=lambda e: seen.append((e, backend.files)),
        )
    )
    mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="12345"))(ARGS)
    # The notice has 236 characters: 236 // 4 = 59 tokens; S has 199: 49 tokens.
    assert seen == [
        (
            ReductionEvent(
                phase="truncation",
                kind="tool",
                tool_name="t",
                call_id="12345",
                chars_before=199,
                chars_after=236,
                tokens_before=49,
                tokens_after=59,
                tokens_saved=-10,
                offload_path="/tmp/trunc/12345",
            ),
            {"/tmp/trunc/12345": S},
        )
    ]


def test_invokable_event_handler_error_propagates() -> None:
    def on_event(event: ReductionEvent) -> None:
        raise RuntimeError("event sink down")

    mw = new(ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=70, on_event=on_event))
    with pytest.raises(RuntimeError, match=r"^event sink down$"):
        mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="c1"))(ARGS)


def test_invokable_sync_wrapper_refuses_an_async_handler() -> None:
    async def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult()

    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    # Refused when wrapping, before the tool runs, so nothing it returns is lost.
    with pytest.raises(TypeError) as info:
        mw.wrap_invokable_tool_call(tool("orig"), ToolContext(name="t"))
    assert str(info.value) == (
        "tool 't' has an async handler or backend; wrap it with awrap_invokable_tool_call"
    )


def test_invokable_sync_wrapper_refuses_an_async_backend() -> None:
    class AsyncBackend:
        async def write(self, request: WriteRequest) -> None:
            return None

        async def read(self, path: str) -> str:
            raise FileNotFoundError(path)

    mw = new(ReductionConfig(backend=AsyncBackend(), max_length_for_trunc=70))
    with pytest.raises(
        TypeError,
        match=r"^tool 't' has an async handler or backend; wrap it with awrap_invokable_tool_call$",
    ):
        mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id="c1"))


def test_invokable_sync_wrapper_refuses_a_coroutine_endpoint() -> None:
    async def endpoint(arguments: str) -> str:
        return "orig"

    mw = new(ReductionConfig(backend=InMemoryBackend()))
    wrapped = mw.wrap_invokable_tool_call(endpoint, ToolContext(name="t"))  # type: ignore[arg-type]
    with pytest.raises(TypeError) as info:
        wrapped(ARGS)
    assert str(info.value) == (
        "tool 't' returned an awaitable; wrap async tools with awrap_invokable_tool_call"
    )


# Offload paths (decision 7) ------------------------------------------------------------


@pytest.mark.parametrize(
    "call_id", ["a/b", "../../etc/passwd", "/etc/passwd", "a\x00b", "call 1\n", "..", "."]
)
def test_invokable_unsafe_call_ids_stay_under_root_dir(call_id: str, tmp_path: Path) -> None:
    backend = LocalFileBackend(tmp_path)
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70, root_dir="/offload"))
    mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id=call_id))(ARGS)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1
    assert files[0].parent == tmp_path / "offload" / "trunc"
    assert files[0].read_text(encoding="utf-8") == S
    assert re.fullmatch(r"[A-Za-z0-9._-]+", files[0].name)
    assert not files[0].name.startswith(".")


def test_invokable_empty_call_id_gets_a_fresh_path_each_time() -> None:
    """Case 41 / decision 7."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=70))
    wrapped = mw.wrap_invokable_tool_call(tool(S), ToolContext(name="t", call_id=""))
    wrapped(ARGS)
    wrapped(ARGS)
    paths = sorted(backend.files)
    assert len(paths) == 2
    for path in paths:
        assert re.fullmatch(r"/tmp/trunc/[0-9a-f]{32}", path)


def test_invokable_reused_call_id_with_different_content_gets_a_new_path() -> None:
    """Decision 7: other content takes a path named by its digest; identical content
    reuses its path."""
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=10))
    ctx = ToolContext(name="t", call_id="call_1")
    outputs = ["a" * 20, "b" * 20, "a" * 20, "c" * 20]
    notices = [mw.wrap_invokable_tool_call(tool(o), ctx)(ARGS) for o in outputs]
    paths = [re.search(r"saved to: (\S+)", n).group(1) for n in notices]  # type: ignore[union-attr]
    b, c = (f"/tmp/trunc/call_1-{content_digest(x * 20)[:12]}" for x in "bc")
    assert paths == ["/tmp/trunc/call_1", b, "/tmp/trunc/call_1", c]
    assert backend.files == {"/tmp/trunc/call_1": "a" * 20, b: "b" * 20, c: "c" * 20}


def test_invokable_reused_call_id_is_checked_against_a_reopened_folder(tmp_path: Path) -> None:
    """Decision 7 across processes: the uniqueness check reads the backend."""
    ctx = ToolContext(name="t", call_id="call_1")
    first = new(ReductionConfig(backend=LocalFileBackend(tmp_path), max_length_for_trunc=10))
    assert "/tmp/trunc/call_1\n" in first.wrap_invokable_tool_call(tool("a" * 20), ctx)(ARGS)
    again = new(ReductionConfig(backend=LocalFileBackend(tmp_path), max_length_for_trunc=10))
    assert "/tmp/trunc/call_1\n" in again.wrap_invokable_tool_call(tool("a" * 20), ctx)(ARGS)
    b = f"tmp/trunc/call_1-{content_digest('b' * 20)[:12]}"
    assert f"/{b}\n" in again.wrap_invokable_tool_call(tool("b" * 20), ctx)(ARGS)
    assert (tmp_path / "tmp/trunc/call_1").read_text(encoding="utf-8") == "a" * 20
    assert (tmp_path / b).read_text(encoding="utf-8") == "b" * 20


# The enhanced invokable wrapper ---------------------------------------------------------


def test_enhanced_invokable_skip_truncation_passes_the_same_objects() -> None:
    """Case 18: the endpoint is called once with the caller's argument object."""
    calls: list[ToolArgument] = []
    result = ToolResult.of_text("ok")

    def endpoint(argument: ToolArgument) -> ToolResult:
        calls.append(argument)
        return result

    mw = new(ReductionConfig(skip_truncation=True))
    argument = ToolArgument(text=ARGS)
    assert mw.wrap_enhanced_invokable_tool_call(endpoint, ToolContext(name="t"))(argument) is result
    assert len(calls) == 1
    assert calls[0] is argument


def test_enhanced_invokable_truncates_large_text_parts_and_keeps_media() -> None:
    """§3.2 step 6: parts of at least M // n characters become notices; others stay."""
    image = ToolOutputPart(
        type="image", media=Media(url="https://x/cat.png", mime_type="image/png")
    )
    parts = (ToolOutputPart.of_text("a" * 40), image, ToolOutputPart.of_text("short"))
    original = ToolResult(parts=parts)
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=40))
    wrapped = mw.wrap_enhanced_invokable_tool_call(
        lambda a: original, ToolContext(name="t", call_id="m1")
    )
    out = wrapped(ToolArgument(text=ARGS))
    # Two text parts: part_limit 20, previews of 10 characters.
    assert out == ToolResult(
        parts=(
            ToolOutputPart.of_text(
                "<persisted-output>\nOutput too large (40). Full output saved to: /tmp/trunc/m1\n"
                "Preview (first 10):\naaaaaaaaaa\n\nPreview (last 10):\naaaaaaaaaa\n\n"
                "Use read_file to view\n</persisted-output>"
            ),
            image,
            ToolOutputPart.of_text("short"),
        )
    )
    assert backend.files == {
        "/tmp/trunc/m1": (
            "[\n"
            '  {\n    "type": "text",\n    "text": "' + "a" * 40 + '"\n  },\n'
            '  {\n    "type": "image",\n    "image": {\n'
            '      "url": "https://x/cat.png",\n      "mime_type": "image/png"\n    }\n  },\n'
            '  {\n    "type": "text",\n    "text": "short"\n  }\n'
            "]"
        )
    }
    assert original == ToolResult(parts=parts)


def test_enhanced_invokable_offloads_non_ascii_json_unescaped() -> None:
    """Decision 9: json.dumps(parts, ensure_ascii=False, indent=2), no HTML escaping."""
    parts = (ToolOutputPart.of_text("<b>天气</b> & "), ToolOutputPart.of_text("晴" * 10))
    backend = InMemoryBackend()
    mw = new(ReductionConfig(backend=backend, max_length_for_trunc=20))
    mw.wrap_enhanced_invokable_tool_call(
        lambda a: ToolResult(parts=parts), ToolContext(name="t", call_id="j")
    )(ToolArgument())
    assert backend.files == {
        "/tmp/trunc/j": (
            '[\n  {\n    "type": "text",\n    "text": "<b>天气</b> & "\n  },\n'
            '  {\n    "type": "text",\n    "text": "晴晴晴晴晴晴晴晴晴晴"\n  }\n]'
        )
    }


def test_enhanced_invokable_returns_the_handlers_whole_result() -> None:
    """§3.5: the enhanced wrapper returns every part of the handler's result."""
    replacement = ToolResult(
        parts=(ToolOutputPart.of_text("first"), ToolOutputPart.of_text("second"))
    )

    def handler(detail: ToolDetail) -> TruncResult:
        return TruncResult(need_trunc=True, tool_result=replacement)

    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    wrapped = mw.wrap_enhanced_invokable_tool_call(
        lambda a: ToolResult.of_text("orig"), ToolContext(name="t")
    )
    assert wrapped(ToolArgument(text=ARGS)) is replacement


def test_enhanced_invokable_no_trunc_returns_the_original_object() -> None:
    """Case 19."""
    handler = ReplacingHandler(need_trunc=False)
    result = ToolResult.of_text("orig")
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(), tool_config={"t": ToolReductionConfig(trunc_handler=handler)}
        )
    )
    assert (
        mw.wrap_enhanced_invokable_tool_call(lambda a: result, ToolContext(name="t"))(
            ToolArgument()
        )
        is result
    )
    assert handler.seen[0].tool_result is result


def test_enhanced_invokable_offload_failure_raises() -> None:
    mw = new(ReductionConfig(backend=FailingBackend("quota"), max_length_for_trunc=10))
    wrapped = mw.wrap_enhanced_invokable_tool_call(
        lambda a: ToolResult.of_text("x" * 11), ToolContext(name="t", call_id="e1")
    )
    with pytest.raises(OffloadError, match=r"^truncation: failed to write /tmp/trunc/e1: quota$"):
        wrapped(ToolArgument())


def test_enhanced_invokable_event_counts_text_parts_only() -> None:
    image = ToolOutputPart(type="image", media=Media(url="https://x/y.png"))
    events: list[ReductionEvent] = []
    mw = new(
        ReductionConfig(backend=InMemoryBackend(), max_length_for_trunc=10, on_event=events.append)
    )
    mw.wrap_enhanced_invokable_tool_call(
        lambda a: ToolResult(parts=(image, ToolOutputPart.of_text("x" * 40))),
        ToolContext(name="t", call_id="e"),
    )(ToolArgument())
    # The notice for 40 characters with 5-character previews has 169 characters.
    assert events == [
        ReductionEvent(
            phase="truncation",
            kind="tool",
            tool_name="t",
            call_id="e",
            chars_before=40,
            chars_after=169,
            tokens_before=10,
            tokens_after=42,
            tokens_saved=-32,
            offload_path="/tmp/trunc/e",
        )
    ]
