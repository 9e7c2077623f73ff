"""Claude Code session logs (``~/.claude/projects/*/<session>.jsonl``) as Anthropic
Messages conversations.

A log is one JSON event a line, the whole file one session. ``user`` and ``assistant``
events carry ``message`` (``role`` and Anthropic ``content``: a string or blocks);
everything else is bookkeeping and left out: ``summary``, ``system``,
``file-history-snapshot`` (and any line with ``isSnapshotUpdate``), queue operations,
any type a newer version adds, and events of sub-agents (``isSidechain``), which ran in
contexts of their own. A ``compact_boundary`` line (``/compact``) starts a new
conversation: after it the model is sent the summary, not what came before. Branches
left by rewinding are read in file order, as one line of events.

Claude Code writes one event per content block of a response, each with the same
``message.id``: those are joined into one assistant message. Consecutive user events
(parallel tool results, each on its own line) are joined into one user message, as the
API requires. An assistant event's ``message.usage`` is the provider's count for that
call: ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``.

The log keeps neither the system prompt nor the tool schemas, so a replay counts less
than the provider billed (by the same amount on every call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted, as_int

__all__ = ["looks_like", "read"]

_CONVERSATION_TYPES = ("user", "assistant")


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
    label = f"{name}#{_session(items) or 'session'}"
    stretches: list[list[tuple[int, Mapping[str, Any]]]] = [[]]
    for line, event in enumerate(items, start=1):
        if isinstance(event, Mapping) and event.get("subtype") == "compact_boundary":
            stretches.append([])
        elif _in_conversation(event):
            stretches[-1].append((line, event))
    stretches = [s for s in stretches if s] or [[]]
    if len(stretches) == 1:
        return [_conversation(stretches[0], name, label)]
    return [_conversation(s, name, f"{label}-{i}") for i, s in enumerate(stretches, start=1)]


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
        joins = messages and messages[-1]["role"] == role
        if joins and role == "assistant" and ids[-1] != message_id:
            joins = False
        if joins:
            messages[-1]["content"].extend(blocks)
        else:
            locations[len(messages)] = f":{line}: message"
            messages.append({"role": role, "content": blocks})
            ids.append(message_id)
        if role == "assistant":
            model = str(message.get("model") or model)
            tokens = _prompt_tokens(message.get("usage"))
            if tokens is not None:
                prompt_tokens[len(messages) - 1] = tokens
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


def _blocks(content: Any, where: str) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return list(content)
    raise ImportError_(f"{where}: message.content: expected a string or a list of blocks")


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
