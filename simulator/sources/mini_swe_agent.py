"""mini-swe-agent trajectories (``.traj.json``) as OpenAI chat conversations.

mini-swe-agent's only action is a shell command in a ```` ```bash ```` block of the
model's text; each message with exactly one becomes a call of one ``bash`` tool
(:data:`BASH_TOOL`) and the next message its result, so the engine can reduce those
outputs. Only ``trajectory_format`` ``"mini-swe-agent-1"`` is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from simulator.recording import ImportError_
from simulator.sources import Converted, as_int, as_object, as_text

__all__ = ["BASH_TOOL", "TRAJECTORY_FORMAT", "looks_like", "read"]

TRAJECTORY_FORMAT = "mini-swe-agent-1"
"""The one ``trajectory_format`` read."""

BASH_TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run one bash command in the task's environment; returns its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command."}},
            "required": ["command"],
        },
    },
}
"""The schema given to the one tool: the agent's only action is a bash command."""

# mini-swe-agent 1.x's default ``action_regex``; a message holds an action only when
# exactly one block matches, and the action is the match stripped.
_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.DOTALL)

_ROLES = frozenset({"system", "user", "assistant"})


def looks_like(data: Any) -> bool:
    """A trajectory: ``trajectory_format`` naming mini-swe-agent, or any
    ``trajectory_format`` beside ``info`` and ``messages`` (so that an unknown version is
    refused by name rather than read as another format)."""
    if not isinstance(data, Mapping) or "trajectory_format" not in data:
        return False
    version = data["trajectory_format"]
    if isinstance(version, str) and version.startswith("mini-swe-agent"):
        return True
    return isinstance(data.get("info"), Mapping) and isinstance(data.get("messages"), list)


def read(data: Any, *, name: str) -> list[Converted]:
    if not isinstance(data, Mapping):
        raise ImportError_(f"{name}: a mini-swe-agent trajectory is a JSON object")
    if "trajectory_format" not in data:
        raise ImportError_(f"{name}: trajectory_format: missing; expected {TRAJECTORY_FORMAT!r}")
    version = data["trajectory_format"]
    if version != TRAJECTORY_FORMAT:
        raise ImportError_(
            f"{name}: trajectory_format: unsupported {version!r}; expected {TRAJECTORY_FORMAT!r}"
        )
    raw = data.get("messages")
    if not isinstance(raw, list):
        raise ImportError_(f"{name}: messages: expected a list, got {type(raw).__name__}")
    info = as_object(data.get("info"))
    stats = as_object(info.get("model_stats"))
    model = as_object(as_object(info.get("config")).get("model")).get("model_name")
    instance = data.get("instance_id")

    messages: list[dict[str, Any]] = []
    prompt: dict[int, int] = {}
    cached: dict[int, int] = {}
    completion: dict[int, int] = {}
    times: dict[int, float] = {}  # Unix time, seconds
    pending: str | None = None  # the call awaiting its output in the next user message
    for i, msg in enumerate(raw):
        where = f"{name}: messages[{i}]"
        if not isinstance(msg, Mapping):
            raise ImportError_(f"{where}: expected an object, got {type(msg).__name__}")
        role = msg.get("role")
        if role not in _ROLES:
            raise ImportError_(f"{where}.role: unknown role {role!r}")
        content = as_text(msg.get("content"), where)
        if role == "user" and pending is not None:
            messages.append({"role": "tool", "tool_call_id": pending, "content": content})
            pending = None
            continue
        pending = None
        if role != "assistant":
            messages.append({"role": role, "content": content})
            continue
        blocks = _BLOCK.findall(content)
        out: dict[str, Any] = {"role": "assistant", "content": content}
        if len(blocks) == 1:
            pending = f"call_{i}"
            arguments = json.dumps({"command": blocks[0].strip()}, ensure_ascii=False)
            function = {"name": "bash", "arguments": arguments}
            out["tool_calls"] = [{"id": pending, "type": "function", "function": function}]
        index = len(messages)
        messages.append(out)
        response = as_object(as_object(msg.get("extra")).get("response"))
        usage = as_object(response.get("usage"))
        details = as_object(usage.get("prompt_tokens_details"))
        for figures, value in (
            (prompt, as_int(usage.get("prompt_tokens"))),
            (
                cached,
                _first_int(details.get("cached_tokens"), usage.get("cache_read_input_tokens")),
            ),
            (completion, as_int(usage.get("completion_tokens"))),
        ):
            if value is not None:
                figures[index] = value
        created = _number(response.get("created"))
        if created is not None:
            times[index] = created

    return [
        Converted(
            label=instance if isinstance(instance, str) and instance else name,
            fmt="openai_chat",
            payload={"messages": messages, "tools": [BASH_TOOL]},
            model=model if isinstance(model, str) else "",
            task=instance if isinstance(instance, str) else "",
            function_calling=False,
            prompt_tokens=prompt,
            cached_prompt_tokens=cached,
            completion_tokens=completion,
            call_times=times,
            api_calls=as_int(stats.get("api_calls")),
            cost=_number(stats.get("instance_cost")),
            # Each file message gives one payload message, in order.
            locations={k: f"messages[{k}]" for k in range(len(messages))},
        )
    ]


def _first_int(*values: Any) -> int | None:
    return next((v for v in map(as_int, values) if v is not None), None)


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a JSON number (not a boolean), else ``None``."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
