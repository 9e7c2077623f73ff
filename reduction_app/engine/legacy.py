"""The reference's first, deprecated entry points, kept as thin shims (docs/behaviour.md §6).

``new_clear_tool_result`` clears old tool results by a token budget, and
``new_tool_result_middleware`` adds offloading of large string results. Both warn
with :class:`DeprecationWarning`; new code uses :func:`reduction_app.engine.new`.
Unlike the reference they return new lists instead of changing messages in place
(decision 6), and offload paths are made safe (decision 7).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from reduction_app.engine._storage._backends import Backend, WriteRequest
from reduction_app.engine._storage._paths import content_digest, safe_id, unique_paths
from reduction_app.engine.errors import ConfigError, OffloadError, ReductionError
from reduction_app.engine.messages import ROLE_TOOL, Message
from reduction_app.engine.notices import Language, get_language
from reduction_app.engine.tool_io import ToolContext

__all__ = [
    "ClearToolResultConfig",
    "LegacyClearToolResult",
    "LegacyToolResultMiddleware",
    "ToolResultConfig",
    "content_sample",
    "new_clear_tool_result",
    "new_tool_result_middleware",
]

LEGACY_PLACEHOLDER = "[Old tool result content cleared]"
_DEFAULT_THRESHOLD = 20_000
_DEFAULT_KEEP_RECENT = 40_000
_DEFAULT_OFFLOADING_LIMIT = 20_000
_DEFAULT_READ_FILE_TOOL = "read_file"
_MAX_SCAN_LINE = 64 * 1024
_SAMPLE_LINES = 10
_SAMPLE_LINE_CHARS = 1000


def legacy_token_count(msg: Message) -> int:
    """The legacy estimate: content plus tool-call arguments, divided by 4, rounded up."""
    size = len(msg.content) + sum(len(tc.arguments) for tc in msg.tool_calls)
    return (size + 3) // 4


@dataclass(kw_only=True)
class ClearToolResultConfig:
    """Settings of the legacy clear hook; every field has the reference's default.

    As in the reference, ``0`` and ``""`` mean "unset": a threshold or budget of 0 and an
    empty placeholder are read as their defaults.
    """

    tool_result_token_threshold: int = _DEFAULT_THRESHOLD
    keep_recent_tokens: int = _DEFAULT_KEEP_RECENT
    clear_tool_result_placeholder: str = LEGACY_PLACEHOLDER
    token_counter: Callable[[Message], int] | None = None
    exclude_tools: Collection[str] = ()


def _warn(name: str) -> None:
    warnings.warn(
        f"{name} is deprecated; use reduction_app.engine.new(ReductionConfig(...))",
        DeprecationWarning,
        stacklevel=3,
    )


class LegacyClearToolResult:
    """The legacy ``BeforeChatModel`` hook."""

    def __init__(self, config: ClearToolResultConfig) -> None:
        self.config = config
        self._count = config.token_counter or legacy_token_count
        self._exclude = frozenset(config.exclude_tools)
        # The reference's Go zero values are its "not set" (docs/behaviour.md §6.1).
        self._threshold = config.tool_result_token_threshold or _DEFAULT_THRESHOLD
        self._keep_recent = config.keep_recent_tokens or _DEFAULT_KEEP_RECENT
        self._placeholder = config.clear_tool_result_placeholder or LEGACY_PLACEHOLDER

    def before_chat_model(self, messages: Sequence[Message]) -> list[Message]:
        """Old tool results replaced by the placeholder, once tool results pass the threshold."""
        placeholder = self._placeholder
        out = list(messages)
        total = sum(self._count(m) for m in out if m.role == ROLE_TOOL and m.content != placeholder)
        if total <= self._threshold:
            return out
        protect_from, recent = 0, 0
        for index in range(len(out) - 1, -1, -1):
            recent += self._count(out[index])
            if recent > self._keep_recent:
                # The message that overflows the budget is itself kept, as in the reference.
                protect_from = index
                break
        for index in range(protect_from):
            msg = out[index]
            if (
                msg.role == ROLE_TOOL
                and msg.content != placeholder
                and msg.tool_name not in self._exclude
            ):
                out[index] = dataclasses.replace(msg, content=placeholder)
        return out


def new_clear_tool_result(config: ClearToolResultConfig | None = None) -> LegacyClearToolResult:
    """Deprecated: the legacy clear hook (docs/behaviour.md §6.1)."""
    _warn("new_clear_tool_result")
    return LegacyClearToolResult(config or ClearToolResultConfig())


_NOTICE = {
    "en": (
        "Tool result too large, the result of this tool call {tool_call_id} was saved in the "
        "filesystem at this path: {file_path}\n"
        "You can read the result from the filesystem by using the '{read_file_tool_name}' tool, "
        "but make sure to only read part of the result at a time.\n"
        "You can do this by specifying an offset and limit in the "
        "'{read_file_tool_name}' tool call.\n"
        "For example, to read the first 100 lines, you can use the '{read_file_tool_name}' tool "
        "with offset=0 and limit=100.\n"
        "\n"
        "Here are the first 10 lines of the result:\n"
        "{content_sample}"
    ),
    "zh": (
        "工具结果过大，此工具调用 {tool_call_id} 的结果已保存到文件系统的以下路径：{file_path}\n"
        "你可以使用 '{read_file_tool_name}' 工具从文件系统读取结果，但请确保每次只读取部分结果。\n"
        "你可以通过在 '{read_file_tool_name}' 工具调用中指定 offset 和 limit 来实现。\n"
        "例如，要读取前 100 行，你可以使用 '{read_file_tool_name}' 工具，"
        "设置 offset=0 和 limit=100。\n"
        "\n"
        "以下是结果的前 10 行：\n"
        "{content_sample}"
    ),
}


def content_sample(text: str) -> str:
    """The first 10 lines, numbered from 1, each cut to 1000 characters.

    Lines split as Go's line scanner splits them: ``\n`` ends a line, a ``\r`` before it
    is dropped, a final newline starts no new line, and a line over 64 KiB ends the
    sample early.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out: list[str] = []
    for number, line in enumerate(lines[:_SAMPLE_LINES], start=1):
        if len(line) > _MAX_SCAN_LINE:
            break
        out.append(f"{number}: {line.removesuffix(chr(13))[:_SAMPLE_LINE_CHARS]}\n")
    return "".join(out)


