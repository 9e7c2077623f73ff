"""The MCP endpoint's tools, declared once each (name, description, arguments), and
the work each does for one workspace: plain Django, no MCP and no asyncio.

``read_file`` answers as the engine's read tool does, from what ``GET
/api/v1/files/read`` serves; what the model can correct raises :class:`ToolProblem`
(a tool error), a failing storage :class:`StorageFailed`. The protocol around them is
``reduction_app.mcp.server``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reduction_app.cursors import MAX_ID
from reduction_app.engine import (
    DEFAULT_READ_LIMIT,
    READ_FILE_DESCRIPTION,
    READ_FILE_PARAMETERS,
    PathEscapeError,
    read_page,
)
from reduction_app.models import OffloadedFile, Workspace
from reduction_app.records import services
from reduction_app.records.api import MAX_READ_LINES
from reduction_app.records.selectors import file_get, file_list
from reduction_app.records.storage import (
    DamagedContent,
    offload_storage,
    read_verified,
    stored_lines,
)

MAX_SEARCHED_FILES = 200
"""Files one search reads, newest first; the answer says when more were left out."""
MAX_MATCHES = 100
"""Matching lines one search answers; the answer says when it stopped there."""
MAX_MATCH_CHARS = 300
"""Characters of a matching line shown; the rest is cut with an ellipsis."""
LIST_PAGE = 50
MAX_LIST_PAGE = 200


class ToolProblem(Exception):
    """What the model asked cannot be answered as asked; the message says why."""


class StorageFailed(Exception):
    """The offload storage failed or holds damaged content; the message names the path,
    never the server's own paths."""


_READ_PROPERTIES = READ_FILE_PARAMETERS["properties"]
_CONVERSATION = (
    "The conversation id the files were offloaded under; leave it out to use the whole "
    "workspace (a path two conversations share holds the same content)."
)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFileArgs(_Args):
    path: str = Field(description=_READ_PROPERTIES["path"]["description"], min_length=1)
    offset: int = Field(0, ge=0, le=MAX_ID, description=_READ_PROPERTIES["offset"]["description"])
    limit: int = Field(
        DEFAULT_READ_LIMIT,
        ge=1,
        le=MAX_READ_LINES,
        description=_READ_PROPERTIES["limit"]["description"],
    )
    conversation_id: str | None = Field(None, description=_CONVERSATION)


class SearchFilesArgs(_Args):
    pattern: str = Field(
        min_length=1,
        description="The text to find in each line, compared without regard to case "
        "(plain text, not a regular expression).",
    )
    conversation_id: str | None = Field(None, description=_CONVERSATION)


class ListFilesArgs(_Args):
    conversation_id: str | None = Field(None, description=_CONVERSATION)
    cursor: str | None = Field(
        None, description="The cursor the previous answer gave, to list the next files."
    )
    limit: int = Field(
        LIST_PAGE, ge=1, le=MAX_LIST_PAGE, description="How many files to list at most."
    )


def _refuse_escape(path: str) -> None:
    """A path with a ``..`` piece names nothing the engine offloads: refused with the
    engine's own message, as its backends refuse it."""
    if ".." in PurePosixPath(path.replace("\\", "/")).parts:
        raise ToolProblem(str(PathEscapeError(path)))


def _file(workspace: Workspace, path: str, conversation_id: str | None) -> OffloadedFile:
    _refuse_escape(path)
    row = file_get(workspace=workspace, path=path, conversation=conversation_id)
    if row is None:
        where = f" in conversation {conversation_id}" if conversation_id else ""
        raise ToolProblem(f"file not found: {path}{where}")
    return row


def _damaged(row: OffloadedFile) -> StorageFailed:
    return StorageFailed(
        f"the stored content of {row.path} is damaged (it does not match its recorded "
        "SHA-256); it is not served"
    )


def read_file(workspace: Workspace, args: ReadFileArgs) -> str:
    """The page the engine's read tool gives: the numbered lines of ``GET
    /api/v1/files/read``, then, when lines follow, how many and the offset to read on
    from."""
    row = _file(workspace, args.path, args.conversation_id)
    try:
        content = read_verified(offload_storage(), row.storage_name, row.sha256)
    except DamagedContent as exc:
        raise _damaged(row) from exc
    except OSError as exc:
        raise StorageFailed(f"the stored content of {row.path} cannot be read") from exc
    page = read_page(
        content.decode("utf-8", "surrogatepass"), row.path, offset=args.offset, limit=args.limit
    )
    services.file_mark_read(file=row)
    return page.answer


