"""Bodies of the simulations' operations."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from ninja import Field, Schema

from reduction_app.configs.schemas import ConfigJson
from reduction_app.schemas import StrictIn


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
    pricing: str = "gpt-4o"
    min_cacheable_prefix: int = Field(1024, ge=0)


class ProgressOut(Schema):
    done: int
    total: int


class SimulationOut(Schema):
    id: int
    conversation_id: str
    kind: str
    status: str
    progress: ProgressOut
    configs: list[dict[str, Any]]
    grid: dict[str, Any] | None
    options: dict[str, Any]
    results: dict[str, Any] | None
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
