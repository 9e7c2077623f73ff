"""Putting reduced tool results back as they were, from the offload files their
placeholders and notices name (:func:`offload_paths`, :func:`restore_results`), so a
recorded conversation can be replayed as the agent lived it. A result whose file cannot
be read stays as it is; arguments a custom clear handler rewrote are not restored.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence

from reduction_app.engine.access import (
    AnyMessage,
    classify,
    read_result,
    result_ids,
    write_result,
)
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats.tool_parts import parts_from_json
from reduction_app.engine.notices import clear_placeholder_path, truncation_file_path
from reduction_app.engine.tool_io import ToolOutputPart, ToolResult

__all__ = ["offload_paths", "restore_results"]


def _named_path(result: ToolResult) -> str | None:
    for part in result.parts:
        if part.type != "text":
            continue
        path = clear_placeholder_path(part.text) or truncation_file_path(part.text)
        if path is not None:
            return path
    return None


def _results(msg: AnyMessage) -> Iterator[tuple[str, int, ToolResult, bool]]:
    seen: Counter[str] = Counter()
    for call_id in result_ids(msg):
        occurrence = seen[call_id]
        seen[call_id] += 1
        read = read_result(msg, call_id, occurrence)
        if read is not None:
            yield call_id, occurrence, read[0], read[1]


def offload_paths(messages: Sequence[AnyMessage]) -> set[str]:
    """Every offload file the reduced results of ``messages`` name."""
    paths = set()
    for msg in messages:
        if classify(msg) == "tool_result":
            for _, _, result, _ in _results(msg):
                path = _named_path(result)
                if path is not None:
                    paths.add(path)
    return paths


def _original_parts(content: str, reduced: ToolResult) -> tuple[ToolOutputPart, ...]:
    # The engine writes one text part raw and anything else as JSON; a reduced result
    # keeps the original's number of parts, which tells the two apart.
    if len(reduced.parts) > 1:
        try:
            return parts_from_json(json.loads(content), "offload")
        except (ValueError, FormatError):
            pass
    return (ToolOutputPart.of_text(content),)


def restore_results(
    messages: Sequence[AnyMessage], read: Callable[[str], str | None] | Mapping[str, str]
) -> list[AnyMessage]:
    """``messages`` with every reduced result whose file ``read`` returns put back.

    ``read`` is a mapping of path to content, or a callable returning the content (or
    ``None``, or raising ``FileNotFoundError``) for a path. New values are returned; the
    messages passed in are not changed.
    """
    lookup = read.get if isinstance(read, Mapping) else read
    out: list[AnyMessage] = []
    for msg in messages:
        new = msg
        if classify(msg) == "tool_result":
            for call_id, occurrence, result, from_content in list(_results(msg)):
                path = _named_path(result)
                if path is None:
                    continue
                try:
                    content = lookup(path)
                except FileNotFoundError:
                    content = None
                if content is None:
                    continue
                parts = _original_parts(content, result)
                plain = from_content and len(parts) == 1 and parts[0].type == "text"
                new = write_result(new, call_id, parts, plain, occurrence)
        out.append(new)
    return out
