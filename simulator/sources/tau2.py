"""τ²-bench simulation files as OpenAI chat conversations, one per simulation.

Only what the agent saw is kept: in dual-control domains the simulated user's own tool
calls and results never reached it and are left out. The agent's greeting is kept as
sent but is no model call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted, as_int, as_object

__all__ = ["looks_like", "read"]


def looks_like(data: Any) -> bool:
    return (
        isinstance(data, Mapping)
        and isinstance(data.get("simulations"), list)
        and isinstance(data.get("info"), Mapping)
    )


def read(data: Any, *, name: str) -> list[Converted]:
    if not looks_like(data):
        raise ImportError_(f"{name}: a τ²-bench file is an object with 'info' and 'simulations'")
    info = data["info"]
    environment = as_object(info.get("environment_info"))
    agent = as_object(info.get("agent_info"))
    policy = environment.get("policy")
    system = [{"role": "system", "content": policy}] if isinstance(policy, str) and policy else []
    tools = _tools(environment.get("tool_defs"), name)
    llm = agent.get("llm")
    model = llm if isinstance(llm, str) else ""
    out = []
    for i, sim in enumerate(data["simulations"]):
        where = f"{name}: simulations[{i}]"
        if not isinstance(sim, Mapping) or not isinstance(sim.get("messages"), list):
            raise ImportError_(f"{where}: a simulation needs a 'messages' list")
        messages: list[dict[str, Any]] = list(system)
        prompt_tokens: dict[int, int] = {}
        locations: dict[int, str] = {0: "info.environment_info.policy"} if system else {}
        for j, msg in enumerate(sim["messages"]):
            converted = _message(msg, f"{where}.messages[{j}]")
            if converted is None:
                continue
            usage = as_object(msg.get("usage"))
            tokens = as_int(usage.get("prompt_tokens"))
            if converted["role"] == "assistant" and tokens is not None:
                prompt_tokens[len(messages)] = tokens
            locations[len(messages)] = f"simulations[{i}].messages[{j}]"
            messages.append(converted)
        task_id, trial = sim.get("task_id", i), sim.get("trial", 0)
        label = f"{name}#task{task_id}-trial{trial}"
        domain = environment.get("domain_name")
        task = f"task {task_id}, trial {trial}"
        out.append(
            Converted(
                label=label,
                fmt="openai_chat",
                payload={"messages": messages, "tools": tools},
                model=model,
                task=f"{domain} {task}" if isinstance(domain, str) and domain else task,
                prompt_tokens=prompt_tokens,
                locations=locations,
            )
        )
    return out


def _tools(defs: Any, name: str) -> list[Any]:
    """``tool_defs`` (name → OpenAI schema) as an OpenAI ``tools`` list."""
    if defs is None:
        return []
    if not isinstance(defs, Mapping):
        raise ImportError_(f"{name}: info.environment_info.tool_defs: expected an object")
    out = []
    for key, schema in defs.items():
        if not isinstance(schema, Mapping):
            raise ImportError_(f"{name}: info.environment_info.tool_defs.{key}: expected an object")
        out.append(schema if "function" in schema else {"type": "function", "function": schema})
    return out


def _message(msg: Any, where: str) -> dict[str, Any] | None:
    """The message as the agent saw it, or ``None`` for what only the user saw."""
    if not isinstance(msg, Mapping):
        raise ImportError_(f"{where}: expected an object, got {type(msg).__name__}")
    role = msg.get("role")
    content = msg.get("content")
    if role == "tool":
        if msg.get("requestor", "assistant") != "assistant":
            return None
        if not isinstance(msg.get("id"), str):
            raise ImportError_(f"{where}.id: a tool message needs the call id")
        return {"role": "tool", "tool_call_id": msg["id"], "content": content or ""}
    if role == "user":
        # A user turn spent on the user's own tools: the agent sees none of it.
        return None if msg.get("tool_calls") else {"role": "user", "content": content or ""}
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": content}
        calls = msg.get("tool_calls") or []
        if not isinstance(calls, list):
            raise ImportError_(f"{where}.tool_calls: expected a list")
        if calls:
            out["tool_calls"] = [_call(c, f"{where}.tool_calls[{k}]") for k, c in enumerate(calls)]
        return out
    raise ImportError_(f"{where}.role: unknown role {role!r}")


def _call(call: Any, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping) or not isinstance(call.get("id"), str):
        raise ImportError_(f"{where}: a tool call needs 'id', 'name' and 'arguments'")
    arguments = call.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    function = {"name": str(call.get("name", "")), "arguments": arguments}
    return {"id": call["id"], "type": "function", "function": function}
