"""SWE-agent trajectories (``.traj``) as OpenAI chat conversations.

Both histories are read: 1.x function calling, and the older text form, where each
action becomes a tool call and its observation that call's result so the engine can
clear it. A multi-agent run gives one conversation per agent, and the run's
``last_n_observations`` is kept as its strategy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted, as_int, as_object, as_text

__all__ = ["looks_like", "read"]


def looks_like(data: Any) -> bool:
    """A trajectory: ``history`` entries with a ``role`` (OpenHands events have none),
    or a ``trajectory`` list beside the history."""
    if not isinstance(data, Mapping) or not isinstance(data.get("history"), list):
        return False
    if isinstance(data.get("trajectory"), list):
        return True
    return any(isinstance(e, Mapping) and "role" in e for e in data["history"])


def read(data: Any, *, name: str) -> list[Converted]:
    if not looks_like(data):
        raise ImportError_(f"{name}: a SWE-agent trajectory needs a 'history' list of messages")
    history: list[Any] = data["history"]
    agents: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    for i, entry in enumerate(history):
        if not isinstance(entry, Mapping):
            raise ImportError_(f"{name}: history[{i}]: expected an object, got {_kind(entry)}")
        agent = entry.get("agent")
        agents.setdefault(agent if isinstance(agent, str) and agent else "main", []).append(
            (i, entry)
        )
    info = as_object(data.get("info"))
    stats = as_object(info.get("model_stats"))
    config = _replay_config(data, name)
    model, strategy = _model(config), _strategy(config)
    out = []
    for agent, entries in agents.items():
        label = name if len(agents) == 1 else f"{name}#{agent}"
        messages = _messages(entries, name)
        # The run's bill covers every agent; it is kept only where one agent ran.
        whole_run = len(agents) == 1
        if whole_run:
            messages += _unrecorded_steps(data.get("trajectory"), messages)
        out.append(
            Converted(
                label=label,
                fmt="openai_chat",
                # Tool schemas are not in a trajectory: the config names only their bundles.
                payload={"messages": messages, "tools": []},
                model=model,
                task=_task(name),
                function_calling=any("tool_calls" in e for _, e in entries),
                agent="" if len(agents) == 1 else f"SWE-agent ({agent})",
                total_prompt_tokens=as_int(stats.get("tokens_sent")) if whole_run else None,
                api_calls=as_int(stats.get("api_calls")) if whole_run else None,
                strategy=strategy,
                # Each history entry gives one message, in order.
                locations={k: f"history[{i}]" for k, (i, _) in enumerate(entries)},
            )
        )
    return out


def _unrecorded_steps(steps: Any, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The model's answers of the last steps when the history stops short of them.

    SWE-agent 1.x saves the history before the final step (``submit``): that call was
    made and billed, on the context the history holds, so its answer is put back.
    """
    if not isinstance(steps, list):
        return []
    answered = sum(1 for m in messages if m["role"] == "assistant")
    out = []
    for step in steps[answered:]:
        step = step if isinstance(step, Mapping) else {}
        text = step.get("response") or step.get("thought") or ""
        out.append({"role": "assistant", "content": str(text)})
    return out


def _kind(value: Any) -> str:
    return type(value).__name__


def _messages(entries: Sequence[tuple[int, Mapping[str, Any]]], name: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    pending: str | None = None  # the id of a synthetic call awaiting its observation
    for i, entry in entries:
        where = f"{name}: history[{i}]"
        role = entry.get("role")
        content = as_text(entry.get("content"), where)
        if role == "user" and pending is not None and not entry.get("is_demo"):
            out.append({"role": "tool", "tool_call_id": pending, "content": content})
            pending = None
            continue
        pending = None
        if role in ("system", "user"):
            out.append({"role": role, "content": content})
        elif role == "assistant":
            message, pending = _assistant(entry, content, where, i)
            out.append(message)
        elif role == "tool":
            out.append(
                {"role": "tool", "tool_call_id": _result_id(entry, where), "content": content}
            )
        else:
            raise ImportError_(f"{where}.role: unknown role {role!r}")
    return out


def _result_id(entry: Mapping[str, Any], where: str) -> str:
    """The call a tool message answers: ``tool_call_ids`` (a list of one) or ``tool_call_id``."""
    ids = entry.get("tool_call_ids")
    if ids is None:
        ids = [entry.get("tool_call_id")]
    if not isinstance(ids, list) or not ids or not isinstance(ids[0], str):
        raise ImportError_(f"{where}.tool_call_ids: expected a list of call ids, got {ids!r}")
    return ids[0]


def _assistant(
    entry: Mapping[str, Any], content: str, where: str, index: int
) -> tuple[dict[str, Any], str | None]:
    """The assistant message, and the id of the synthetic call made from its action."""
    calls = entry.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise ImportError_(f"{where}.tool_calls: expected a list, got {_kind(calls)}")
        return {
            "role": "assistant",
            "content": content,
            "tool_calls": [_call(c, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls)],
        }, None
    action = entry.get("action")
    if not isinstance(action, str) or not action.strip():
        return {"role": "assistant", "content": content}, None
    call_id = f"swe-{index}"
    thought = entry.get("thought")
    text = thought if isinstance(thought, str) else content
    call = {
        "id": call_id,
        "type": "function",
        "function": {
            "name": action.split()[0],
            "arguments": json.dumps({"command": action.strip()}, ensure_ascii=False),
        },
    }
    return {"role": "assistant", "content": text, "tool_calls": [call]}, call_id


def _call(call: Any, where: str) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(call.get("id"), str):
        raise ImportError_(f"{where}: a tool call needs 'id' and 'function'")
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": str(function.get("name", "")), "arguments": arguments},
    }


def _replay_config(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    raw = data.get("replay_config")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ImportError_(f"{name}: replay_config: not JSON: {exc.msg}") from exc
    return raw if isinstance(raw, Mapping) else {}


def _agent(config: Mapping[str, Any]) -> Mapping[str, Any]:
    agent = config.get("agent")
    return agent if isinstance(agent, Mapping) else {}


def _task(name: str) -> str:
    """The instance a trajectory ran, from its file's name (SWE-agent names the file
    after it: ``pydicom__pydicom-1458.traj``)."""
    stem = name.rsplit(":", 1)[0] if name.rsplit(":", 1)[-1].isdigit() else name
    stem = stem.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".traj.json", ".traj", ".json"):
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def _model(config: Mapping[str, Any]) -> str:
    model = _agent(config).get("model")
    name = model.get("name") if isinstance(model, Mapping) else None
    return name if isinstance(name, str) else ""


def _strategy(config: Mapping[str, Any]) -> dict[str, Any]:
    processors = _agent(config).get("history_processors")
    for processor in processors if isinstance(processors, list) else []:
        if isinstance(processor, Mapping) and processor.get("type") == "last_n_observations":
            n = as_int(processor.get("n"))
            # Polling (eliding in batches) and tag rules are not rebuilt: no strategy then.
            plain = processor.get("polling", 1) == 1 and not processor.get(
                "always_keep_output_for_tags"
            )
            if n is not None and plain:
                return {"keep_last_observations": n}
    return {}
