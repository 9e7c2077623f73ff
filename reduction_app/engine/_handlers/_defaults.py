"""The reference's default handlers (docs/behaviour.md §3.2, §4.7), public so a tool can be
given one explicitly: truncation replaces each large text part with a notice and
offloads the whole result; clearing replaces a result with a placeholder naming its
offload file, or the file a truncation notice already names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from reduction_app.engine._handlers._digests import Digester, default_digest, fit_digest
from reduction_app.engine._handlers._limits import TruncLimits
from reduction_app.engine._steps import Steps, invoke, run_sync
from reduction_app.engine.errors import MessageError
from reduction_app.engine.notices import (
    Language,
    clear_placeholder,
    trunc_notice,
    truncation_file_path,
)
from reduction_app.engine.parts import concat_tool_results, stringify
from reduction_app.engine.tool_io import (
    ClearResult,
    ToolDetail,
    ToolOutputPart,
    ToolResult,
    TruncResult,
)

__all__ = [
    "DefaultClearHandler",
    "DefaultTruncHandler",
    "PathGenerator",
    "default_clear_handler",
    "default_trunc_handler",
    "joint_parts",
]

PathGenerator = Callable[[ToolDetail], str]


def joint_parts(detail: ToolDetail) -> list[ToolOutputPart] | None:
    """The result's parts: as given, or the joined chunks of a stream.

    ``None`` when the stream failed part-way: the caller then leaves the output alone
    (and the untouched stream replays the failure to whoever reads it).
    """
    if detail.tool_result is not None:
        return list(detail.tool_result.parts)
    if detail.stream_tool_result is None:
        raise MessageError("tool_result and stream_tool_result are both None")
    chunks: list[ToolResult | None] = []
    try:
        for chunk in detail.stream_tool_result:
            chunks.append(chunk)
    except Exception:
        return None
    return concat_tool_results(chunks)


def _text_chars(parts: Sequence[ToolOutputPart]) -> int:
    return sum(len(p.text) for p in parts if p.type == "text")


class DefaultTruncHandler:
    """See :func:`default_trunc_handler`."""

    def __init__(
        self,
        gen_path: PathGenerator,
        max_length: int,
        read_file_tool_name: str,
        language: Language | None = None,
        *,
        only_when_shorter: bool = False,
        release: Callable[[str], None] | None = None,
        limits: TruncLimits | None = None,
    ) -> None:
        self.gen_path = gen_path
        self.max_length = max_length
        self.limits = limits
        """``trunc_tool_limits`` and ``trunc_command_limits``: a call's own limit, in place
        of ``max_length`` (docs/behaviour.md §3.11); ``None``: ``max_length`` for all."""
        self.read_file_tool_name = read_file_tool_name
        self.language = language
        self.only_when_shorter = only_when_shorter
        """``trunc_only_when_shorter``: keep an output its notice would not shorten."""
        self.release = release
        """Frees a path ``gen_path`` chose that will not be written (its registry's)."""

    def __call__(self, detail: ToolDetail) -> TruncResult:
        return run_sync(self.steps(detail))

    def limit_for(self, tool: str, arguments: str) -> int:
        """The limit a call of ``tool`` with these arguments is truncated at (``M``)."""
        if self.limits is None:
            return self.max_length
        return self.limits.limit(tool, arguments)

    def steps(self, detail: ToolDetail) -> Steps[TruncResult]:
        parts = joint_parts(detail)
        if not parts:
            return TruncResult(need_trunc=False)
        texts = [p for p in parts if p.type == "text"]
        total = sum(len(p.text) for p in texts)
        max_length = self.limit_for(detail.tool_context.name, detail.tool_argument.text)
        if not texts or total <= max_length:
            return TruncResult(need_trunc=False)
        content = stringify(parts)
        part_limit = max_length // len(texts)
        preview = part_limit // 2
        streamed = detail.tool_result is None
        if streamed:
            # The path generator sees the whole joined output, not the stream it came from.
            detail = replace(detail, tool_result=ToolResult(parts=tuple(parts)))
        path: str = yield from invoke(self.gen_path, detail)
        new_parts = tuple(
            replace(
                p,
                text=trunc_notice(
                    original_size=len(p.text),
                    file_path=path,
                    preview_size=preview,
                    preview_first=p.text[:preview],
                    preview_last=p.text[len(p.text) - preview :] if preview else "",
                    read_tool_name=self.read_file_tool_name,
                    language=self.language,
                ),
            )
            if p.type == "text" and len(p.text) >= part_limit
            else p
            for p in parts
        )
        if self.only_when_shorter and _text_chars(new_parts) >= total:
            if self.release is not None:
                self.release(path)
            return TruncResult(need_trunc=False)
        truncated = ToolResult(parts=new_parts)
        return TruncResult(
            need_trunc=True,
            tool_result=None if streamed else truncated,
            stream_tool_result=iter([truncated]) if streamed else None,
            need_offload=True,
            offload_file_path=path,
            offload_content=content,
        )

    def __repr__(self) -> str:
        return f"default_trunc_handler(max_length={self.max_length})"


def default_trunc_handler(
    gen_path: PathGenerator,
    max_length: int,
    read_file_tool_name: str,
    *,
    language: Language | None = None,
) -> DefaultTruncHandler:
    """The reference's default truncation handler.

    When the result's text parts hold more than ``max_length`` characters in all,
    each text part of at least ``max_length // n`` characters (``n`` text parts)
    becomes a notice with the first and last ``max_length // (2n)`` characters, and
    the whole result is offloaded to ``gen_path(detail)``. A streamed input is read
    to its end first, so this handler gives the buffered streaming path.
    """
    return DefaultTruncHandler(gen_path, max_length, read_file_tool_name, language)


class DefaultClearHandler:
    """See :func:`default_clear_handler`."""

    def __init__(
        self,
        gen_path: PathGenerator,
        offload: bool,
        read_file_tool_name: str,
        language: Language | None = None,
        *,
        digest_tokens: int = 0,
        digester: Digester | None = None,
    ) -> None:
        self.gen_path = gen_path
        self.offload = offload
        self.read_file_tool_name = read_file_tool_name
        self.language = language
        self.digest_tokens = digest_tokens
        self.digester = digester or default_digest

    def __call__(self, detail: ToolDetail) -> ClearResult:
        return run_sync(self.steps(detail))

    def steps(self, detail: ToolDetail) -> Steps[ClearResult]:
        parts = joint_parts(detail)
        if not parts:
            return ClearResult(need_clear=False)
        path: str | None = None
        need_offload = False
        content = ""
        if self.offload:
            path = _truncation_file(parts)
            if path is None:
                if detail.tool_result is None:
                    detail = replace(detail, tool_result=ToolResult(parts=tuple(parts)))
                # Before the path, as in the trunc handler: content that cannot be
                # serialised fails here, before a path is promised to it.
                content = stringify(parts)
                path = yield from invoke(self.gen_path, detail)
                need_offload = True
        placeholder = clear_placeholder(
            file_path=path, read_tool_name=self.read_file_tool_name, language=self.language
        )
        texts = [p.text for p in parts if p.type == "text"]
        first = placeholder
        if self.digest_tokens > 0 and texts:
            digest = fit_digest(self.digester("\n".join(texts)), self.digest_tokens)
            first = clear_placeholder(
                file_path=path,
                read_tool_name=self.read_file_tool_name,
                language=self.language,
                digest=digest,
            )
        # The digest (when on) goes with the first text part; any other gets the placeholder.
        firsts = iter([first])
        cleared = tuple(
            replace(p, text=next(firsts, placeholder)) if p.type == "text" else p for p in parts
        )
        return ClearResult(
            need_clear=True,
            tool_argument=detail.tool_argument,
            tool_result=ToolResult(parts=cleared),
            need_offload=need_offload,
            offload_file_path=path or "",
            offload_content=content,
        )

    def __repr__(self) -> str:
        digest = f", digest_tokens={self.digest_tokens}" if self.digest_tokens else ""
        return f"default_clear_handler(offload={self.offload}{digest})"


def _truncation_file(parts: list[ToolOutputPart]) -> str | None:
    for part in parts:
        if part.type == "text":
            path = truncation_file_path(part.text)
            if path is not None:
                return path
    return None


def default_clear_handler(
    gen_path: PathGenerator,
    offload: bool,
    read_file_tool_name: str,
    *,
    language: Language | None = None,
    digest_tokens: int = 0,
    digester: Digester | None = None,
) -> DefaultClearHandler:
    """The reference's default clear handler.

    Every text part of the result becomes the clear placeholder; media parts stay.
    With ``offload`` the original is written to ``gen_path(detail)`` first and the
    placeholder names that file; without it the placeholder only says the content
    was cleared. The tool arguments are kept as they are.

    With ``digest_tokens > 0`` (an opt-in beyond the reference) the first text part's
    placeholder also holds a digest of the result's text, made by ``digester``
    (:func:`~reduction_app.engine.default_digest` when ``None``) and cut to
    that many tokens (see :mod:`._digests`).
    """
    return DefaultClearHandler(
        gen_path,
        offload,
        read_file_tool_name,
        language,
        digest_tokens=digest_tokens,
        digester=digester,
    )
