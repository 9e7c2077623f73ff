"""Claude Code session logs (``~/.claude/projects/*/<session>.jsonl``) as Anthropic
Messages conversations.

A session's events are read back into the model calls the provider saw: one
``message.id`` is one call, parallel calls and results are joined as they were sent,
bookkeeping and sub-agent events are left out, and block fields only the log adds
(:data:`LOG_ONLY_FIELDS`) are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import ABOUT_CHARS, Converted, as_int, as_object, excerpt

__all__ = ["LOG_ONLY_FIELDS", "looks_like", "read"]

_CONVERSATION_TYPES = ("user", "assistant")

LOG_ONLY_FIELDS: Mapping[str, Mapping[str, Any]] = {
    "tool_use": {"caller": {"type": "direct"}},
}
"""Content-block fields, per block type, that Claude Code logs and that are left out, each
with the one value it is left out with (any other value is refused, naming the field).

- ``tool_use.caller`` ``{"type": "direct"}`` (some logs of Claude Code 2.1.17 and later):
  the API's note of who made the call, here the model itself rather than code it ran
  (programmatic tool calling, whose ``caller`` names the code execution instead). A
  direct call is what a ``tool_use`` block means without the field, so the call, its
  result and the model's context are the same with it or without it.
"""


def looks_like(items: Sequence[Any]) -> bool:
    """Lines of a session log: objects, among them ``user`` / ``assistant`` events with a
    ``sessionId`` and a ``message`` (lines of other types are bookkeeping, whatever
    their type: newer versions add some)."""
    if not items or not all(isinstance(item, Mapping) for item in items):
        return False
    return any(
        e.get("type") in _CONVERSATION_TYPES and "sessionId" in e and "message" in e for e in items
    )


def read(items: Sequence[Any], *, name: str) -> list[Converted]:
    """One conversation, or one per stretch between ``/compact`` boundaries (after a
    compaction the model is sent the summary, not what came before)."""
    session = _session(items)
    label = f"{name}#{session or 'session'}"
    task = f"session {session[:8]}" if session else ""
    about = _about(items)
    stretches: list[list[tuple[int, Mapping[str, Any]]]] = [[]]
    for line, event in enumerate(items, start=1):
        if isinstance(event, Mapping) and event.get("subtype") == "compact_boundary":
            stretches.append([])
        elif _in_conversation(event):
            stretches[-1].append((line, event))
    stretches = [s for s in stretches if s] or [[]]
    if len(stretches) == 1:
        return [replace(_conversation(stretches[0], name, label), task=task, about=about)]
    return [
        replace(
            _conversation(s, name, f"{label}-{i}"),
            task=f"{task}, part {i}" if task else f"part {i}",
            about=about,
        )
        for i, s in enumerate(stretches, start=1)
    ]


def _about(items: Sequence[Any]) -> str:
    """The session's summary line, as Claude Code wrote it, else its first prompt."""
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "summary":
            summary = item.get("summary")
            if isinstance(summary, str) and summary.strip():
                return excerpt(summary, ABOUT_CHARS)
    for item in items:
        if not isinstance(item, Mapping) or item.get("type") != "user" or item.get("isMeta"):
            continue
        content = as_object(item.get("message")).get("content")
        if not isinstance(content, str):
            continue
        # A slash command is written as tags: its name and arguments say what it asked.
        command = [_tag(content, "command-name"), _tag(content, "command-args")]
        text = " ".join(c for c in command if c) if command[0] else _TAGS.sub(" ", content)
        if text.strip():
            return excerpt(text, ABOUT_CHARS)
    return ""


_TAGS = re.compile(r"<[^<>]+>")


def _tag(content: str, name: str) -> str:
    found = re.search(rf"<{name}>(.*?)</{name}>", content, flags=re.DOTALL)
    return found.group(1).strip() if found else ""


def _conversation(
    events: Sequence[tuple[int, Mapping[str, Any]]], name: str, label: str
) -> Converted:
    messages: list[dict[str, Any]] = []
    ids: list[str | None] = []  # message.id of each assistant message, for joining
    prompt_tokens: dict[int, int] = {}
    locations: dict[int, str] = {}
    model = ""
    for line, event in events:
        where = f"{name}:{line}"
        message = event.get("message")
        if not isinstance(message, Mapping):
            raise ImportError_(f"{where}: message: a {event['type']} event needs a 'message'")
        role = message.get("role", event["type"])
        if role not in _CONVERSATION_TYPES:
            raise ImportError_(f"{where}: message.role: unknown role {role!r}")
        if role == "assistant" and message.get("model") == "<synthetic>":
            continue  # Claude Code's own notices (API errors, interruptions): no model call
        blocks = _blocks(message.get("content"), where)
        message_id = message.get("id") if role == "assistant" else None
        joins = bool(messages) and messages[-1]["role"] == role
        if joins and role == "assistant" and ids[-1] != message_id:
            joins = False
        if joins:
            target = len(messages) - 1
        elif role == "assistant" and _interleaved(messages, ids, message_id):
            # a further call of the response before these results (from Claude Code 2.1.29
            # on, each call's result is written right after it): the model was sent the
            # calls as one message, so join it to them; its result then joins the results
            target = len(messages) - 2
        else:
            locations[len(messages)] = f":{line}: message"
            messages.append({"role": role, "content": []})
            ids.append(message_id)
            target = len(messages) - 1
        messages[target]["content"].extend(blocks)
        if role == "assistant":
            model = str(message.get("model") or model)
            tokens = _prompt_tokens(message.get("usage"))
            if tokens is not None:
                prompt_tokens[target] = tokens  # one call's usage, on each of its lines
    payload = {"messages": messages, "tools": []}
    return Converted(
        label=label,
        fmt="anthropic",
        payload=payload,
        model=model,
        prompt_tokens=prompt_tokens,
        locations=locations,
    )


def _in_conversation(event: Any) -> bool:
    return (
        isinstance(event, Mapping)
        and event.get("type") in _CONVERSATION_TYPES
        and not event.get("isSidechain")
        and not event.get("isSnapshotUpdate")
    )


def _interleaved(
    messages: Sequence[Mapping[str, Any]], ids: Sequence[str | None], message_id: Any
) -> bool:
    """Whether an assistant line of ``message_id`` continues the response before the last
    message, that message holding only its results so far."""
    if message_id is None or len(messages) < 2 or ids[-2] != message_id:
        return False
    last = messages[-1]
    return last["role"] == "user" and all(
        isinstance(b, Mapping) and b.get("type") == "tool_result" for b in last["content"]
    )


def _blocks(content: Any, where: str) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [_without_log_only_fields(block) for block in content]
    raise ImportError_(f"{where}: message.content: expected a string or a list of blocks")


def _without_log_only_fields(block: Any) -> Any:
    """``block`` less its :data:`LOG_ONLY_FIELDS` that hold their harmless value."""
    if not isinstance(block, Mapping):
        return block  # the parser names what is wrong with it
    harmless = LOG_ONLY_FIELDS.get(str(block.get("type")), {})
    drop = {k for k, v in harmless.items() if k in block and block[k] == v}
    return {k: v for k, v in block.items() if k not in drop} if drop else block


def _prompt_tokens(usage: Any) -> int | None:
    if not isinstance(usage, Mapping) or as_int(usage.get("input_tokens")) is None:
        return None
    keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(as_int(usage.get(k)) or 0 for k in keys)


def _session(items: Sequence[Any]) -> str:
    for event in items:
        if isinstance(event, Mapping) and isinstance(event.get("sessionId"), str):
            return str(event["sessionId"])
    return ""
