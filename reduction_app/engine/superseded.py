"""Which tool results a later call has superseded: the rule of the opt-in
``clear_superseded`` strategy (docs/behaviour.md §4.12).

A result is superseded when a later call in the conversation, whose own result is in
context whole (present, not cleared, not truncated), shows the same thing again:

* the same tool with the same arguments (equal as parsed JSON when both parse, else as
  text); or
* for a call that reads a file, a later call that reads the whole of that file.

A call reads a file when its arguments are a JSON object naming it in exactly one of
``path``, ``file_path`` or ``filename`` and either its tool reads files (the names in
:data:`READ_TOOLS`, the config's ``read_file_tool_name``, or a ``tool_config`` entry
with ``reads_files=True``) or it is a text editor's ``"command": "view"``. It reads the
whole file when it has no other argument (besides that ``command``). A tool whose entry
says ``reads_files=False`` never reads a file. Paths compare as given, character for
character.

This module only finds the superseded calls, in one pass over the conversation from the
start of the clear range; the clear phase (``clear.py``) clears them and decides when a
pass stops.
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
    is_cleared,
    is_processed,
    read_result,
    tool_calls_of,
)
from reduction_app.engine.notices import truncation_file_path
from reduction_app.engine.tool_io import ToolResult

__all__ = ["PATH_KEYS", "READ_TOOLS", "Readers", "superseded_calls"]

READ_TOOLS: frozenset[str] = frozenset({"read_file", "view_file", "open_file", "cat"})
"""Tools that read files whatever their other arguments say."""
PATH_KEYS: tuple[str, ...] = ("path", "file_path", "filename")
"""The arguments that name the file a read-like call reads."""
_VIEW = "view"
"""The ``command`` of a text editor tool (OpenHands' and SWE-agent's
``str_replace_editor``, Anthropic's text editor) that reads a file."""

Key = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class Readers:
    """Which tools read files, from a config."""

    tools: frozenset[str]
    """Tools whose calls read the file they name."""
    never: frozenset[str]
    """Tools whose calls never read a file, not even as ``"command": "view"``."""

    @classmethod
    def of(cls, read_file_tool_name: str, tool_config: Mapping[str, Any]) -> Readers:
        own = {name: getattr(entry, "reads_files", None) for name, entry in tool_config.items()}
        never = frozenset(name for name, reads in own.items() if reads is False)
        tools = (READ_TOOLS | {read_file_tool_name} | {n for n, r in own.items() if r}) - never
        return cls(tools=frozenset(tools), never=never)


def _arguments(text: str) -> tuple[str, str, Any]:
    """The arguments as a comparable string (tagged, so JSON never equals raw text) and
    the parsed value (``None`` when they are not JSON)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return "text", text, None
    return "json", json.dumps(parsed, sort_keys=True, ensure_ascii=False), parsed


def _file_read(name: str, parsed: Any, readers: Readers) -> tuple[str, bool] | None:
    """The file a call reads and whether it reads all of it; ``None`` when it reads none."""
    if not isinstance(parsed, dict) or name in readers.never:
        return None
    named = [key for key in PATH_KEYS if key in parsed]
    path = parsed[named[0]] if len(named) == 1 else None
    if not isinstance(path, str) or not path:
        return None
    others = len(parsed) - 1
    if parsed.get("command") == _VIEW:
        others -= 1
    elif name not in readers.tools:
        return None
    return path, others == 0


def _keys(ref: CallRef, readers: Readers) -> tuple[tuple[Key, ...], tuple[Key, ...]]:
    """What a call can be superseded on, and what it supersedes earlier calls on."""
    tag, arguments, parsed = _arguments(ref.arguments)
    same: Key = ("same-" + tag, ref.name, arguments)
    read = _file_read(ref.name, parsed, readers)
    if read is None:
        return (same,), (same,)
    file: Key = ("file", "", read[0])
    return (same, file), ((same, file) if read[1] else (same,))


def _uncut(result: ToolResult) -> bool:
    """Whether the result is not a truncation notice: only a whole copy supersedes. Every
    engine notice ends with its closing tag, so the full check rarely runs."""
    return not any(
        p.type == "text"
        and p.text.endswith("</persisted-output>")
        and truncation_file_path(p.text) is not None
        for p in result.parts
    )


def superseded_calls(
    messages: Sequence[AnyMessage], start: int, end: int, readers: Readers
) -> dict[int, Collection[int]]:
    """The calls in ``messages[start:end]`` whose results a later call superseded: message
    index → the positions (``CallRef.position``) of its superseded calls, in order.

    Flagged messages are left out (the clear phase went through them). One pass from
    ``start`` to the end of the conversation, so the superseding call may sit in the
    retained rounds; a map keeps, per key, the latest call whose result is whole.
    """
    latest: dict[Key, int] = {}
    candidates: list[tuple[int, int, int, tuple[Key, ...]]] = []
    order = 0
    for idx in range(start, len(messages)):
        msg = messages[idx]
        if not tool_calls_of(msg):
            continue
        in_range = idx < end and not is_processed(msg)
        for ref, slot in call_results(messages, idx):
            if slot is None:
                continue
            read = read_result(messages[slot[0]], ref.call_id, slot[1])
            if read is None or is_cleared(read[0]):
                continue
            order += 1
            old_keys, new_keys = _keys(ref, readers)
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
