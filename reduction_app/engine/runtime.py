"""A config turned into what both phases use: each tool's resolved handler and backend
(docs/behaviour.md §2.4), the counter, the path registry, and the shared steps (offload
writes, events, figures). The phases build on it and it imports none of them; what the
clear phase keeps between passes is its own (``_clear._phase.ClearMemory``).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from reduction_app.engine._handlers._defaults import DefaultClearHandler, DefaultTruncHandler
from reduction_app.engine._handlers._limits import TruncLimits
from reduction_app.engine._steps import AwaitableInSyncPhase, Steps, call
from reduction_app.engine._storage._backends import Backend, WriteRequest
from reduction_app.engine._storage._paths import DefaultPathGenerator, PathRegistry
from reduction_app.engine._tokens._counters import get_token_counter
from reduction_app.engine.access import AnyMessage
from reduction_app.engine.blocks import AgenticMessage, FunctionToolResult, ToolResultContent
from reduction_app.engine.config import ReductionConfig, filled
from reduction_app.engine.errors import NoBackendError, OffloadError
from reduction_app.engine.events import ReductionEvent
from reduction_app.engine.messages import Message
from reduction_app.engine.parts import stringify
from reduction_app.engine.telemetry import TelemetryLabels, add_span_event, recording
from reduction_app.engine.tool_io import ToolDetail

__all__ = ["Resolved", "Runtime"]


@dataclass(frozen=True, slots=True)
class Resolved:
    """The handler a tool gets in one phase, and the backend its offloads go to."""

    handler: Callable[[ToolDetail], Any] | None
    backend: Backend | None
    is_default: bool
    """True when the handler is the default one (streams then truncate incrementally)."""


def _detail_content(detail: ToolDetail) -> str:
    return stringify(detail.tool_result.parts) if detail.tool_result is not None else ""


class Runtime:
    """Everything the phases need from one config, resolved once."""

    def __init__(self, config: ReductionConfig) -> None:
        self.config = config = filled(config)
        self.counter = get_token_counter(config.token_counter)
        self.registry = PathRegistry()
        self.trunc_exclude = frozenset(config.trunc_exclude_tools)
        self.trunc_limits = TruncLimits(
            default=config.max_length_for_trunc,
            by_tool=dict(config.trunc_tool_limits),
            by_command_kind=dict(config.trunc_command_limits),
        )
        self.clear_exclude = frozenset(config.clear_exclude_tools)
        self._defaults: dict[int, tuple[Resolved, Resolved]] = {}
        self._trunc: dict[str, Resolved] = {}
        self._clear: dict[str, Resolved] = {}
        self.default_trunc, self.default_clear = self._default_pair(config.backend)
        self.telemetry = TelemetryLabels()
        """The config's name and conversation id its span events carry (``telemetry.py``)."""
        self.clear_enabled = not config.skip_clear or any(
            entry.clear_handler is not None for entry in config.tool_config.values()
        )

    def _default_pair(self, backend: Backend | None) -> tuple[Resolved, Resolved]:
        key = id(backend)
        pair = self._defaults.get(key)
        if pair is not None:
            return pair
        cfg = self.config
        gen_trunc = cfg.gen_trunc_offload_file_path or DefaultPathGenerator(
            root_dir=cfg.root_dir,
            kind="trunc",
            backend=backend,
            registry=self.registry,
            content_of=_detail_content,
        )
        gen_clear = cfg.gen_clear_offload_file_path or DefaultPathGenerator(
            root_dir=cfg.root_dir,
            kind="clear",
            backend=backend,
            registry=self.registry,
            content_of=_detail_content,
        )
        trunc = None
        if not cfg.skip_truncation:
            trunc = DefaultTruncHandler(
                gen_trunc,
                cfg.max_length_for_trunc,
                cfg.read_file_tool_name,
                cfg.language,
                only_when_shorter=cfg.trunc_only_when_shorter,
                limits=self.trunc_limits,
                # Only our own generator promises paths in the registry.
                release=None if cfg.gen_trunc_offload_file_path else self.registry.release,
            )
        clear = None
        if not cfg.skip_clear:
            clear = DefaultClearHandler(
                gen_clear,
                backend is not None,
                cfg.read_file_tool_name,
                cfg.language,
                digest_tokens=cfg.clear_digest_tokens,
            )
        pair = (Resolved(trunc, backend, True), Resolved(clear, backend, True))
        self._defaults[key] = pair
        return pair

    def _resolve(self, tool: str, scene: str) -> Resolved:
        entry = self.config.tool_config.get(tool)
        index = 0 if scene == "trunc" else 1
        if entry is None:
            return (self.default_trunc, self.default_clear)[index]
        skip = entry.skip_truncation if scene == "trunc" else entry.skip_clear
        handler = entry.trunc_handler if scene == "trunc" else entry.clear_handler
        backend = entry.backend if entry.backend is not None else self.config.backend
        if not skip and handler is None:
            default = self._default_pair(backend)[index]
            if scene == "clear" and entry.clear_digester is not None and default.handler:
                # The default handler, with this tool's digester.
                assert isinstance(default.handler, DefaultClearHandler)
                own = copy.copy(default.handler)
                own.digester = entry.clear_digester
                return Resolved(own, backend, True)
            return default
        return Resolved(handler, backend, False)

    def trunc_for(self, tool: str) -> Resolved | None:
        """The truncation handler of ``tool``, or ``None`` when its output passes untouched."""
        if tool in self.trunc_exclude:
            return None
        resolved = self._trunc.get(tool)
        if resolved is None:
            resolved = self._trunc[tool] = self._resolve(tool, "trunc")
        return resolved if resolved.handler is not None else None

    def clear_for(self, tool: str) -> Resolved | None:
        """The clear handler of ``tool``, or ``None`` when its results are never cleared."""
        if tool in self.clear_exclude:
            return None
        resolved = self._clear.get(tool)
        if resolved is None:
            resolved = self._clear[tool] = self._resolve(tool, "clear")
        return resolved if resolved.handler is not None else None

    # Shared steps ---------------------------------------------------------------------

    def offload(self, phase: str, backend: Backend | None, path: str, content: str) -> Steps[None]:
        """Write ``content`` to ``path``; a failure becomes an :class:`OffloadError`.

        Either way the path's promise ends here: once written, the backend answers for it.
        """
        try:
            if backend is None:
                raise NoBackendError(phase)
            yield call(backend.write, WriteRequest(file_path=path, content=content))
        except AwaitableInSyncPhase:
            raise
        except NoBackendError:
            raise
        except Exception as exc:
            raise OffloadError(phase, path, exc) from exc
        finally:
            self.registry.release(path)

    def count_text(self, text: str, kind: str = "chat") -> Steps[int]:
        """Tokens of ``text`` by the config's counter (a one-message conversation for a
        custom counter, in the conversation's message style)."""
        count_text = getattr(self.counter, "count_text", None)
        if count_text is not None:
            tokens: int = yield call(count_text, text)
            return tokens
        message: AnyMessage
        if kind == "agentic":
            message = AgenticMessage(
                role="user",
                content_blocks=(FunctionToolResult(content=(ToolResultContent(text=text),)),),
            )
        else:
            message = Message.tool(text, "")
        counted: int = yield call(self.counter, [message], [])
        return counted

    def listening(self) -> bool:
        """Whether an event made now goes anywhere: to ``on_event``, or to a recording
        span. Events cost counting, so the phases build them only then."""
        return self.config.on_event is not None or recording()

    def emit(self, event: ReductionEvent) -> Steps[None]:
        """Hand ``event`` to the current span (when it records) and to ``on_event``: the
        one place every event goes through."""
        add_span_event(event, self.telemetry)
        if self.config.on_event is not None:
            yield call(self.config.on_event, event)

    def with_figures(
        self, event: ReductionEvent, before: str, after: str, kind: str
    ) -> Steps[ReductionEvent]:
        """``event`` with character and token figures for ``before`` → ``after``."""
        tokens_before = yield from self.count_text(before, kind)
        tokens_after = yield from self.count_text(after, kind)
        return dataclasses.replace(
            event,
            chars_before=len(before),
            chars_after=len(after),
            tokens_before=tokens_before,
            tokens_after=tokens_after,
            tokens_saved=tokens_before - tokens_after,
        )
