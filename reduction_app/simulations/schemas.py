"""Bodies of the simulations' operations.

A simulation's ``results`` are stored as :mod:`simulator.stored` writes them (each with
its ``kind`` and ``version``), and answered as stored. The schemas below document the
fields a reader looks for and pass every other one through as stored; a documented field
that a result stored before it existed lacks stays absent from the answer rather than
appearing as ``null``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
)

from reduction_app.configs.schemas import ConfigJson
from reduction_app.schemas import ProgressOut, StrictIn
from simulator.misses import RECOVERY
from simulator.pricing import DEFAULT_PRICING_NAME


class SimulationConfigIn(StrictIn):
    name: str = Field("", max_length=100)
    config: ConfigJson | None = Field(
        None, description="An inline config; leave out both this and config_id for no reduction."
    )
    config_id: int | None = None


class SimulationIn(StrictIn):
    conversation_id: str = Field(..., min_length=1, max_length=200)
    configs: list[SimulationConfigIn] = Field(default_factory=list, max_length=16)
    grid: dict[str, Any] | None = Field(
        None, description="Sweep: knob -> list of values (max_tokens_for_clear, ...)."
    )
    baseline: Literal["first", "none"] = "first"
    pricing: str = Field(
        DEFAULT_PRICING_NAME,
        max_length=64,
        description="A price preset's name, or one of the workspace's own prices (/prices/).",
    )
    min_cacheable_prefix: int = Field(1024, ge=0)
    inferred_prefix: bool = Field(
        True,
        description="Count the prefix an imported recording left out (a Claude Code log's "
        "system prompt and tool schemas), inferred from the provider's per-call counts.",
    )


class _Stored(BaseModel):
    """Part of stored results: documented fields, every other key passed through, and the
    documented fields it lacks left out of the answer. A plain pydantic model: ninja's
    ``Schema`` reads its input through attributes, which would drop the other keys."""

    model_config = ConfigDict(extra="allow")

    # No return annotation: pydantic then documents the model's own fields (with one,
    # the OpenAPI document would show a bare object).
    @model_serializer(mode="wrap")
    def _as_stored(  # type: ignore[no-untyped-def]
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ):
        data: dict[str, Any] = handler(self)
        unset = set(type(self).model_fields) - self.model_fields_set
        return {k: v for k, v in data.items() if k not in unset}


class MissExampleOut(Schema):
    call: int = Field(description="The model call (0-based) whose assistant message typed it.")
    tool: str = Field(description="The tool whose output the context hid.")
    string: str = Field(description="The name, path or identifier the agent typed.")


class TotalsOut(_Stored):
    """A replay summed up (all the simulator's totals; the main ones documented here)."""

    model_calls: int | None = None
    input_tokens_billed: int | None = Field(None, description="Input tokens over every call.")
    cost_usd: float | None = Field(None, description="At the price preset, in US dollars.")
    peak_context_tokens: int | None = None
    truncations: int | None = None
    clears: int | None = None
    refetches: int | None = Field(
        None,
        description="Calls repeating an earlier call whose result was hidden by then (cleared "
        "or truncated, no whole copy left) and that got the same output back.",
    )
    misses: int | None = Field(
        None,
        description="Tool outputs the context hid (cleared, cut by truncation, replaced by a "
        "strategy) holding a string of 8 or more identifier characters that the agent typed "
        "later, at a call whose context showed it nowhere; each output counts once. Absent "
        "from results stored before misses were measured.",
    )
    cost_with_recovery_usd: float | None = Field(
        None,
        description="cost_usd plus, per miss, what agents were measured to spend going back "
        f"for a hidden output: {RECOVERY.calls:g} model calls on the context of the call "
        f"that missed, the first with {RECOVERY.output_share:.0%} of the hidden output as "
        "new input. Absent, or null, in results stored before misses were measured.",
    )


class ReplayResultOut(_Stored):
    """One config's replay (a sweep keeps its totals only, with ``pareto`` and
    ``cost_saved``; a comparison adds ``deltas`` against its baseline and per-call
    records)."""

    name: str | None = None
    totals: TotalsOut | None = None
    miss_examples: list[MissExampleOut] | None = Field(
        None,
        description="The first five misses, in call order. Absent from a sweep's results and "
        "from results stored before misses were measured.",
    )


class SimulationResultsOut(_Stored):
    """What the simulator wrote: ``results`` per config or grid combination, in order;
    ``baseline`` names the baseline of a replay (a sweep's holds no reduction's name and
    totals); ``baseline_result`` is no reduction replayed, when it is none of the
    configs; a sweep adds ``pareto_front``, the positions on its front of cost against
    re-fetches."""

    kind: Literal["replay", "sweep", "corpus_sweep", "recommend"] | None = Field(
        None, description="What the results are. Absent from results stored before it."
    )
    version: int | None = Field(
        None,
        description="The version of the results' shape. Absent from results stored before it.",
    )
    results: list[ReplayResultOut] | None = None
    baseline_result: ReplayResultOut | None = None


class SimulationOut(Schema):
    id: int
    conversation_id: str
    kind: str
    status: str
    progress: ProgressOut
    configs: list[dict[str, Any]]
    grid: dict[str, Any] | None
    options: dict[str, Any]
    results: SimulationResultsOut | None = Field(
        description="Null until done; see SimulationResultsOut."
    )
    error: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_seconds: float | None

    @staticmethod
    def resolve_conversation_id(obj: Any) -> str:
        return str(obj.conversation.client_id)

    @staticmethod
    def resolve_progress(obj: Any) -> dict[str, int]:
        return {"done": obj.progress_done, "total": obj.progress_total}

    @staticmethod
    def resolve_duration_seconds(obj: Any) -> float | None:
        if obj.started_at is None or obj.finished_at is None:
            return None
        duration: timedelta = obj.finished_at - obj.started_at
        return round(duration.total_seconds(), 3)


class SimulationPartOut(Schema):
    """One combination of a sweep on the task workers (its totals are in the sweep's
    results once all are done)."""

    position: int
    name: str
    status: str
    runs: int = Field(description="Times a worker started it: 1 once done, unless retried.")
    worker: str = Field(description="host:pid that ran it (that runs it, while running).")
    requeued_after: list[str] = Field(
        description="host:pid of each worker that stopped answering while running it, "
        "after which it was queued again; oldest first."
    )
    error: str
    started_at: datetime | None
    heartbeat_at: datetime | None
    finished_at: datetime | None


class SimulationDetailOut(SimulationOut):
    parts: list[SimulationPartOut] = Field(
        description="A sweep's parts on the task workers, in grid order, the no-reduction "
        "baseline last; none for a replay."
    )

    @staticmethod
    def resolve_parts(obj: Any) -> list[Any]:
        if obj.kind != "sweep":
            return []
        return list(obj.parts.defer("config", "result").order_by("position"))
