"""Adapters that drop the engine into agent frameworks.

One module per framework, each importable without Django and needing only its own
framework (an optional extra: docs/integrations.md). Each is a thin translation between
the framework's message types and the engine's public surface, with one constructor
shape (``config``, ``backend=``, ``on_event=``); the work itself is the engine's
``truncate_output`` and ``answer_read_file``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from reduction_app.engine import Backend, ReductionConfig, ReductionEvent

Listener = Callable[[ReductionEvent], Any]


def adapter_config(
    config: ReductionConfig | None, *, backend: Backend | None, on_event: Listener | None
) -> tuple[ReductionConfig, list[Listener]]:
    """What every adapter's constructor does first: the config (Eino's defaults when
    ``None``) with ``backend`` in place of its own, and the listeners to call with each
    event, the config's ``on_event`` first."""
    base = config if config is not None else ReductionConfig()
    if backend is not None:
        base = dataclasses.replace(base, backend=backend)
    return base, [f for f in (base.on_event, on_event) if f is not None]
