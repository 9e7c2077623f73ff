"""The configs a replay runs, each with its own middleware, events and clear passes.

A :class:`Member` is one config of :func:`~simulator.replay.replay_many`, with the
backend that keeps its offloads apart in its branch (:mod:`simulator.branches`);
:func:`truncation_key` says which configs truncate alike, so branches can share the work.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Awaitable, Mapping
from typing import Any

from reduction_app.engine import (
    Backend,
    InMemoryBackend,
    ReductionConfig,
    ReductionEvent,
    WriteRequest,
    config_from_dict,
    config_to_dict,
    get_token_counter,
    json_config_fields,
    new,
)
from simulator.prefix import with_prefix
from simulator.results import ClearPass

__all__ = ["CLEAR_ONLY", "Files", "Member", "truncation_key"]

CLEAR_ONLY = frozenset(spec.name for spec in json_config_fields() if spec.phase == "clear")
"""Config fields only the clear phase reads, as the engine's config spec marks them (the
engine's runtime builds the truncation handler from the others, and truncation events
count with ``token_counter``)."""


class _CountingBackend:
    """Passes every write on to ``inner`` and counts the characters written, so each
    replay reports its own offloads whatever backend the config brought."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.chars = 0

    def write(self, request: WriteRequest) -> Awaitable[None] | None:
        done = self.inner.write(request)
        self.chars += len(request.content)
        return done

    def read(self, path: str) -> str | Awaitable[str]:
        return self.inner.read(path)


class Files:
    """A branch's offloaded files, and the characters its lineage wrote."""

    def __init__(self, files: dict[str, str] | None = None, chars: int = 0) -> None:
        self.files: dict[str, str] = files or {}
        self.chars = chars
        self.log: list[tuple[str, str]] | None = None
        """When a list, every write is noted in it too."""

    def read(self, path: str) -> str:
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(f"file not found: {path}") from None

    def write(self, request: WriteRequest) -> None:
        self.files[request.file_path] = request.content
        self.chars += len(request.content)
        if self.log is not None:
            self.log.append((request.file_path, request.content))


class _PassFiles:
    """A member's backend: reads the branch's files, and keeps what its own clear passes
    write apart until its branch takes it (the member leaves on a fork when it writes)."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self.pending: dict[str, str] = {}
        self.pending_chars = 0

    def read(self, path: str) -> str:
        if path in self.pending:
            return self.pending[path]
        return self.files.read(path)

    def write(self, request: WriteRequest) -> None:
        self.pending[request.file_path] = request.content
        self.pending_chars += len(request.content)


def truncation_key(config: ReductionConfig) -> str | None:
    """What a config's truncation depends on, as text; ``None`` for a config that cannot
    share (a callable counter)."""
    try:
        fields = config_to_dict(config)
    except ValueError:
        return None
    return json.dumps({k: v for k, v in fields.items() if k not in CLEAR_ONLY}, sort_keys=True)


class Member:
    """One config replayed in a branch: its middleware, its events, its clear passes.

    A config given as JSON fields gets a backend that reads its branch's offloaded files
    and keeps what its own clear passes write apart until its branch takes them; a
    :class:`~reduction_app.engine.ReductionConfig` keeps the backend and hook it brought,
    with the characters written counted. With a ``prefix``, the middleware counts with the
    config's counter plus that prefix in every count of a whole request, so the clear
    phase's thresholds see it.
    """

    def __init__(
        self,
        position: int,
        name: str,
        config: ReductionConfig | Mapping[str, Any] | None,
        prefix: int = 0,
        *,
        agentic: bool = False,
    ):
        self.position = position
        self.prefix = prefix
        """Tokens the recording left out before every request (see :mod:`simulator.prefix`)."""
        self.name = name
        self.events: list[ReductionEvent] = []
        self.passes: list[tuple[tuple[ReductionEvent, ...], ClearPass]] = []
        """Per model call: the events since the previous call, and the clear pass."""
        self._mark = 0
        self.own: _CountingBackend | None = None
        self.files: _PassFiles | None = None
        if isinstance(config, ReductionConfig):
            self.config = self._own_backend(config)
        else:
            self.files = _PassFiles(Files())
            data = {"skip_truncation": True, "skip_clear": True} if config is None else config
            self.config = config_from_dict(data, backend=self.files, on_event=self.events.append)
        self.counter = get_token_counter(self.config.token_counter)
        """The config's own counter (a request's count by it leaves the prefix out)."""
        try:
            self.as_dict = config_to_dict(self.config)
        except ValueError:
            self.as_dict = {}
        self.key = None if self.files is None else truncation_key(self.config)
        if prefix:
            counter = with_prefix(self.counter, prefix, agentic=agentic)
            self.config = dataclasses.replace(self.config, token_counter=counter)
        self.mw = new(self.config)

    def _own_backend(self, config: ReductionConfig) -> ReductionConfig:
        user_hook = config.on_event

        def on_event(event: ReductionEvent) -> None:
            self.events.append(event)
            if user_hook is not None:
                user_hook(event)

        # A fresh in-memory backend when none is set: an empty InMemoryBackend is falsy.
        inner = config.backend if config.backend is not None else InMemoryBackend()
        self.own = _CountingBackend(inner)
        return dataclasses.replace(config, backend=self.own, on_event=on_event)

    @property
    def chars_offloaded(self) -> int:
        return self.own.chars if self.own is not None else 0

    def record(self, context: list[Any], tools: list[Any]) -> None:
        """Close this call: its events, and its clear pass from the summary event; without
        one (``skip_clear``) the context counted as the clear phase would have counted it."""
        events = tuple(self.events[self._mark :])
        self._mark = len(self.events)
        summary = next((e for e in reversed(events) if e.kind == "summary"), None)
        if summary is not None:
            clear = ClearPass.from_summary(summary)
        else:
            tokens = int(self.counter(list(context), tools)) + self.prefix
            clear = ClearPass(
                tokens_before=tokens, tokens_after=tokens, threshold=None, cleared=False
            )
        self.passes.append((events, clear))
