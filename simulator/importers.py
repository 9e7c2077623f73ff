"""Reading recorded conversations: the engine's wire formats, and real-world recordings.

A file may hold one conversation or many:

* one conversation in OpenAI chat format: ``{"messages": [...], "tools": [...]}`` or a
  bare list of messages; Anthropic: ``{"system": ..., "messages": [...], "tools": [...]}``
  (named with ``format="anthropic"``); OpenAI Responses: ``{"input": [...], "tools": [...]}``;
* a JSONL file of such conversations, one per line;
* tau-bench trajectories (a JSON array of runs with ``traj``);
* OpenHands event streams (JSONL, one run per line with ``history``).

Every message goes through ``engine.formats``; errors name the file, line and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reduction_app.engine import formats
from reduction_app.engine.errors import FormatError
from reduction_app.engine.messages import ToolInfo

__all__ = [
    "FORMATS",
    "ImportError_",
    "RecordedConversation",
    "conversation_from_json",
    "detect_format",
    "load_conversations",
    "openhands_to_openai",
]

FORMATS = ("openai_chat", "anthropic", "openai_responses", "tau_bench", "openhands")


class ImportError_(ValueError):  # the underscore: not shadowing the builtin ImportError
    """A recording that cannot be read; the message names the file, line and field."""


@dataclass(frozen=True)
class RecordedConversation:
    """One recorded conversation, unreduced, ready to replay."""

    name: str
    messages: Sequence[Any]
    """Chat ``Message`` values or ``AgenticMessage`` values, all of one kind."""
    tools: Sequence[ToolInfo] = field(default_factory=tuple)
    format: str = "openai_chat"


_CONTAINERS = {"openai_chat": "messages", "anthropic": "messages", "openai_responses": "input"}


def _located(where: str, path: str, exc: FormatError, bare: bool, container: str) -> str:
    """``FILE[:LINE]: FIELD: problem``, FIELD the JSON path from the top of the file (or
    of the JSONL line) to the offending value."""
    field = exc.where
    if bare and (field == container or field.startswith(container + "[")):
        field = field[len(container) :]
    elif path and field:
        field = "." + field
    location = (path + field).lstrip(".")
    return f"{where}: {location}: {exc.problem}" if location else f"{where}: {exc.problem}"


def _parse(fmt: str, data: Any, where: str, path: str = "") -> tuple[list[Any], list[ToolInfo]]:
    """Messages and tools of one conversation in ``fmt``; ``path`` locates ``data`` in
    the file for error messages."""
    if fmt not in _CONTAINERS:
        raise ImportError_(f"{where}: unknown format {fmt!r}; expected one of {list(FORMATS)}")
    bare = isinstance(data, list)
    try:
        if fmt == "openai_chat":
            if bare:
                return formats.messages_from_openai(data), []
            _check_keys(data, {"messages", "tools", "name", "title"}, where, path)
            return (
                formats.messages_from_openai(data.get("messages", [])),
                formats.tools_from_openai(data.get("tools", [])),
            )
        if fmt == "anthropic":
            allowed = {"messages", "tools", "system", "name", "title", "model", "max_tokens"}
            _check_keys(data, allowed, where, path)
            system = data.get("system")
            return (
                formats.messages_from_anthropic(data.get("messages", []), system=system),
                formats.tools_from_anthropic(data.get("tools", [])),
            )
        if bare:
            return formats.messages_from_responses(data), []
        allowed = {"input", "tools", "name", "title", "model", "instructions"}
        _check_keys(data, allowed, where, path)
        return (
            formats.messages_from_responses(data.get("input", [])),
            formats.tools_from_responses(data.get("tools", [])),
        )
    except FormatError as exc:
        raise ImportError_(_located(where, path, exc, bare, _CONTAINERS[fmt])) from exc


def _check_keys(data: Any, allowed: set[str], where: str, path: str) -> None:
    at = f"{where}: {path}" if path else where
    if not isinstance(data, Mapping):
        raise ImportError_(f"{at}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ImportError_(f"{at}: unknown field {unknown[0]!r}")


def detect_format(data: Any, *, where: str = "input") -> str:
    """Guess the format of one parsed JSON value.

    A list is tau-bench when its items have ``traj``, Responses when any item has a
    ``type`` (chat messages never do), else OpenAI chat. An object is OpenHands with
    ``history``, Responses with ``input``, Anthropic with ``system`` or ``tool_use`` /
    ``tool_result`` blocks, else OpenAI chat.
    """
    if isinstance(data, list):
        items = [item for item in data if isinstance(item, Mapping)]
        if items and "traj" in items[0]:
            return "tau_bench"
        if any("type" in item for item in items):
            return "openai_responses"
        return "openai_chat"
    if isinstance(data, Mapping):
        if "history" in data:
            return "openhands"
        if "input" in data:
            return "openai_responses"
        if "system" in data or _looks_anthropic(data.get("messages")):
            return "anthropic"
        return "openai_chat"
    raise ImportError_(f"{where}: expected a JSON object or list, got {type(data).__name__}")


def _looks_anthropic(messages: Any) -> bool:
    if not isinstance(messages, list):
        return False
    for msg in messages:
        content = msg.get("content") if isinstance(msg, Mapping) else None
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return True
    return False


def conversation_from_json(
    data: Any, *, fmt: str | None = None, name: str = "conversation"
) -> list[RecordedConversation]:
    """The conversations in one parsed JSON value (a tau-bench file holds many)."""
    kind = fmt or detect_format(data, where=name)
    if kind == "tau_bench":
        if not isinstance(data, list):
            raise ImportError_(f"{name}: a tau-bench file is a JSON array of runs")
        out = []
        for i, run in enumerate(data):
            if not isinstance(run, Mapping) or "traj" not in run:
                raise ImportError_(f"{name}: [{i}]: a tau-bench run needs 'traj'")
            label = f"{name}#task{run.get('task_id', i)}-trial{run.get('trial', 0)}"
            messages, _ = _parse("openai_chat", run["traj"], name, f"[{i}].traj")
            out.append(RecordedConversation(label, messages, (), "openai_chat"))
        return out
    if kind == "openhands":
        chat, tools = openhands_to_openai(data, where=name)
        label = f"{name}#{data.get('instance_id', 'run')}" if isinstance(data, Mapping) else name
        messages, infos = _parse("openai_chat", {"messages": chat, "tools": tools}, name)
        return [RecordedConversation(label, messages, infos, "openai_chat")]
    messages, infos = _parse(kind, data, name)
    title = (data.get("name") or data.get("title")) if isinstance(data, Mapping) else None
    return [RecordedConversation(str(title or name), messages, infos, kind)]


def load_conversations(path: str | Path, *, fmt: str | None = None) -> list[RecordedConversation]:
    """Every conversation in the file at ``path``: one JSON value, or JSONL (one per line).

    A file that is not one JSON value is JSONL when its first non-blank line is JSON on
    its own; otherwise the error is the whole document's, with its line and column.
    """
    path = Path(path)
    if fmt is not None and fmt not in FORMATS:
        raise ImportError_(f"unknown format {fmt!r}; expected one of {list(FORMATS)}")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ImportError_(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if len(lines) <= 1 or not _is_json(lines[0][1]):
            at = f"line {whole.lineno}, column {whole.colno}"
            raise ImportError_(f"{path}: not JSON: {whole.msg} at {at}") from whole
        out: list[RecordedConversation] = []
        for number, line in lines:
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                at = f"column {exc.colno}"
                raise ImportError_(f"{path}:{number}: not JSON: {exc.msg} at {at}") from exc
            out.extend(conversation_from_json(item, fmt=fmt, name=f"{path.name}:{number}"))
        return out
    return conversation_from_json(data, fmt=fmt, name=path.name)


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except json.JSONDecodeError:
        return False
    return True


def openhands_to_openai(
    run: Any, *, where: str = "run"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An OpenHands event stream as OpenAI chat messages and tool schemas.

    The ``system`` action gives the system message and the tools; ``message`` actions
    without tool metadata are user or agent text. Tool actions carry the model's raw
    response: one assistant message per response, however many calls it made.
    Observations answer them by ``tool_call_id``. ``recall`` events and observations with
    no tool call (``error``) are left out; a ``finish`` call gets no result.
    """
    if not isinstance(run, Mapping) or not isinstance(run.get("history"), list):
        raise ImportError_(f"{where}: an OpenHands run needs a 'history' list")
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    seen_responses: set[str] = set()
    for i, event in enumerate(run["history"]):
        try:
            if not isinstance(event, Mapping):
                raise TypeError(f"expected an object, got {type(event).__name__}")
            if event.get("action") == "system":
                tools = list(event.get("args", {}).get("tools", []))
            message = _openhands_message(event, seen_responses)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            problem = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ImportError_(f"{where}: history[{i}]: {problem}") from exc
        if message is not None:
            messages.append(message)
    return messages, tools


def _openhands_message(event: Mapping[str, Any], seen: set[str]) -> dict[str, Any] | None:
    meta = event.get("tool_call_metadata")
    action, observation = event.get("action"), event.get("observation")
    if action == "system":
        return {"role": "system", "content": str(event.get("args", {}).get("content", ""))}
    if action == "message" and meta is None:
        role = "user" if event.get("source") == "user" else "assistant"
        return {"role": role, "content": str(event.get("args", {}).get("content", ""))}
    if meta is None:
        return None
    if action is not None:
        response = meta["model_response"]
        key = str(response.get("id") or id(response))
        if key in seen:
            return None
        seen.add(key)
        message = response["choices"][0]["message"]
        out: dict[str, Any] = {"role": message.get("role", "assistant")}
        out["content"] = message.get("content")
        if message.get("tool_calls"):
            out["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": c.get("type", "function"),
                    "function": {
                        "name": c["function"]["name"],
                        "arguments": c["function"]["arguments"],
                    },
                }
                for c in message["tool_calls"]
            ]
        return out
    if observation is not None:
        return {
            "role": "tool",
            "tool_call_id": meta["tool_call_id"],
            "name": meta.get("function_name", ""),
            "content": str(event.get("content", "")),
        }
    return None
