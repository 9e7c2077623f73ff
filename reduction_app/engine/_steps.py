"""One implementation of each phase for both sync and async callers.

A phase is written once as a generator that *yields* the calls it needs made
(``Call(fn, args)``: a handler, a counter, a backend write) and receives their results
back; :func:`run_sync` makes the calls directly, :func:`run_async` awaits any that return
an awaitable, so handlers, counters, rewriters and backends may be plain or ``async``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["AwaitableInSyncPhase", "Call", "Steps", "call", "invoke", "run_async", "run_sync"]

T = TypeVar("T")


class AwaitableInSyncPhase(TypeError):
    """An async handler, backend or callback was given to a synchronous phase.

    A programming error, not an offload failure: the phases let it through unwrapped.
    """


@dataclass(frozen=True, slots=True)
class Call:
    """A call the phase wants made: ``fn(*args)``."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]


Steps = Generator[Call, Any, T]


def call(fn: Callable[..., Any], *args: Any) -> Call:
    return Call(fn, args)


def _describe(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def run_sync(steps: Steps[T]) -> T:
    """Drive ``steps`` to the end, making each call directly.

    An exception raised by a call is thrown back into the generator at the point of the
    ``yield``, exactly as if the phase had called the function itself (so in
    :func:`run_async` too).
    """
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value, error = None, None
        try:
            value = request.fn(*request.args)
        except Exception as exc:
            error = exc
            continue
        if inspect.isawaitable(value):
            if inspect.iscoroutine(value):
                value.close()
            error = AwaitableInSyncPhase(
                f"{_describe(request.fn)} returned an awaitable in a synchronous phase; "
                "use the middleware's async methods (awrap_*, abefore_model_rewrite_state)"
            )
            value = None


async def run_async(steps: Steps[T]) -> T:
    """Drive ``steps`` to the end, awaiting each call that returns an awaitable."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            request = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        value, error = None, None
        try:
            value = request.fn(*request.args)
            if inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            error = exc


def invoke(fn: Callable[..., Any], *args: Any) -> Steps[Any]:
    """Call ``fn``; the engine's own stepped callables (with a ``steps`` method) are run
    inline, so their backend reads go through the same driver."""
    steps = getattr(fn, "steps", None)
    if steps is not None:
        return (yield from steps(*args))
    return (yield call(fn, *args))
