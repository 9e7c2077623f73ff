"""Limits per tool and per shell command kind (docs/behaviour.md §3.11): which limit a
call gets, and that it plays every role of ``max_length_for_trunc`` for that call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from reduction_app.engine import (
    ConfigError,
    InMemoryBackend,
    ReductionConfig,
    ToolReductionConfig,
    TruncResult,
    config_from_dict,
    config_to_dict,
    new,
)
from reduction_app.engine._handlers._limits import TruncLimits
from reduction_app.engine.middleware import ReductionMiddleware
from reduction_app.engine.tool_io import ToolArgument, ToolContext, ToolOutputPart, ToolResult

DIGITS = "0123456789" * 10  # 100 characters


def notice(path: str, *, size: int, preview: int, text: str = DIGITS) -> str:
    return (
        f"<persisted-output>\nOutput too large ({size}). Full output saved to: {path}\n"
        f"Preview (first {preview}):\n{text[:preview]}\n\n"
        f"Preview (last {preview}):\n{text[len(text) - preview :]}\n\n"
        "Use read_file to view\n</persisted-output>"
    )


def bash(command: str) -> str:
    return json.dumps({"command": command})


def middleware(backend: InMemoryBackend | None = None, **fields: Any) -> ReductionMiddleware:
    backend = InMemoryBackend() if backend is None else backend
    return new(ReductionConfig(backend=backend, max_length_for_trunc=120, **fields))


def call(mw: ReductionMiddleware, tool: str, arguments: str, output: str = DIGITS) -> str:
    wrapped = mw.wrap_invokable_tool_call(lambda _: output, ToolContext(name=tool, call_id="c1"))
    result: str = wrapped(arguments)
    return result


def test_trunc_limits_precedence() -> None:
    limits = TruncLimits(
        default=80, by_tool={"Bash": 60, "Read": 40}, by_command_kind={"running": 20}
    )
    assert limits.limit("Bash", bash("pytest -x")) == 20  # the kind's limit first
    assert limits.limit("Bash", bash("cat a.py")) == 60  # no limit for reading: the tool's
    assert limits.limit("Bash", "{}") == 60  # no command: the tool's
    assert limits.limit("Read", '{"file_path": "a.py"}') == 40
    assert limits.limit("exec", json.dumps({"cmd": "make test"})) == 20  # any shell tool
    assert limits.limit("exec", bash("# nothing")) == 80  # no kind: max_length_for_trunc
    assert limits.limit("Grep", "not json") == 80


def test_no_limits_keep_the_reference_behaviour() -> None:
    mw = middleware()
    assert call(mw, "Read", "{}") == DIGITS
    assert call(mw, "Bash", bash("pytest"), DIGITS * 2) == notice(
        "/tmp/trunc/c1", size=200, preview=60, text=DIGITS * 2
    )


def test_tool_limit_truncates_that_tool_only() -> None:
    backend = InMemoryBackend()
    mw = middleware(backend, trunc_tool_limits={"Read": 50})
    # 100 > 50: the previews are half the tool's limit, 25 characters.
    assert call(mw, "Read", "{}") == notice("/tmp/trunc/c1", size=100, preview=25)
    assert backend.read("/tmp/trunc/c1") == DIGITS
    assert call(mw, "Grep", "{}") == DIGITS


def test_tool_limit_above_the_default_keeps_longer_outputs() -> None:
    mw = middleware(trunc_tool_limits={"Read": 150})
    assert call(mw, "Read", "{}") == DIGITS
    assert call(mw, "Read", "{}", DIGITS * 2) == notice(
        "/tmp/trunc/c1", size=200, preview=75, text=DIGITS * 2
    )


def test_command_limit_by_kind_then_tool_then_default() -> None:
    mw = middleware(trunc_tool_limits={"Bash": 90}, trunc_command_limits={"running": 30})
    assert call(mw, "Bash", bash("cd proj && pytest -q")) == notice(
        "/tmp/trunc/c1", size=100, preview=15
    )
    assert call(mw, "Bash", bash("sed -n '1,9p' a.py")) == notice(
        "/tmp/trunc/c1", size=100, preview=45
    )
    assert call(mw, "Bash", bash("sed -n '1,9p' a.py"), DIGITS[:90]) == DIGITS[:90]
    # Any tool whose arguments hold a command is a shell tool; without one, the default.
    assert call(mw, "Run", bash("pytest")) == notice("/tmp/trunc/c1", size=100, preview=15)
    assert call(mw, "Run", "{}") == DIGITS


def test_own_handler_skip_and_exclusion_win_over_limits() -> None:
    def keep(_: Any) -> TruncResult:
        return TruncResult(need_trunc=False)

    mw = middleware(
        trunc_tool_limits={"A": 10, "B": 10, "C": 10, "D": 10},
        trunc_command_limits={"running": 10},
        trunc_exclude_tools=("C",),
        tool_config={
            "A": ToolReductionConfig(trunc_handler=keep),
            "B": ToolReductionConfig(skip_truncation=True),
            "D": ToolReductionConfig(backend=InMemoryBackend()),
        },
    )
    for tool in ("A", "B", "C"):
        assert call(mw, tool, bash("pytest")) == DIGITS, tool
    # An entry with only a backend keeps the default handler, and with it the limits.
    assert call(mw, "D", bash("pytest")) == notice("/tmp/trunc/c1", size=100, preview=5)


def test_enhanced_result_parts_share_the_call_limit() -> None:
    mw = middleware(trunc_command_limits={"searching": 60})
    wrapped = mw.wrap_enhanced_invokable_tool_call(
        lambda _: ToolResult(
            parts=(ToolOutputPart.of_text(DIGITS[:40]), ToolOutputPart.of_text(DIGITS[:30]))
        ),
        ToolContext(name="execute_bash", call_id="c1"),
    )
    # 70 > 60 with two text parts: part_limit 30, previews of 15, both parts cut.
    out = wrapped(ToolArgument(text=bash("grep -rn foo .")))
    assert [p.text for p in out.parts] == [
        notice("/tmp/trunc/c1", size=40, preview=15, text=DIGITS[:40]),
        notice("/tmp/trunc/c1", size=30, preview=15, text=DIGITS[:30]),
    ]
    # Under the default limit (120) the same output passes for another kind.
    same = wrapped(ToolArgument(text=bash("cat a.py")))
    assert [p.text for p in same.parts] == [DIGITS[:40], DIGITS[:30]]


def test_stream_is_cut_at_the_call_limit() -> None:
    backend = InMemoryBackend()
    mw = middleware(backend, trunc_command_limits={"running": 25})
    wrapped = mw.wrap_streamable_tool_call(
        lambda _: iter([DIGITS[:20], DIGITS[20:50], DIGITS[50:]]),
        ToolContext(name="bash", call_id="s1"),
    )
    chunks: Iterator[str] = iter(wrapped(bash("make test")))
    assert list(chunks) == [
        DIGITS[:20],
        DIGITS[20:25] + "<persisted-output>\nOutput truncated after 25 characters were streamed. "
        "Full output saved to: /tmp/trunc/s1. Use read_file to view. \n</persisted-output>",
    ]
    assert backend.read("/tmp/trunc/s1") == DIGITS
    # Another kind has no limit of its own: 100 characters pass under the default 120.
    assert list(wrapped(bash("ls -R"))) == [DIGITS[:20], DIGITS[20:50], DIGITS[50:]]


def test_async_stream_is_cut_at_the_tool_limit() -> None:
    mw = middleware(trunc_tool_limits={"bash": 10})

    async def source(_: str) -> AsyncIterator[str]:
        yield DIGITS

    async def run() -> list[str]:
        wrapped = mw.awrap_streamable_tool_call(source, ToolContext(name="bash", call_id="s2"))
        return [chunk async for chunk in wrapped("{}")]

    out = asyncio.run(run())
    assert out == [
        DIGITS[:10] + "<persisted-output>\nOutput truncated after 10 characters were streamed. "
        "Full output saved to: /tmp/trunc/s2. Use read_file to view. \n</persisted-output>"
    ]


def test_limits_read_and_written_as_json() -> None:
    data = {
        "trunc_tool_limits": {"Read": 4000, "Bash": 2000},
        "trunc_command_limits": {"reading": 8000},
    }
    config = config_from_dict(data, backend=InMemoryBackend())
    assert config.trunc_tool_limits == {"Read": 4000, "Bash": 2000}
    written = config_to_dict(config)
    assert written["trunc_tool_limits"] == {"Bash": 2000, "Read": 4000}
    assert list(written["trunc_tool_limits"]) == ["Bash", "Read"]
    assert written["trunc_command_limits"] == {"reading": 8000}
    default = config_to_dict(config_from_dict({}, backend=InMemoryBackend()))
    assert (default["trunc_tool_limits"], default["trunc_command_limits"]) == ({}, {})


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (
            {"trunc_command_limits": {"bogus": 10}},
            "trunc_command_limits.bogus",
            "trunc_command_limits.bogus is not a command kind: expected one of "
            "['running', 'reading', 'searching', 'editing', 'other']",
        ),
        (
            {"trunc_tool_limits": {"Read": "4k"}},
            "trunc_tool_limits.Read",
            "trunc_tool_limits.Read must be an integer, got '4k'",
        ),
        (
            {"trunc_tool_limits": {"Read": True}},
            "trunc_tool_limits.Read",
            "trunc_tool_limits.Read must be an integer, got True",
        ),
        (
            {"trunc_command_limits": {"running": 0}},
            "trunc_command_limits.running",
            "trunc_command_limits.running must be at least 1, got 0",
        ),
        (
            {"trunc_tool_limits": {"Read": 2**63}},
            "trunc_tool_limits.Read",
            f"trunc_tool_limits.Read must be at most {2**63 - 1}, got {2**63}",
        ),
        (
            {"trunc_tool_limits": {"": 5}},
            "trunc_tool_limits",
            "trunc_tool_limits must have non-empty names as keys, got ''",
        ),
        (
            {"trunc_tool_limits": [["Read", 5]]},
            "trunc_tool_limits",
            "trunc_tool_limits must be an object of name to limit, got [['Read', 5]]",
        ),
    ],
)
def test_limits_errors_name_the_field_and_key(
    data: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, backend=InMemoryBackend())
    assert (info.value.field, str(info.value)) == (field, message)
