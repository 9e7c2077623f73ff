"""OpenAI Responses content parts: a message's ``content`` and a function output's ``output``.

Owned here: ``input_text``, ``output_text``, ``input_image``, ``input_file``,
``input_audio`` and ``refusal`` parts, to and from content blocks (and, inside a
``function_call_output``, to and from ToolResultContent). How parts group into
items and items into messages is :mod:`.responses`'s business.
"""

from __future__ import annotations

from typing import Any

from reduction_app.engine.blocks import (
    AssistantGenText,
    ContentBlock,
    RawBlock,
    ToolResultContent,
    UserInputAudio,
    UserInputFile,
    UserInputImage,
    UserInputText,
)
from reduction_app.engine.errors import FormatError
from reduction_app.engine.formats._common import (
    AUDIO_FORMAT,
    AUDIO_MIME,
    LIST,
    NULL,
    STR,
    as_object,
    check_fields,
    copy_json,
    join_nullable,
    join_str,
    keep,
    req_object,
    req_str,
    restore,
    split_nullable,
    split_str,
)
from reduction_app.engine.messages import Media

__all__ = [
    "PART_TYPES",
    "checked",
    "is_part",
    "part_from",
    "part_to",
    "result_part_from",
    "result_part_to",
]

_P = "responses."
# Every field of each content part type.
_FIELDS: dict[str, frozenset[str]] = {
    "input_text": frozenset({"type", "text"}),
    "output_text": frozenset({"type", "text", "annotations", "logprobs"}),
    "input_image": frozenset({"type", "image_url", "file_id", "detail"}),
    "input_file": frozenset({"type", "file_id", "file_data", "file_url", "filename"}),
    "input_audio": frozenset({"type", "input_audio"}),
    "refusal": frozenset({"type", "refusal"}),
}
PART_TYPES = frozenset(_FIELDS)
# The part types a function_call_output may hold.
_OUTPUT_TYPES = frozenset({"input_text", "input_image", "input_file"})


def checked(
    raw: Any, allowed: frozenset[str], fields: dict[str, frozenset[str]], where: str, what: str
) -> tuple[dict[str, Any], str]:
    """An object with a known ``type`` and only that type's ``fields``, and the type."""
    obj = as_object(raw, where)
    kind = req_str(obj, "type", where)
    if kind not in allowed:
        raise FormatError(f"{where}.type", f"unknown {what} type {kind!r}")
    check_fields(obj, fields[kind], where)
    return obj, kind


def part_from(raw: Any, where: str) -> ContentBlock:
    """One part of a message's ``content`` list."""
    obj, kind = checked(raw, PART_TYPES, _FIELDS, where, "part")
    if kind in ("input_text", "output_text"):
        text = req_str(obj, "text", where)
        if kind == "input_text":
            return UserInputText(text=text)
        kept = keep(obj, {"annotations": LIST, "logprobs": LIST}, _P, where)
        return AssistantGenText(text=text, extra=kept)
    if kind == "refusal":
        req_str(obj, "refusal", where)
        return RawBlock(data=copy_json(obj, where))
    if kind == "input_audio":
        inner = f"{where}.input_audio"
        audio = req_object(obj, "input_audio", where)
        check_fields(audio, {"data", "format"}, inner)
        fmt = req_str(audio, "format", inner)
        if fmt not in AUDIO_MIME:
            raise FormatError(f"{inner}.format", f"unknown audio format {fmt!r}")
        return UserInputAudio(
            media=Media(base64_data=req_str(audio, "data", inner), mime_type=AUDIO_MIME[fmt])
        )
    extra = keep(obj, {"file_id": STR + NULL}, _P, where)
    if kind == "input_image":
        url, url_extra = split_nullable(obj, "image_url", _P, where)
        detail, detail_extra = split_str(obj, "detail", _P, where)
        return UserInputImage(
            media=Media(url=url, detail=detail, extra=extra | url_extra | detail_extra)
        )
    url, url_extra = split_nullable(obj, "file_url", _P, where)
    data, data_extra = split_nullable(obj, "file_data", _P, where)
    name, name_extra = split_str(obj, "filename", _P, where)
    media_extra = extra | url_extra | data_extra | name_extra
    return UserInputFile(media=Media(url=url, base64_data=data, name=name, extra=media_extra))


def result_part_from(raw: Any, where: str) -> ToolResultContent:
    """One part of a ``function_call_output``'s ``output`` list."""
    _, kind = checked(raw, _OUTPUT_TYPES, _FIELDS, where, "output part")
    block = part_from(raw, where)
    if isinstance(block, UserInputText):
        return ToolResultContent(type="text", text=block.text)
    media = block.media if isinstance(block, UserInputImage | UserInputFile) else None
    return ToolResultContent(type="image" if kind == "input_image" else "file", media=media)


def is_part(block: ContentBlock) -> bool:
    """Whether a block dumps as a content part (rather than as an item of its own)."""
    if isinstance(block, RawBlock):
        return block.data.get("type") in PART_TYPES
    return isinstance(
        block, UserInputText | AssistantGenText | UserInputImage | UserInputFile | UserInputAudio
    )


def part_to(block: ContentBlock, where: str) -> dict[str, Any]:
    match block:
        case RawBlock():
            return dict(copy_json(block.data))
        case UserInputText():
            return {"type": "input_text", "text": block.text}
        case AssistantGenText():
            kept = restore(block.extra, ("annotations", "logprobs"), _P)
            return {"type": "output_text", "text": block.text} | kept
        case UserInputAudio():
            media = block.media
            if media.base64_data is None or media.mime_type not in AUDIO_FORMAT:
                raise FormatError(
                    where, "an audio part needs base64_data and a wav or mp3 mime_type"
                )
            audio = {"data": media.base64_data, "format": AUDIO_FORMAT[media.mime_type]}
            return {"type": "input_audio", "input_audio": audio}
        case UserInputImage():
            media, url = block.media, block.media.url
            if url is None and media.base64_data is not None:
                url = f"data:{media.mime_type};base64,{media.base64_data}"
            return (
                {"type": "input_image"}
                | join_nullable(url, media.extra, "image_url", _P)
                | restore(media.extra, ("file_id",), _P)
                | join_str(media.detail, media.extra, "detail", _P)
            )
        case UserInputFile():
            media = block.media
            return (
                {"type": "input_file"}
                | restore(media.extra, ("file_id",), _P)
                | join_nullable(media.base64_data, media.extra, "file_data", _P)
                | join_nullable(media.url, media.extra, "file_url", _P)
                | join_str(media.name, media.extra, "filename", _P)
            )
    raise FormatError(where, f"block type {block.type!r} has no Responses form")


def result_part_to(part: ToolResultContent, where: str) -> dict[str, Any]:
    if part.type == "text":
        return part_to(UserInputText(text=part.text), where)
    if part.media is not None and part.type == "image":
        return part_to(UserInputImage(media=part.media), where)
    if part.media is not None and part.type == "file":
        return part_to(UserInputFile(media=part.media), where)
    raise FormatError(where, f"tool result part type {part.type!r} has no Responses form")
