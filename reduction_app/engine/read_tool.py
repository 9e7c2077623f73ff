"""The ``read_file`` tool the notices point the model at: its definition and what it answers.

The REST API (``GET /tools/read_file``, ``GET /files/read``) and the framework adapters
offer the same tool and answer it from here: :func:`read_page` cuts the page,
:func:`answer_read_file` (and :func:`aanswer_read_file`) give the model its answer,
problems included, so the agent's run goes on.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reduction_app.engine.errors import PathEscapeError
from reduction_app.engine.messages import ToolInfo

if TYPE_CHECKING:
    from reduction_app.engine._storage._backends import Backend
    from reduction_app.engine.config import ReductionConfig

__all__ = [
    "DEFAULT_READ_LIMIT",
    "READ_FILE_DESCRIPTION",
    "READ_FILE_PARAMETERS",
    "ReadPage",
    "aanswer_read_file",
    "answer_read_file",
    "numbered_lines",
    "read_file_backends",
    "read_file_tool",
    "read_page",
]

READ_FILE_DESCRIPTION = (
    "Read a file that holds tool output moved out of the conversation to save context. "
    "Notices such as <persisted-output> name the path. Returns numbered lines; read large "
    "files a part at a time with offset (0-based line) and limit (number of lines)."
)
READ_FILE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The path given in the notice."},
        "offset": {"type": "integer", "minimum": 0, "description": "First line to read, from 0."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read."},
    },
    "required": ["path"],
}
DEFAULT_READ_LIMIT = 2000
"""Lines a read returns when the model names no ``limit``."""


def read_file_tool(name: str = "read_file") -> ToolInfo:
    """The tool's definition, under ``name`` (the config's ``read_file_tool_name``)."""
    return ToolInfo(name=name, description=READ_FILE_DESCRIPTION, parameters=READ_FILE_PARAMETERS)


def numbered_lines(content: str, offset: int, limit: int) -> tuple[str, int]:
    """``limit`` lines of ``content`` from line ``offset`` (0-based), each as
    ``<number>\\t<text>\\n`` (numbers from 1), and the number of lines in all.

    Lines end at ``\\n``; the ``\\r`` of a ``\\r\\n`` ending is a line ending too and is
    not shown, and a final ``\\n`` starts no new line (the exact content is the file's
    raw text)."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    chosen = lines[offset : offset + limit]
    body = "".join(
        f"{offset + i + 1}\t{line.removesuffix(chr(13))}\n" for i, line in enumerate(chosen)
    )
    return body, len(lines)


@dataclass(frozen=True, kw_only=True)
class ReadPage:
    """One page of a file, as the ``read_file`` tool gives it."""

    path: str
    offset: int
    """The first line shown, from 0."""
    limit: int
    lines: str
    """The numbered lines (:func:`numbered_lines`)."""
    total_lines: int
    """Lines in the whole file."""
    next_offset: int
    """The offset to read on from: past the last line shown."""

    @property
    def answer(self) -> str:
        """The page as the model reads it: the numbered lines, then a last line saying how
        many lines follow and where to read on; a sentence when no line is at ``offset``."""
        if not self.lines:
            return f"{self.path} has {self.total_lines} lines; none from offset {self.offset}."
        if self.next_offset >= self.total_lines:
            return self.lines
        left = self.total_lines - self.next_offset
        return f"{self.lines}[{left} more lines; read on with offset={self.next_offset}]\n"


def read_page(
    content: str, path: str = "", *, offset: int = 0, limit: int = DEFAULT_READ_LIMIT
) -> ReadPage:
    """``limit`` lines of ``content`` (the file at ``path``) from line ``offset``."""
    lines, total = numbered_lines(content, offset, limit)
    shown = lines.count("\n")  # one per numbered line: a line never holds a "\n"
    return ReadPage(
        path=path,
        offset=offset,
        limit=limit,
        lines=lines,
        total_lines=total,
        next_offset=offset + shown,
    )


def read_file_backends(config: ReductionConfig) -> list[Backend]:
    """Every backend an offload of ``config`` may be in: its own, then each tool's, once
    each."""
    found: list[Backend] = []
    for backend in [config.backend, *(t.backend for t in config.tool_config.values())]:
        if backend is not None and all(backend is not b for b in found):
            found.append(backend)
    return found


_BAD_RANGE = "invalid arguments: offset must be an integer >= 0 and limit >= 1"


def _bad_range(offset: object, limit: object) -> bool:
    def whole(value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    return not (whole(offset) and whole(limit) and offset >= 0 and limit >= 1)  # type: ignore[operator]


def _not_found(path: str, escaped: PathEscapeError | None) -> str:
    return str(escaped) if escaped is not None else f"file not found: {path}"


def answer_read_file(
    source: ReductionConfig | Iterable[Backend],
    path: str,
    *,
    offset: int = 0,
    limit: int = DEFAULT_READ_LIMIT,
) -> str:
    """What the ``read_file`` tool answers the model: the page of the file at ``path``
    (:attr:`ReadPage.answer`), read from the first backend of ``source`` (a config's
    backends, :func:`read_file_backends`, or the backends given) that holds it.

    Problems are answered, never raised, so the model can correct its call: an offset
    or limit out of range, a path no backend holds (``file not found: <path>``), a path
    outside a backend's storage root (the :class:`PathEscapeError` message). A backend
    whose ``read`` is a coroutine function raises ``TypeError``: use
    :func:`aanswer_read_file`."""
    if _bad_range(offset, limit):
        return _BAD_RANGE
    escaped: PathEscapeError | None = None
    for backend in _backends(source):
        try:
            content = backend.read(path)
        except FileNotFoundError:
            continue
        except PathEscapeError as exc:
            escaped = exc
            continue
        if inspect.isawaitable(content):
            close = getattr(content, "close", None)
            if close is not None:
                close()  # never awaited: closed, so no warning says it was forgotten
            raise TypeError(f"the backend of {path} is async: use aanswer_read_file")
        return read_page(content, path, offset=offset, limit=limit).answer
    return _not_found(path, escaped)


async def aanswer_read_file(
    source: ReductionConfig | Iterable[Backend],
    path: str,
    *,
    offset: int = 0,
    limit: int = DEFAULT_READ_LIMIT,
) -> str:
    """:func:`answer_read_file` for asyncio: backends may read with a coroutine."""
    if _bad_range(offset, limit):
        return _BAD_RANGE
    escaped: PathEscapeError | None = None
    for backend in _backends(source):
        try:
            content = backend.read(path)
            if inspect.isawaitable(content):
                content = await content
        except FileNotFoundError:
            continue
        except PathEscapeError as exc:
            escaped = exc
            continue
        return read_page(str(content), path, offset=offset, limit=limit).answer
    return _not_found(path, escaped)


def _backends(source: ReductionConfig | Iterable[Backend]) -> list[Backend]:
    if isinstance(source, Iterable):
        return list(source)
    return read_file_backends(source)
