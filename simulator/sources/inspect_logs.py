"""Inspect AI eval logs (``.json`` and ``.eval``) as OpenAI chat conversations.

Each sample of each epoch becomes one conversation of the log's model, its tools and
per-call usage taken from the sample's ``model`` events. ``.eval`` archives are read from
their bytes; members compressed with Zstandard go through ``zstandard``, since the
standard library reads them only from Python 3.14.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted, as_int, as_object, as_text

__all__ = ["ZIP_MAGIC", "looks_like", "read", "read_zip"]

ZIP_MAGIC = b"PK\x03\x04"
"""How a ``.eval`` log (a ZIP archive) begins."""

_ZSTANDARD = 93  # the ZIP compression method number of Zstandard
_ATTACHMENT = "attachment://"
_ROLES = frozenset({"system", "user", "assistant", "tool"})


def looks_like(data: Any) -> bool:
    """An ``EvalLog``: an ``eval`` object beside ``samples`` or ``version``."""
    return (
        isinstance(data, Mapping)
        and isinstance(data.get("eval"), Mapping)
        and ("samples" in data or "version" in data)
    )


def read(data: Any, *, name: str) -> list[Converted]:
    """The conversations of a ``.json`` log."""
    if not isinstance(data, Mapping):
        raise ImportError_(f"{name}: an Inspect AI log is a JSON object")
    header = as_object(data.get("eval"))
    samples = data.get("samples", [])
    if not isinstance(samples, list):
        raise ImportError_(f"{name}: samples: expected a list, got {type(samples).__name__}")
    return [
        _sample(header, sample, name=name, at=f"samples[{i}].") for i, sample in enumerate(samples)
    ]


def read_zip(raw: bytes, *, name: str) -> list[Converted]:
    """The conversations of a ``.eval`` log, the bytes of a ZIP archive."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as exc:
        raise ImportError_(f"{name}: not a readable .eval log (a ZIP archive): {exc}") from exc
    with archive:
        members = {info.filename: info for info in archive.infolist()}
        if "header.json" in members:
            header = as_object(_member(archive, members["header.json"], raw, name).get("eval"))
        elif "_journal/start.json" in members:
            start = _member(archive, members["_journal/start.json"], raw, name)
            header = as_object(start.get("eval"))
        else:
            raise ImportError_(f"{name}: not an Inspect AI log: no header.json in the archive")
        return [
            _sample(header, _member(archive, info, raw, name), name=name, at=f"{path}: ")
            for path, info in members.items()
            if path.startswith("samples/") and path.endswith(".json")
        ]


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, raw: bytes, name: str) -> Any:
    """One member of the archive, decompressed and decoded as JSON."""
    where = f"{name}: {info.filename}"
    try:
        zstd = info.compress_type == _ZSTANDARD
        content = _zstandard(info, raw) if zstd else archive.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, ValueError, NotImplementedError) as exc:
        raise ImportError_(f"{where}: cannot read from the archive: {exc}") from exc
    try:
        return json.loads(content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{where}: not JSON: {exc}") from exc


def _zstandard(info: zipfile.ZipInfo, raw: bytes) -> bytes:
    """A Zstandard member's content, from the archive's bytes: its local header (30
    bytes, then the name and extra field, whose lengths end it) precedes the data."""
    import zstandard  # only .eval logs need it

    header = raw[info.header_offset : info.header_offset + 30]
    if len(header) < 30 or header[:4] != ZIP_MAGIC:
        raise zipfile.BadZipFile("bad local file header")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    start = info.header_offset + 30 + name_length + extra_length
    data = raw[start : start + info.compress_size]
    if len(data) < info.compress_size:
        raise zipfile.BadZipFile("the archive is truncated")
    try:
        with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
            content = reader.read()
    except zstandard.ZstdError as exc:
        raise zipfile.BadZipFile(f"Zstandard: {exc}") from exc
    if zlib.crc32(content) != info.CRC:
        raise zipfile.BadZipFile("bad CRC-32")
    return content


def _sample(header: Mapping[str, Any], sample: Any, *, name: str, at: str) -> Converted:
    """One sample (``at`` locates it in the file: ``samples[2].`` or
    ``samples/3_epoch_1.json: ``)."""
    if not isinstance(sample, Mapping):
        raise ImportError_(f"{name}: {at.rstrip('.: ')}: expected an object")
    raw = sample.get("messages")
    if not isinstance(raw, list):
        raise ImportError_(f"{name}: {at}messages: expected a list, got {type(raw).__name__}")
    attachments = as_object(sample.get("attachments"))
    messages = [
        _message(msg, f"{name}: {at}messages[{k}]", attachments) for k, msg in enumerate(raw)
    ]
    calls = [e for e in _list(sample.get("events")) if as_object(e).get("event") == "model"]
    prompt: dict[int, int] = {}
    cached: dict[int, int] = {}
    completion: dict[int, int] = {}
    times: dict[int, float] = {}  # Unix time, seconds
    for index, event in _paired(raw, calls):
        usage = as_object(as_object(event.get("output")).get("usage"))
        fresh, read, write = (
            as_int(usage.get(key))
            for key in ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write")
        )
        if fresh is not None:
            prompt[index] = fresh + (read or 0) + (write or 0)
        if read is not None:
            cached[index] = read
        output = as_int(usage.get("output_tokens"))
        if output is not None:
            completion[index] = output
        completed = _time(event.get("completed") or event.get("timestamp"))
        if completed is not None:
            times[index] = completed
    costs = [as_object(u).get("total_cost") for u in as_object(sample.get("model_usage")).values()]
    known = [float(c) for c in costs if isinstance(c, int | float) and not isinstance(c, bool)]
    task, model = header.get("task"), header.get("model")
    label = f"{task if isinstance(task, str) else name}#{sample.get('id')}"
    return Converted(
        label=f"{label}-epoch{sample.get('epoch', 1)}",
        fmt="openai_chat",
        payload={"messages": messages, "tools": _tools(calls)},
        model=model if isinstance(model, str) else "",
        task=f"{task if isinstance(task, str) else name} sample {sample.get('id')}, "
        f"epoch {sample.get('epoch', 1)}",
        prompt_tokens=prompt,
        cached_prompt_tokens=cached,
        completion_tokens=completion,
        call_times=times,
        api_calls=len(calls) if calls else None,
        cost=sum(known) if known else None,
        # Each sample message gives one payload message, in order.
        locations={k: f"{at}messages[{k}]" for k in range(len(messages))},
    )


def _message(msg: Any, where: str, attachments: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(msg, Mapping):
        raise ImportError_(f"{where}: expected an object, got {type(msg).__name__}")
    role = msg.get("role")
    if role not in _ROLES:
        raise ImportError_(f"{where}.role: unknown role {role!r}")
    content = _resolved(as_text(_parts(msg.get("content"), attachments), where), attachments)
    if role == "tool":
        call_id = msg.get("tool_call_id")
        if not isinstance(call_id, str):
            raise ImportError_(f"{where}.tool_call_id: expected a string, got {call_id!r}")
        error = msg.get("error")
        if isinstance(error, Mapping):
            content = f"Error: {error.get('message', '')}"
        return {"role": "tool", "tool_call_id": call_id, "content": content}
    out: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant" and msg.get("tool_calls"):
        out["tool_calls"] = list(_tool_calls(msg["tool_calls"], where))
    return out


def _tool_calls(calls: Any, where: str) -> Iterator[dict[str, Any]]:
    if not isinstance(calls, list):
        raise ImportError_(f"{where}.tool_calls: expected a list, got {type(calls).__name__}")
    for j, call in enumerate(calls):
        at = f"{where}.tool_calls[{j}]"
        if not isinstance(call, Mapping):
            raise ImportError_(f"{at}: expected an object, got {type(call).__name__}")
        for key in ("id", "function"):
            if not isinstance(call.get(key), str):
                raise ImportError_(f"{at}.{key}: expected a string, got {call.get(key)!r}")
        arguments = call.get("arguments")
        if not isinstance(arguments, Mapping):
            raise ImportError_(
                f"{at}.arguments: expected an object, got {type(arguments).__name__}"
            )
        function = {"name": call["function"], "arguments": json.dumps(arguments)}
        yield {"id": call["id"], "type": "function", "function": function}


def _parts(content: Any, attachments: Mapping[str, Any]) -> Any:
    """``content`` with the text of each text part resolved from ``attachments``."""
    if not isinstance(content, list):
        return content
    return [
        {**part, "text": _resolved(part["text"], attachments)}
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        else part
        for part in content
    ]


def _resolved(text: str, attachments: Mapping[str, Any]) -> str:
    """``text``, or the attachment it refers to: Inspect moves long strings out of a
    sample into its ``attachments``, leaving ``attachment://<hash>`` in their place."""
    if text.startswith(_ATTACHMENT):
        found = attachments.get(text[len(_ATTACHMENT) :])
        if isinstance(found, str):
            return found
    return text


def _paired(messages: list[Any], calls: list[Any]) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(index of an assistant message, the model event that produced it)``."""
    replies = [
        (k, as_object(m).get("id"))
        for k, m in enumerate(messages)
        if as_object(m).get("role") == "assistant"
    ]
    by_id: dict[Any, Mapping[str, Any]] = {}
    for event in calls:
        choices = _list(as_object(event.get("output")).get("choices"))
        produced = as_object(as_object(choices[0]).get("message")).get("id") if choices else None
        if isinstance(produced, str):
            by_id[produced] = event
    if any(message_id in by_id for _, message_id in replies):
        yield from ((k, by_id[i]) for k, i in replies if i in by_id)
    elif len(replies) == len(calls):
        yield from ((k, event) for (k, _), event in zip(replies, calls, strict=True))


def _tools(calls: list[Any]) -> list[dict[str, Any]]:
    """The OpenAI schemas of the tools the model calls offered, by name in order of first
    appearance."""
    seen: dict[str, dict[str, Any]] = {}
    for event in calls:
        for tool in _list(event.get("tools")):
            tool_name = as_object(tool).get("name")
            if isinstance(tool_name, str) and tool_name not in seen:
                function = {
                    "name": tool_name,
                    "description": tool.get("description") or "",
                    "parameters": tool.get("parameters") or {"type": "object", "properties": {}},
                }
                seen[tool_name] = {"type": "function", "function": function}
    return list(seen.values())


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _time(value: Any) -> float | None:
    """An ISO 8601 time as Unix time (seconds), else ``None``."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None
