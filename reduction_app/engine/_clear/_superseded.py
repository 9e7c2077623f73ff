"""Which tool results a later call has superseded: the rule of the opt-in
``clear_superseded`` strategy (docs/behaviour.md §4.12), and the tool, command and
argument names it lists, once (a test holds the page's lists to them). It finds the
calls; ``_pass`` clears them and ``_phase`` decides when a pass stops.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reduction_app.engine.access import (
    AnyMessage,
    CallRef,
    call_results,
    has_tool_calls,
    is_cleared,
    is_processed,
    read_result,
)
from reduction_app.engine.notices import truncation_file_path
from reduction_app.engine.tool_io import ToolResult

__all__ = [
    "EDIT_COMMANDS",
    "EDIT_TOOLS",
    "FAILED_EDIT_PREFIXES",
    "PATH_KEYS",
    "READ_TOOLS",
    "Readers",
    "superseded_calls",
]

READ_TOOLS: frozenset[str] = frozenset({"read_file", "view_file", "open_file", "cat", "Read"})
"""Tools that read files whatever their other arguments say (``Read`` is Claude Code's)."""
EDIT_TOOLS: frozenset[str] = frozenset(
    {"write_file", "edit_file", "create_file", "Write", "Edit", "MultiEdit"}
)
"""Tools that change the file they name whatever their other arguments say (``Write``,
``Edit`` and ``MultiEdit`` are Claude Code's, naming it in ``file_path``)."""
PATH_KEYS: tuple[str, ...] = ("path", "file_path", "filename")
"""The arguments that name the file a call reads or edits."""
_VIEW = "view"
"""The ``command`` of a text editor tool (OpenHands' and SWE-agent's
``str_replace_editor``, Anthropic's ``str_replace_based_edit_tool``) that reads a file."""
EDIT_COMMANDS: frozenset[str] = frozenset({"create", "str_replace", "insert", "undo_edit"})
"""The ``command`` values with which those text editor tools change a file."""
FAILED_EDIT_PREFIXES: tuple[str, ...] = ("ERROR:", "<tool_use_error>")
"""How the output of an edit that changed nothing starts: OpenHands' editor (``ERROR:``,
e.g. "No replacement was performed") and Claude Code's tools (``<tool_use_error>``).
The file is as the earlier read showed it, so such an edit supersedes no read."""

Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Readers:
    """Which tools read files and which edit them, from a config."""

    tools: frozenset[str]
    """Tools whose calls read the file they name."""
    never: frozenset[str]
    """Tools whose calls never read a file, not even as ``"command": "view"``."""
    edit_tools: frozenset[str] = EDIT_TOOLS
    """Tools whose calls edit the file they name."""
    never_edit: frozenset[str] = frozenset()
    """Tools whose calls never edit a file, not even with an edit ``command``."""

    @classmethod
    def of(cls, read_file_tool_name: str, tool_config: Mapping[str, Any]) -> Readers:
        reads = {name: getattr(entry, "reads_files", None) for name, entry in tool_config.items()}
        never = frozenset(name for name, says in reads.items() if says is False)
        tools = (READ_TOOLS | {read_file_tool_name} | {n for n, r in reads.items() if r}) - never
        edits = {name: getattr(entry, "edits_files", None) for name, entry in tool_config.items()}
        never_edit = frozenset(name for name, says in edits.items() if says is False)
        edit_tools = (EDIT_TOOLS | {n for n, e in edits.items() if e}) - never_edit
        return cls(
            tools=frozenset(tools),
            never=never,
            edit_tools=frozenset(edit_tools),
            never_edit=never_edit,
        )


def _arguments(text: str) -> tuple[str, str, Any]:
    """The arguments as a comparable string (tagged, so JSON never equals raw text) and
    the parsed value (``None`` when they are not JSON)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return "text", text, None
    return "json", json.dumps(parsed, sort_keys=True, ensure_ascii=False), parsed


def _file_named(parsed: Any) -> str | None:
    """The file a call's parsed arguments name in exactly one of :data:`PATH_KEYS`."""
    if not isinstance(parsed, dict):
        return None
    named = [key for key in PATH_KEYS if key in parsed]
    path = parsed[named[0]] if len(named) == 1 else None
    return path if isinstance(path, str) and path else None


def _reads_whole(name: str, parsed: dict[str, Any], readers: Readers) -> bool | None:
    """Whether a call naming a file reads all of it; ``None`` when it reads none of it."""
    if name in readers.never:
        return None
    others = len(parsed) - 1
    if parsed.get("command") == _VIEW:
        others -= 1
    elif name not in readers.tools:
        return None
    return others == 0


def _edits(name: str, parsed: dict[str, Any], readers: Readers) -> bool:
    """Whether a call naming a file changes it."""
    if name in readers.never_edit:
        return False
    return name in readers.edit_tools or parsed.get("command") in EDIT_COMMANDS


def _keys(ref: CallRef, readers: Readers) -> tuple[tuple[Key, ...], tuple[Key, ...], Key | None]:
    """What a call can be superseded on, what it supersedes earlier calls on when its
    result is whole, and what it supersedes earlier calls on as soon as it has a result
    (the file it edits)."""
    tag, arguments, parsed = _arguments(ref.arguments)
    same: Key = ("same-" + tag, ref.name, arguments)
    path = _file_named(parsed)
    if path is None:
        return (same,), (same,), None
    # A whole read and an edit end the same thing: what earlier reads of the file showed.
    file: Key = ("file", "", path)
    edit = file if _edits(ref.name, parsed, readers) else None
    whole = _reads_whole(ref.name, parsed, readers)
    if whole is None:
        return (same,), (same,), edit
    return (same, file), ((same, file) if whole else (same,)), edit


def _uncut(result: ToolResult) -> bool:
    """Whether the result is not a truncation notice: only a whole copy supersedes. Every
    engine notice ends with its closing tag, so the full check rarely runs."""
    return not any(
        p.type == "text"
        and p.text.endswith("</persisted-output>")
        and truncation_file_path(p.text) is not None
        for p in result.parts
    )


def _failed(result: ToolResult) -> bool:
    """Whether an edit's result says it changed nothing (its first text)."""
    text = next((p.text for p in result.parts if p.type == "text"), "")
    return text.lstrip().startswith(FAILED_EDIT_PREFIXES)


def superseded_calls(
    messages: Sequence[AnyMessage], start: int, end: int, readers: Readers
) -> dict[int, Collection[int]]:
    """The calls in ``messages[start:end]`` whose results a later call superseded: message
    index → the positions (``CallRef.position``) of its superseded calls, in order.

    Flagged messages are left out (the clear phase went through them). One pass from
    ``start`` to the end of the conversation, so the superseding call may sit in the
    retained rounds; a map keeps, per key, the latest call whose result is whole (or, for
    an edit, present).
    """
    latest: dict[Key, int] = {}
    candidates: list[tuple[int, int, int, tuple[Key, ...]]] = []
    order = 0
    for idx in range(start, len(messages)):
        msg = messages[idx]
        if not has_tool_calls(msg):
            continue
        in_range = idx < end and not is_processed(msg)
        for ref, slot in call_results(messages, idx):
            if slot is None:
                continue
            read = read_result(messages[slot[0]], ref.call_id, slot[1])
            if read is None:
                continue
            order += 1
            old_keys, new_keys, edit = _keys(ref, readers)
            if edit is not None and not _failed(read[0]):
                latest[edit] = order
            if is_cleared(read[0]):
                continue
            if _uncut(read[0]):
                for key in new_keys:
                    latest[key] = order
            if in_range:
                candidates.append((idx, ref.position, order, old_keys))
    found: dict[int, list[int]] = {}
    for idx, position, seen, keys in candidates:
        if any(latest.get(key, 0) > seen for key in keys):
            found.setdefault(idx, []).append(position)
    return dict(found)