class _Hashing:
    """A stored file read through, hashed as it goes: a search shows no line of content
    that turns out damaged."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.digest = hashlib.sha256()

    def read(self, size: int = -1, /) -> bytes:
        chunk: bytes = self.handle.read(size)
        self.digest.update(chunk)
        return chunk


def _shown(text: str) -> str:
    return text if len(text) <= MAX_MATCH_CHARS else text[:MAX_MATCH_CHARS] + "…"


def search_files(workspace: Workspace, args: SearchFilesArgs) -> str:
    """The lines holding ``pattern`` (casefolded, as the dashboard's file search
    compares), grouped by file, numbered as ``read_file`` numbers them; at most
    :data:`MAX_MATCHES` lines from the :data:`MAX_SEARCHED_FILES` newest files, and the
    answer says when either cap was reached."""
    rows = file_list(workspace=workspace, conversation=args.conversation_id)
    # A path every conversation names is one content: searched once, under its newest row.
    files: list[OffloadedFile] = []
    seen: set[str] = set()
    total = 0
    for row in rows.iterator(chunk_size=500):
        if row.path in seen:
            continue
        seen.add(row.path)
        total += 1
        if len(files) < MAX_SEARCHED_FILES:
            files.append(row)
    needle = args.pattern.casefold()
    storage = offload_storage()
    found: list[tuple[str, list[str]]] = []
    matches, damaged = 0, []
    stopped = False
    for row in files:
        hits: list[str] = []
        whole = False
        try:
            with storage.open(row.storage_name, "rb") as handle:
                reader = _Hashing(handle)
                for number, text in enumerate(stored_lines(reader), start=1):
                    if needle in text.casefold():
                        if matches + len(hits) == MAX_MATCHES:
                            stopped = True
                            break
                        hits.append(f"  {number}: {_shown(text)}")
                whole = not stopped
        except OSError as exc:
            raise StorageFailed(f"the stored content of {row.path} cannot be read") from exc
        if whole and reader.digest.hexdigest() != row.sha256:
            damaged.append(row.path)
            continue
        if hits:
            found.append((row.path, hits))
            matches += len(hits)
        if stopped:
            break
    return _search_answer(args, found, matches, stopped, len(files), total, damaged)


def _search_answer(
    args: SearchFilesArgs,
    found: list[tuple[str, list[str]]],
    matches: int,
    stopped: bool,
    searched: int,
    total: int,
    damaged: list[str],
) -> str:
    scope = f"conversation {args.conversation_id}" if args.conversation_id else "the workspace"
    if total == 0:
        return f"No offloaded files in {scope}.\n"
    head = (
        f"{matches} matching lines in {len(found)} files for {args.pattern!r} "
        f"(case-insensitive, {scope}); read_file with offset=<line number - 1> reads from "
        "a line on."
    )
    lines = [head]
    for path, hits in found:
        lines.append(path)
        lines.extend(hits)
    if stopped:
        lines.append(
            f"[stopped at {MAX_MATCHES} matching lines: search for something longer, or "
            "in one conversation]"
        )
    if searched < total:
        lines.append(f"[searched the {searched} newest of {total} files]")
    if damaged:
        lines.append(f"[left out, stored content damaged: {', '.join(damaged)}]")
    return "\n".join(lines) + "\n"


def _position(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    if not (cursor.isascii() and cursor.isdigit() and 0 < int(cursor) <= MAX_ID):
        raise ToolProblem("cursor: not a cursor list_files gave; leave it out to start over")
    return int(cursor)


def list_files(workspace: Workspace, args: ListFilesArgs) -> str:
    """One page of the offloaded files, newest first, a line each (path, tool, size in
    characters and tokens, conversation), then the cursor of the next page if any."""
    before = _position(args.cursor)
    rows = file_list(workspace=workspace, conversation=args.conversation_id)
    if before is not None:
        rows = rows.filter(id__lt=before)
    page = list(rows[: args.limit + 1])
    more = len(page) > args.limit
    page = page[: args.limit]
    if not page:
        return "No offloaded files.\n" if before is None else "No more offloaded files.\n"
    lines = ["path\ttool\tchars\ttokens\tconversation"]
    for row in page:
        conversation = row.conversation.client_id if row.conversation is not None else "-"
        tool = row.tool_name or "-"
        lines.append(f"{row.path}\t{tool}\t{row.size_chars}\t{row.tokens}\t{conversation}")
    if more:
        lines.append(f'[more files: call list_files with cursor="{page[-1].pk}"]')
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ToolSpec:
    """One tool as offered: its name, what the model reads about it, its arguments (whose
    JSON Schema is the tool's input schema) and the work it does."""

    name: str
    description: str
    arguments: type[_Args]
    run: Callable[[Workspace, Any], str]

    def parse(self, raw: dict[str, Any] | None) -> _Args:
        """The arguments, checked; :class:`ToolProblem` naming each bad one."""
        try:
            return self.arguments.model_validate(raw or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors()
            )
            raise ToolProblem(f"invalid arguments: {problems}") from None


TOOLS = (
    ToolSpec(
        name="read_file",
        description=READ_FILE_DESCRIPTION
        + " When lines follow, the last line says how many and the offset to read on from.",
        arguments=ReadFileArgs,
        run=read_file,
    ),
    ToolSpec(
        name="search_files",
        description="Find the lines holding a piece of text in the offloaded files (of one "
        "conversation, or of the workspace): each file's path, then the line numbers and "
        f"lines. At most {MAX_MATCHES} lines from the {MAX_SEARCHED_FILES} newest files; "
        "the answer says when it stopped.",
        arguments=SearchFilesArgs,
        run=search_files,
    ),
    ToolSpec(
        name="list_files",
        description="List offloaded files, newest first: path, the tool whose output it "
        "holds, its size in characters and tokens, and its conversation. When more follow, "
        "the last line gives a cursor for the next call.",
        arguments=ListFilesArgs,
        run=list_files,
    ),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}
