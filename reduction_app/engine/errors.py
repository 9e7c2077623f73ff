"""The engine's errors, raised with a complete message and mapped once at the edge.

::

    ReductionError                     every error the engine raises itself
    ├── ConfigError (ValueError)       a bad config; the message names the field
    ├── FormatError (ValueError)       a wire message that cannot be parsed; quotes the value
    ├── TokenizerUnavailable           an exact counter whose encoding file cannot be found
    ├── OffloadError                   content could not be written; nothing was changed
    │   └── NoBackendError             a handler asked to offload and no backend is set
    ├── MessageError                   a message the phase cannot read or write back
    ├── PairingError                   an edit would split a tool call from its result
    └── PathEscapeError (ValueError)   a storage path that would leave the storage root

Errors raised by user code (handlers, counters, rewriters, backends) pass
through unchanged, as in the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConfigError",
    "FormatError",
    "MessageError",
    "NoBackendError",
    "OffloadError",
    "PairingError",
    "PathEscapeError",
    "ReductionError",
    "TokenizerUnavailable",
]


class ReductionError(Exception):
    """Base class of every error the engine raises itself."""


class ConfigError(ReductionError, ValueError):
    """A config value is invalid. ``field`` names the offending field.

    The message reads as a sentence: ``ConfigError("backend", "must be set ...")``
    renders as ``backend must be set ...``.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field} {problem}")


class FormatError(ReductionError, ValueError):
    """A wire-format message or tool definition cannot be parsed.

    ``where`` is a JSON-pointer-like location such as ``messages[3].content[1].type``.
    """

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}" if where else problem)


class TokenizerUnavailable(ReductionError):
    """An exact token counter cannot load its encoding file."""


class OffloadError(ReductionError):
    """Writing offloaded content failed; the conversation was left as it was."""

    def __init__(self, phase: str, path: str, cause: BaseException | str) -> None:
        self.phase = phase
        self.path = path
        self.cause = cause
        super().__init__(f"{phase}: failed to write {path}: {cause}")


class NoBackendError(OffloadError):
    """A handler asked to offload, and neither its tool entry nor the config has a backend."""

    def __init__(self, phase: str) -> None:
        self.phase = phase
        self.path = ""
        self.cause = "no backend"
        ReductionError.__init__(self, f"{phase}: no backend for offload")


class MessageError(ReductionError):
    """A message in the conversation cannot be read or written back by the phase."""


class PairingError(ReductionError):
    """A clear pass would return a conversation a provider rejects: an edit (the
    rewriter, a strategy, the post-process) split a tool call from its result where the
    conversation it was given kept them together. Nothing is returned; the caller still
    holds what it passed in.

    ``step`` names the edit, ``problems`` lists what it broke (``PairingProblem`` values
    from :mod:`reduction_app.engine._clear._pairing`, each naming a message, a call id and what
    is wrong).
    """

    def __init__(self, step: str, problems: Sequence[object]) -> None:
        self.step = step
        self.problems = tuple(problems)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        first = problems[0] if problems else "no problem given"
        super().__init__(f"{step} split a tool call from its result: {first}{more}")


class PathEscapeError(ReductionError, ValueError):
    """A storage path would resolve outside the backend's root."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(f"path {path!r} is outside the storage root")
