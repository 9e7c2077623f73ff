"""A recorded conversation as the simulator holds it, and what its provider reported.

Values only: :mod:`simulator.importers` and the readers in :mod:`simulator.sources` make
them, :mod:`simulator.replay` replays them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reduction_app.engine import ToolInfo

__all__ = ["ImportError_", "ProviderUsage", "RecordedConversation"]


class ImportError_(ValueError):  # the underscore: not shadowing the builtin ImportError
    """A recording that cannot be read; the message names the file, line and field."""


@dataclass(frozen=True, kw_only=True)
class ProviderUsage:
    """Input tokens as the provider billed them, where the recording kept its figures.

    Recordings keep them in two shapes: per model call (τ²-bench's ``usage.prompt_tokens``
    on each assistant message, Claude Code's ``message.usage``, mini-swe-agent's
    ``extra.response.usage``) or one total for the run (SWE-agent's
    ``info.model_stats.tokens_sent`` with ``api_calls``). Some also keep the cached share,
    the output tokens, the time of each call and the run's cost; those fields are empty
    where they did not.
    """

    prompt_tokens: Mapping[int, int] = field(default_factory=dict)
    """Prompt tokens of a model call, keyed by the index (in
    ``RecordedConversation.messages``) of the assistant message that call produced."""
    total_prompt_tokens: int | None = None
    """Prompt tokens of the whole run, when only a total was kept."""
    api_calls: int | None = None
    """Model calls the run made, by its own count."""
    cached_prompt_tokens: Mapping[int, int] = field(default_factory=dict)
    """Of a call's prompt tokens, those the provider read from its cache, keyed as
    ``prompt_tokens``."""
    completion_tokens: Mapping[int, int] = field(default_factory=dict)
    """Output tokens of a call, keyed as ``prompt_tokens``."""
    call_times: Mapping[int, float] = field(default_factory=dict)
    """When a call was answered, as the provider stamped it (Unix time, seconds), keyed
    as ``prompt_tokens``."""
    cost: float | None = None
    """What the whole run cost by its own count, in dollars."""

    def to_json(self) -> dict[str, Any]:
        """The figures as JSON values, for storing (the per-call maps keyed by the message
        index as a string, as JSON keys are); :meth:`from_json` reads them back. A number
        JSON cannot hold (a recording's ``NaN``) is left out."""

        def per_call(figures: Mapping[int, float]) -> dict[str, float]:
            return {str(i): n for i, n in figures.items() if math.isfinite(n)}

        cost = self.cost if self.cost is not None and math.isfinite(self.cost) else None
        return {
            "prompt_tokens": per_call(self.prompt_tokens),
            "total_prompt_tokens": self.total_prompt_tokens,
            "api_calls": self.api_calls,
            "cached_prompt_tokens": per_call(self.cached_prompt_tokens),
            "completion_tokens": per_call(self.completion_tokens),
            "call_times": per_call(self.call_times),
            "cost": cost,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProviderUsage:
        """The figures :meth:`to_json` stored; a field left out is empty. Raises
        ``ValueError`` naming the field that holds something else."""

        def per_call(name: str, kind: type[int] | type[float]) -> dict[int, Any]:
            found = data.get(name) or {}
            if not isinstance(found, Mapping):
                raise ValueError(f"{name}: expected an object, got {found!r}")
            out: dict[int, Any] = {}
            for key, value in found.items():
                if not str(key).isdigit() or isinstance(value, bool):
                    raise ValueError(f"{name}: unexpected entry {key!r}: {value!r}")
                if not isinstance(value, int | float) or (kind is int and value != int(value)):
                    raise ValueError(f"{name}.{key}: expected a number, got {value!r}")
                out[int(key)] = kind(value)
            return out

        def number(name: str) -> float | None:
            value = data.get(name)
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name}: expected a number, got {value!r}")
            return value

        total, calls = number("total_prompt_tokens"), number("api_calls")

        return cls(
            prompt_tokens=per_call("prompt_tokens", int),
            total_prompt_tokens=None if total is None else int(total),
            api_calls=None if calls is None else int(calls),
            cached_prompt_tokens=per_call("cached_prompt_tokens", int),
            completion_tokens=per_call("completion_tokens", int),
            call_times=per_call("call_times", float),
            cost=number("cost"),
        )


@dataclass(frozen=True)
class RecordedConversation:
    """One recorded conversation, unreduced, ready to replay."""

    name: str
    messages: Sequence[Any]
    """Chat ``Message`` values or ``AgenticMessage`` values, all of one kind."""
    tools: Sequence[ToolInfo] = field(default_factory=tuple)
    format: str = "openai_chat"
    model: str = ""
    """The model that ran the conversation, when the recording says."""
    task: str = ""
    """What the agent was asked to do, as the recording names it (see
    ``sources.Converted.task``); empty when it does not."""
    about: str = ""
    """A line saying what the run was about, for titles; often empty."""
    function_calling: bool = True
    """Whether the agent's tool calls went through the provider's function calling (see
    ``sources.Converted.function_calling``)."""
    agent: str = ""
    """The agent that ran it (``importers.RECORDING_FORMATS``' unless the recording names
    it more closely); empty for a wire format."""
    usage: ProviderUsage | None = None
    """What the provider billed, when the recording kept it (see :mod:`simulator.calibration`)."""
    strategy: Mapping[str, Any] = field(default_factory=dict)
    """The context strategy the agent itself ran, when the recording says, e.g.
    ``{"keep_last_observations": 5}`` for SWE-agent's ``Last5Observations``."""
    source: str = ""
    """The format the recording was read as (one of ``importers.FORMATS``, e.g.
    ``swe_agent``); ``format`` is the wire format its messages are in."""
