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
    "load_conversations",
    "openhands_to_openai",
]

FORMATS = ("openai_chat", "anthropic", "openai_responses", "tau_bench", "openhands")


class ImportError_(ValueError):  # noqa: N801 - avoids shadowing the builtin ImportError
    """A recording that cannot be read; the message names the file, line and field."""


@dataclass(frozen=True)
class RecordedConversation:
    """One recorded conversation, unreduced, ready to replay."""

    name: str
    messages: Sequence[Any]
    """Chat ``Message`` values or ``AgenticMessage`` values, all of one kind."""
    tools: Sequence[ToolInfo] = field(default_factory=tuple)
    format: str = "openai_chat"


def _parse(fmt: str, data: Any, where: str) -> tuple[list[Any], list[ToolInfo]]:
    try:
        if fmt == "openai_chat":
            if isinstance(data, list):
                return formats.messages_from_openai(data), []
            _check_keys(data, {"messages", "tools", "name", "title"}, where)
            return (
                formats.messages_from_openai(data.get("messages", [])),
                formats.tools_from_openai(data.get("tools", [])),
            )
        if fmt == "anthropic":
            _check_keys(data, {"messages", "tools", "system", "name", "title", "model", "max_tokens"}, where)
            return (
                formats.messages_from_anthropic(data.get("messages", []), system=data.get("system")),
                formats.tools_from_anthropic(data.get("tools", [])),
            )
        if fmt == "openai_responses":
            if isinstance(data, list):
                return formats.messages_from_responses(data), []
            _check_keys(data, {"input", "tools", "name", "title", "model", "instructions"}, where)
            return (
                formats.messages_from_responses(data.get("input", [])),
                formats.tools_from_responses(data.get("tools", [])),
            )
    except FormatError as exc:
        raise ImportError_(f"{where}: {exc}") from exc
    raise ImportError_(f"{where}: unknown format {fmt!r}; expected one of {list(FORMATS)}")


def _check_keys(data: Any, allowed: set[str], where: str) -> None:
    if not isinstance(data, Mapping):
        raise ImportError_(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ImportError_(f"{where}: unknown field {unknown[0]!r}")


def detect_format(data: Any) -> str:
    """Guess the format of one parsed JSON value."""
    if isinstance(data, list):
        if data and isinstance(data[0], Mapping) and "traj" in data[0]:
            return "tau_bench"
        if data and isinstance(data[0], Mapping) and ("type" in data[0] and "role" not in data[0]):
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
    raise ImportError_(f"expected a JSON object or list, got {type(data).__name__}")


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


def conversation_from_json(data: Any, *, fmt: str | None = None, name: str = "conversation") -> list[RecordedConversation]:
    """The conversations in one parsed JSON value (a tau-bench file holds many)."""
    kind = fmt or detect_format(data)
    if kind == "tau_bench":
        if not isinstance(data, list):
            raise ImportError_(f"{name}: a tau-bench file is a JSON array of runs")
        out = []
        for i, run in enumerate(data):
            if not isinstance(run, Mapping) or "traj" not in run:
                raise ImportError_(f"{name}[{i}]: a tau-bench run needs 'traj'")
            label = f"{name}#task{run.get('task_id', i)}-trial{run.get('trial', 0)}"
            messages, _ = _parse("openai_chat", run["traj"], f"{name}[{i}].traj")
            out.append(RecordedConversation(label, messages, (), "openai_chat"))
        return out
    if kind == "openhands":
        chat, tools = openhands_to_openai(data, where=name)
        label = f"{name}#{data.get('instance_id', 'run')}" if isinstance(data, Mapping) else name
        return [_openai(label, chat, tools, name)]
    messages, tools = _parse(kind, data, name)
    title = data.get("name") or data.get("title") if isinstance(data, Mapping) else None
    return [RecordedConversation(str(title or name), messages, tools, kind)]


def _openai(label: str, chat: list[Any], tools: list[Any], where: str) -> RecordedConversation:
    messages, infos = _parse("openai_chat", {"messages": chat, "tools": tools}, where)
    return RecordedConversation(label, messages, infos, "openai_chat")


def load_conversations(path: str | Path, *, fmt: str | None = None) -> list[RecordedConversation]:
    """Every conversation in the file at ``path`` (JSON or JSONL)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ImportError_(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ImportError_(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    if fmt is not None and fmt not in FORMATS:
        raise ImportError_(f"unknown format {fmt!r}; expected one of {list(FORMATS)}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as whole:
        lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
        if len(lines) <= 1:
            raise ImportError_(f"{path}: not JSON: {whole.msg} at line {whole.lineno}, column {whole.colno}") from whole
        out: list[RecordedConversation] = []
        for number, line in lines:
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportError_(f"{path}:{number}: not JSON: {exc.msg} at column {exc.colno}") from exc
            out.extend(conversation_from_json(item, fmt=fmt, name=f"{path.name}:{number}"))
        return out
    return conversation_from_json(data, fmt=fmt, name=path.name)


def openhands_to_openai(run: Any, *, where: str = "run") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An OpenHands event stream as OpenAI chat messages and tool schemas.

    Tool actions carry the model's raw response (one assistant message per response,
    however many calls it made); observations answer them by ``tool_call_id``;
    ``recall`` events have no tool call and are left out.
    """
    if not isinstance(run, Mapping) or not isinstance(run.get("history"), list):
        raise ImportError_(f"{where}: an OpenHands run needs a 'history' list")
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    seen_responses: set[str] = set()
    for i, event in enumerate(run["history"]):
        if not isinstance(event, Mapping):
            raise ImportError_(f"{where}.history[{i}]: expected an object")
        meta = event.get("tool_call_metadata")
        action, observation = event.get("action"), event.get("observation")
        if action == "system":
            messages.append({"role": "system", "content": str(event.get("args", {}).get("content", ""))})
            tools = list(event.get("args", {}).get("tools", []))
        elif action == "message" and meta is None:
            role = "user" if event.get("source") == "user" else "assistant"
            messages.append({"role": role, "content": str(event.get("args", {}).get("content", ""))})
        elif action is not None and meta is not None:
            response = meta.get("model_response") or {}
            key = str(response.get("id") or f"{where}:{i}")
            if key in seen_responses:
                continue
            seen_responses.add(key)
            message = dict(response["choices"][0]["message"])
            message.pop("function_call", None)
            if message.get("tool_calls"):
                message["tool_calls"] = [
                    {"id": c["id"], "type": c.get("type", "function"), "function": {
                        "name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                    for c in message["tool_calls"]
                ]
            messages.append({k: v for k, v in message.items() if k in ("role", "content", "tool_calls")})
        elif observation is not None and meta is not None:
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": meta["tool_call_id"],
                    "name": meta.get("function_name", ""),
                    "content": str(event.get("content", "")),
                }
            )
    return messages, tools
