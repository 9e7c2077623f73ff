"""Tool output parts: how streamed chunks join, and how parts move between tool results and
message content.

Unlike the reference, conversions between tool output parts and chat message parts keep
everything (part ``extra``, image ``detail``, file ``name``, inline data), so a
cleared-then-restored result loses nothing. What gets written to a backend (decision 9)
is ``offload_json.py``'s; its functions are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from reduction_app.engine.errors import MessageError
from reduction_app.engine.messages import MessagePart
from reduction_app.engine.offload_json import media_to_json, part_to_json, stringify
from reduction_app.engine.tool_io import ToolOutputPart, ToolResult

__all__ = [
    "concat_tool_results",
    "flatten_tool_results",
    "media_to_json",
    "message_part_to_tool_part",
    "part_to_json",
    "stringify",
    "text_length",
    "text_prefix",
    "tool_part_to_message_part",
]


def text_length(parts: Iterable[ToolOutputPart]) -> int:
    """Characters in the text parts."""
    return sum(len(p.text) for p in parts if p.type == "text")


def _merge_extra(a: Mapping[str, Any], b: Mapping[str, Any]) -> Mapping[str, Any]:
    if not b:
        return a
    if not a:
        return b
    return {**a, **b}


def concat_tool_results(chunks: Sequence[ToolResult | None]) -> list[ToolOutputPart]:
    """Join streamed chunks: adjacent text parts merge, other parts stay in place.

    The same non-text type appearing in two different chunks is a conflict (the
    reference cannot tell which one the tool meant), raised as :class:`MessageError`.
    """
    merged: list[ToolOutputPart] = []
    seen: dict[str, int] = {}
    for index, chunk in enumerate(chunks):
        if chunk is None:
            continue
        for part in chunk.parts:
            if part.type == "text":
                if merged and merged[-1].type == "text":
                    last = merged[-1]
                    merged[-1] = replace(
                        last, text=last.text + part.text, extra=_merge_extra(last.extra, part.extra)
                    )
                else:
                    merged.append(part)
                continue
            first = seen.setdefault(part.type, index)
            if first != index:
                raise MessageError(
                    f"conflicting {part.type} parts found in chunk {first} and chunk {index}"
                )
            merged.append(part)
    return merged


def flatten_tool_results(chunks: Iterable[ToolResult | None]) -> list[ToolOutputPart]:
    """All parts of all chunks laid end to end, unmerged."""
    return [part for chunk in chunks if chunk is not None for part in chunk.parts]


def text_prefix(chunk: ToolResult | None, budget: int) -> ToolResult | None:
    """The start of ``chunk`` holding at most ``budget`` characters of text.

    Parts are taken in order; non-text parts pass; the first text part that does
    not fit is cut (dropped if the cut leaves nothing) and the walk stops there. A
    zero budget still keeps the non-text parts before the first text part: with the
    strict trigger a stream can reach the limit exactly, and a media-only chunk after
    that passes whole, so media ahead of the cut should too.
    """
    if chunk is None:
        return None
    kept: list[ToolOutputPart] = []
    left = budget
    for part in chunk.parts:
        if part.type != "text":
            kept.append(part)
            continue
        if left <= 0:
            break
        if len(part.text) <= left:
            kept.append(part)
            left -= len(part.text)
            continue
        kept.append(replace(part, text=part.text[:left]))
        break
    return ToolResult(parts=tuple(kept)) if kept else None


_TO_TOOL = {
    "text": "text",
    "image_url": "image",
    "audio_url": "audio",
    "video_url": "video",
    "file_url": "file",
    "tool_search_result": "tool_search_result",
}
_TO_MESSAGE = {v: k for k, v in _TO_TOOL.items()}


def message_part_to_tool_part(part: MessagePart) -> ToolOutputPart:
    """A chat message part as a tool output part, keeping every field."""
    kind = _TO_TOOL.get(part.type)
    if kind is None:
        raise MessageError(f"unknown msg part type: {part.type}")
    return ToolOutputPart(
        type=kind,  # type: ignore[arg-type]
        text=part.text,
        media=part.media,
        tool_search_result=part.tool_search_result,
        extra=part.extra,
    )


def tool_part_to_message_part(part: ToolOutputPart) -> MessagePart:
    """A tool output part as a chat message part, keeping every field."""
    kind = _TO_MESSAGE[part.type]
    if kind.endswith("_url") and part.media is None:
        raise MessageError(f"{part.type} part has no media")
    return MessagePart(
        type=kind,  # type: ignore[arg-type]
        text=part.text,
        media=part.media,
        tool_search_result=part.tool_search_result,
        extra=part.extra,
    )
