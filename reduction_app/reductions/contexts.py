"""Clients' contexts kept warm between the ``/clear`` calls that continue them.

Each web process keeps, per conversation and config, the middleware that answered its
last call and the context as engine messages: a call that continues it costs what it
brings. A process some calls behind catches up with the revisions answered since, else
rebuilds the context once from the transcript. :class:`Relay`, the backend and event
sink of a middleware that outlives its request, passes each call on to the request's.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from reduction_app import engine
from reduction_app.engine import WriteRequest, formats
from reduction_app.models import OFFLOAD_PATH_CHARS, ConfigVersion
from reduction_app.records.storage import DjangoStorageBackend

EngineMessage = engine.Message | engine.AgenticMessage

__all__ = ["Relay", "WarmContext", "config_key", "keep", "take", "wire_sizes"]


class Relay:
    """The backend and event sink of a middleware that serves many requests: it passes
    each call on to the request's own (:meth:`bind`)."""

    max_path_chars = OFFLOAD_PATH_CHARS
    """Read by the engine's config check, as ``DjangoStorageBackend.max_path_chars``."""

    def __init__(self) -> None:
        self.backend: DjangoStorageBackend | None = None
        self.events: list[engine.ReductionEvent] = []

    def bind(self, backend: DjangoStorageBackend, events: list[engine.ReductionEvent]) -> None:
        self.backend, self.events = backend, events

    def _target(self) -> DjangoStorageBackend:
        if self.backend is None:
            raise RuntimeError("the relay is bound to no request")
        return self.backend

    def write(self, request: WriteRequest) -> None:
        self._target().write(request)

    def read(self, path: str) -> str:
        return self._target().read(path)

    def digest(self, path: str) -> str:
        return self._target().digest(path)

    def on_event(self, event: engine.ReductionEvent) -> None:
        self.events.append(event)


@dataclass
class WarmContext:
    """One conversation's context as the engine holds it, at one revision."""

    conversation: int
    """The conversation's primary key."""
    config: str
    """:func:`config_key` of the config its middleware runs."""
    revision: int
    middleware: engine.ReductionMiddleware | None
    """``None`` until the first call builds it (on :attr:`relay`)."""
    relay: Relay
    messages: list[EngineMessage] = field(default_factory=list)
    """The client's context at ``revision``, as the middleware returned it."""
    sizes: list[int] = field(default_factory=list)
    """How many wire messages each of ``messages`` is (:func:`wire_sizes`)."""

    def catch_up(self, message_format: str, from_index: int, tail: list[Any]) -> bool:
        """Bring the context to the next revision, which kept the first ``from_index``
        wire messages of this one and then had ``tail``; ``False`` (and nothing changed)
        when ``from_index`` is not where a message of this context begins."""
        kept, total = 0, 0
        # An Anthropic system message is no wire message (size 0): it is kept.
        while kept < len(self.sizes) and total + self.sizes[kept] <= from_index:
            total += self.sizes[kept]
            kept += 1
        if total != from_index:
            return False
        parsed = formats.parse_following(message_format, tail, self.messages[:kept])
        self.messages = [*self.messages[:kept], *parsed]
        self.sizes = [*self.sizes[:kept], *wire_sizes(message_format, parsed)]
        return True


def config_key(message_format: str, data: Mapping[str, Any], version: ConfigVersion | None) -> str:
    """What tells one config of a warm middleware from another: the format, and the
    stored version or the inline config's JSON."""
    named = f"version:{version.pk}" if version is not None else json.dumps(data, sort_keys=True)
    return hashlib.sha256(f"{message_format}\x00{named}".encode()).hexdigest()


def wire_sizes(message_format: str, messages: Sequence[EngineMessage]) -> list[int]:
    """How many wire messages (or Responses items) each engine message dumps to: 0 for an
    Anthropic system message, which goes to the ``system`` parameter."""
    wire = formats.get_format(message_format)
    return [len(wire.dump_messages([message])[1]) for message in messages]


_warm: OrderedDict[tuple[int, str], WarmContext] = OrderedDict()
_lock = threading.Lock()


def take(conversation: int, config: str) -> WarmContext | None:
    """The warm context of ``conversation`` under ``config``, at whatever revision this
    process answered last, taken out (a request uses it alone; :func:`keep` puts it
    back); ``None`` when there is none."""
    with _lock:
        return _warm.pop((conversation, config), None)


def keep(context: WarmContext) -> None:
    """Keep ``context`` for the conversation's next call, dropping the least recently
    used beyond ``REDUCTION_WARM_CONTEXTS`` (0 keeps none)."""
    limit = settings.REDUCTION_WARM_CONTEXTS
    if limit <= 0:
        return
    context.relay.backend, context.relay.events = None, []
    with _lock:
        key = (context.conversation, context.config)
        _warm[key] = context
        _warm.move_to_end(key)
        while len(_warm) > limit:
            _warm.popitem(last=False)


def forget() -> None:
    """Drop every warm context of this process."""
    with _lock:
        _warm.clear()