@dataclass(kw_only=True)
class ToolResultConfig(ClearToolResultConfig):
    """Settings of the legacy tool-result middleware: the clear hook's, plus offloading.

    ``offloading_token_limit=0`` and ``read_file_tool_name=""`` read as their defaults,
    as in the reference.
    """

    backend: Backend | None = None
    offloading_token_limit: int = _DEFAULT_OFFLOADING_LIMIT
    path_generator: Callable[[ToolContext], str] | None = None
    read_file_tool_name: str = _DEFAULT_READ_FILE_TOOL
    language: Language | None = None


class LegacyToolResultMiddleware(LegacyClearToolResult):
    """The legacy clear hook plus offloading of large string tool results."""

    def __init__(self, config: ToolResultConfig) -> None:
        if config is None:
            raise ConfigError("config", "must not be None")
        if config.backend is None:
            raise ConfigError("backend", "must be set for the tool result middleware")
        super().__init__(config)
        self.result_config = config
        self._limit = config.offloading_token_limit or _DEFAULT_OFFLOADING_LIMIT
        self._read_tool = config.read_file_tool_name or _DEFAULT_READ_FILE_TOOL

    def _path(self, ctx: ToolContext, content: str) -> str:
        if self.result_config.path_generator is not None:
            return self.result_config.path_generator(ctx)
        # A reused call id must not overwrite an earlier result (decision 7): other content
        # takes a path named by its digest; the same content reuses its path.
        base = f"/large_tool_result/{safe_id(ctx.call_id)}"
        read = getattr(self.result_config.backend, "read", None)
        if read is None:
            return base
        for candidate in unique_paths(base, lambda: content_digest(content)):
            try:
                if read(candidate) == content:
                    return candidate
            except FileNotFoundError:
                return candidate
        raise RuntimeError(
            f"no offload path for {base}: {candidate} holds other content with the same SHA-256"
        )

    def _offload(self, ctx: ToolContext, result: str) -> str:
        cfg = self.result_config
        # Tokens are compared with four times the limit, as in the reference (about 16×limit chars).
        if (len(result) + 3) // 4 <= self._limit * 4:
            return result
        path = self._path(ctx, result)
        notice = _NOTICE[get_language(cfg.language)].format(
            tool_call_id=ctx.call_id,
            file_path=path,
            read_file_tool_name=self._read_tool,
            content_sample=content_sample(result),
        )
        assert cfg.backend is not None
        try:
            cfg.backend.write(WriteRequest(file_path=path, content=result))
        except Exception as exc:
            raise OffloadError("tool result", path, exc) from exc
        return notice

    def wrap_invokable_tool_call(
        self, endpoint: Callable[[str], str], tool_ctx: ToolContext
    ) -> Callable[[str], str]:
        def wrapped(arguments: str) -> str:
            return self._offload(tool_ctx, endpoint(arguments))

        return wrapped

    def wrap_streamable_tool_call(
        self, endpoint: Callable[[str], Iterable[str] | None], tool_ctx: ToolContext
    ) -> Callable[[str], Iterator[str]]:
        def wrapped(arguments: str) -> Iterator[str]:
            stream = endpoint(arguments)
            if stream is None:
                raise ReductionError("stream is nil")
            return iter([self._offload(tool_ctx, "".join(stream))])

        return wrapped


def new_tool_result_middleware(config: ToolResultConfig) -> LegacyToolResultMiddleware:
    """Deprecated: the legacy clear hook plus large-result offloading (docs/behaviour.md §6.2)."""
    _warn("new_tool_result_middleware")
    return LegacyToolResultMiddleware(config)
