"""OpenHands event streams (JSONL, one run per line with ``history``) as OpenAI chat.

One assistant message per model response, observations as its tool results. Long
observations are cut as OpenHands cut them before sending (its
``_process_observation`` rules, at the run's ``max_message_chars``), so a replay starts
from what the model was really sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted

__all__ = ["OBSERVATION_CUT_MARKER", "openhands_to_openai", "read"]

OBSERVATION_CUT_MARKER = "\n[... Observation truncated due to length ...]\n"
"""What OpenHands puts where it cut the middle of a long observation."""

# The observation types whose content OpenHands cuts to max_message_chars (see above).
_CUT_TYPES = frozenset(
    {
        "run",
        "run_ipython",
        "edit",
        "mcp",
        "think",
        "task_tracking",
        "error",
        "user_rejected",
        "delegate",
        "condense",
        "download",
    }
)


def read(data: Any, *, name: str) -> list[Converted]:
    chat, tools = openhands_to_openai(data, where=name)
    label = f"{name}#{data.get('instance_id', 'run')}" if isinstance(data, Mapping) else name
    instance = data.get("instance_id") if isinstance(data, Mapping) else None
    metadata = data.get("metadata") if isinstance(data, Mapping) else None
    metadata = metadata if isinstance(metadata, Mapping) else {}
    agent_class = metadata.get("agent_class")
    llm_config = metadata.get("llm_config")
    model = llm_config.get("model") if isinstance(llm_config, Mapping) else None
    return [
        Converted(
            label=label,
            fmt="openai_chat",
            payload={"messages": chat, "tools": tools},
            # "openai/openrouter-llama-4-maverick": the model, behind LiteLLM's routing.
            model=model.split("/")[-1].removeprefix("openrouter-")
            if isinstance(model, str)
            else "",
            task=str(instance) if isinstance(instance, str | int) else "",
            agent=f"OpenHands {agent_class}"
            if isinstance(agent_class, str) and agent_class
            else "",
        )
    ]


def openhands_to_openai(
    run: Any, *, where: str = "run"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An OpenHands event stream as OpenAI chat messages and tool schemas (see above)."""
    if not isinstance(run, Mapping) or not isinstance(run.get("history"), list):
        raise ImportError_(f"{where}: an OpenHands run needs a 'history' list")
    limit = _max_message_chars(run, where=where)
    messages: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    seen_responses: set[str] = set()
    for i, event in enumerate(run["history"]):
        try:
            if not isinstance(event, Mapping):
                raise TypeError(f"expected an object, got {type(event).__name__}")
            if event.get("action") == "system":
                tools = list(event.get("args", {}).get("tools", []))
            message = _openhands_message(event, seen_responses, limit)
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            problem = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ImportError_(f"{where}: history[{i}]: {problem}") from exc
        if message is not None:
            messages.append(message)
    return messages, tools


def _max_message_chars(run: Mapping[str, Any], *, where: str) -> int | None:
    """The run's ``metadata.llm_config.max_message_chars``; None when not recorded."""
    metadata = run.get("metadata")
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise ImportError_(f"{where}: 'metadata' must be an object, got {metadata!r:.80}")
    llm_config = metadata.get("llm_config")
    if llm_config is None:
        return None
    if not isinstance(llm_config, Mapping):
        raise ImportError_(
            f"{where}: 'metadata.llm_config' must be an object, got {llm_config!r:.80}"
        )
    limit = llm_config.get("max_message_chars")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise ImportError_(
            f"{where}: 'metadata.llm_config.max_message_chars' must be an integer, "
            f"got {limit!r:.80}"
        )
    return limit


def _cut(content: str, limit: int | None) -> str:
    if limit is None or limit < 0 or len(content) <= limit:
        return content
    half = limit // 2
    # With a limit under 2, OpenHands' content[-0:] keeps the whole content after the
    # marker; the replay sends what the agent sent, odd as it is.
    tail = content[len(content) - half :] if half else content
    return content[:half] + OBSERVATION_CUT_MARKER + tail


def _openhands_message(
    event: Mapping[str, Any], seen: set[str], limit: int | None
) -> dict[str, Any] | None:
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
        content = str(event.get("content", ""))
        return {
            "role": "tool",
            "tool_call_id": meta["tool_call_id"],
            "name": meta.get("function_name", ""),
            "content": _cut(content, limit) if observation in _CUT_TYPES else content,
        }
    return None
