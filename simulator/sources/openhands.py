"""OpenHands event streams (JSONL, one run per line with ``history``) as OpenAI chat.

The ``system`` action gives the system message and the tools; ``message`` actions
without tool metadata are user or agent text. Tool actions carry the model's raw
response: one assistant message per response, however many calls it made.
Observations answer them by ``tool_call_id``. ``recall`` events and observations with
no tool call (``error``) are left out; a ``finish`` call gets no result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted

__all__ = ["openhands_to_openai", "read"]


def read(data: Any, *, name: str) -> list[Converted]:
    chat, tools = openhands_to_openai(data, where=name)
    label = f"{name}#{data.get('instance_id', 'run')}" if isinstance(data, Mapping) else name
    return [Converted(label=label, fmt="openai_chat", payload={"messages": chat, "tools": tools})]


def openhands_to_openai(
    run: Any, *, where: str = "run"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An OpenHands event stream as OpenAI chat messages and tool schemas (see above)."""
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
