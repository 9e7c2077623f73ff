"""Sweeps fanned out over the task workers: one task per grid combination.

:func:`sweep_enqueue` makes one :class:`SimulationPart` (a job, with its lease) per
combination, plus the no-reduction baseline, and enqueues a task for each; any number of
``db_worker`` processes take them. The part that finishes last gathers the sweep into the
same ``results`` an in-process sweep gives; :func:`sweep_parts_recover` takes back parts
whose worker stopped answering. docs/simulator.md, "Sweeps on several workers".
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django_tasks import task
from django_tasks_db.utils import exclusive_transaction

from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.jobs.lease import claim_fields, heartbeat, job_end, lease_seconds, lost
from reduction_app.jobs.watch import JobKind, register, watch_enqueue
from reduction_app.models import UNFINISHED, Conversation, JobStatus, Simulation, SimulationPart
from reduction_app.prices.selectors import stored_pricing
from simulator.compare import SweepResult, sweep_configs
from simulator.parallel import totals_only
from simulator.pricing import Pricing
from simulator.replay import Prepared, replay_many
from simulator.results import ReplayResult

__all__ = [
    "PARTS",
    "Recovered",
    "lost_worker_error",
    "part_heartbeat",
    "run_sweep_part",
    "sweep_enqueue",
    "sweep_part_run",
    "sweep_parts_recover",
]

logger = logging.getLogger(__name__)

PREPARED_KEPT = 2
"""Prepared conversations a worker process keeps (the sweeps it is working through)."""

_prepared: OrderedDict[tuple[Any, ...], Prepared] = OrderedDict()
_prepared_lock = threading.Lock()


def sweep_enqueue(*, simulation: Simulation) -> int:
    """Make the parts of a queued sweep and enqueue a task for each; how many."""
    pricing = stored_pricing(simulation.options)
    named: list[tuple[str, dict[str, Any] | None]] = list(
        sweep_configs(simulation.grid or {}, pricing)
    )
    named.append(("no reduction", None))
    # Parts and tasks become visible together: a worker never takes a task whose part
    # is not there yet.
    with transaction.atomic():
        parts = SimulationPart.objects.bulk_create(
            SimulationPart(simulation=simulation, position=i, name=name, config=config)
            for i, (name, config) in enumerate(named)
        )
        Simulation.objects.filter(pk=simulation.pk).update(
            progress_done=0, progress_total=len(named) - 1
        )
        for part in parts:
            run_sweep_part.enqueue(part.pk)
        watch_enqueue()
    return len(parts)


def _claim(part_id: int) -> SimulationPart | None:
    """Mark the part running (once: a part already taken is left alone)."""
    now = timezone.now()
    with exclusive_transaction():
        part = (
            SimulationPart.objects.select_for_update().select_related("simulation").get(pk=part_id)
        )
        if part.status != JobStatus.QUEUED:
            return None
        if part.simulation.status == JobStatus.FAILED:
            part.status = JobStatus.FAILED
            part.error = "not run: the sweep had failed"
            part.finished_at = now
            part.save(update_fields=["status", "error", "finished_at"])
            return None
        part.save(update_fields=claim_fields(part, now))
        Simulation.objects.filter(pk=part.simulation_id, status=JobStatus.QUEUED).update(
            status=JobStatus.RUNNING, started_at=now
        )
    watch_enqueue()
    return part


def _prepared_for(conversation_id: int, pricing: Pricing, inferred_prefix: bool = True) -> Prepared:
    """The conversation prepared for replays (counting the prefix a recording left out,
    unless ``inferred_prefix`` is off), kept while it is unchanged."""
    stamp = (
        Conversation.objects.filter(pk=conversation_id)
        .values_list("updated_at", "message_count")
        .get()
    )
    # The price itself, not its name: a workspace price edited since counts anew.
    key = (conversation_id, *stamp, pricing, inferred_prefix)
    with _prepared_lock:
        hit = _prepared.get(key)
        if hit is not None:
            _prepared.move_to_end(key)
            return hit
    conversation = Conversation.objects.select_related("workspace").get(pk=conversation_id)
    prepared = Prepared(
        recorded_conversation(conversation), pricing, inferred_prefix=inferred_prefix
    )
    with _prepared_lock:
        _prepared[key] = prepared
        while len(_prepared) > PREPARED_KEPT:
            _prepared.popitem(last=False)
    return prepared


def _replay(part: SimulationPart) -> dict[str, Any]:
    simulation = part.simulation
    options = simulation.options
    pricing = stored_pricing(options)
    inferred = bool(options.get("inferred_prefix", True))
    prepared = _prepared_for(simulation.conversation_id, pricing, inferred)
    (result,) = replay_many(
        prepared.conversation,
        [(part.name, part.config)],
        pricing=pricing,
        min_cacheable_prefix=int(options.get("min_cacheable_prefix", 1024)),
        prepared=prepared,
        inferred_prefix=inferred,
    )
    return totals_only(result).to_dict()


def sweep_part_run(*, part_id: int) -> str:
    """Replay one part of a sweep; the last part done gathers the sweep. A failure is
    recorded on the part and the sweep, never raised. Before and after, parts whose
    worker stopped answering are taken back. ``"done"``, ``"failed"``, the status of a
    part another run took, or ``"dropped"`` for a run that finished after another."""
    sweep_parts_recover()
    part = _claim(part_id)
    if part is None:
        return SimulationPart.objects.values_list("status", flat=True).get(pk=part_id)
    try:
        with part_heartbeat(part):
            result = _replay(part)
    except Exception as exc:  # recorded for the user; the worker must keep going
        outcome = _fail(part, f"{part.name}: {type(exc).__name__}: {exc}")
    else:
        outcome = _finish(part, result)
    sweep_parts_recover()
    return outcome


def part_heartbeat(part: SimulationPart) -> AbstractContextManager[None]:
    """Keep the claimed part's lease while the block runs (``jobs.lease.heartbeat``)."""
    return heartbeat(part, name=f"sweep-part-{part.pk}-heartbeat")


@task()
def run_sweep_part(part_id: int) -> str:
    """Replay one combination of a sweep; the last one done gathers the sweep."""
    return sweep_part_run(part_id=part_id)


def _fail(part: SimulationPart, error: str) -> str:
    with exclusive_transaction():
        # A run taken back from a worker presumed dead may end after another run of it.
        if not job_end(part, status=JobStatus.FAILED, error=error, worker=part.worker):
            return "dropped"
        Simulation.objects.filter(pk=part.simulation_id).exclude(status=JobStatus.FAILED).update(
            status=JobStatus.FAILED, error=error, finished_at=timezone.now()
        )
    return "failed"


def _finish(part: SimulationPart, result: dict[str, Any]) -> str:
    """Store the part's result; count the sweep's progress, and gather it when this was
    the last part (under the sweep's row lock, so exactly one part gathers). A part may be
    claimed more than once: the first run to finish stores its result, a later one is
    dropped."""
    now = timezone.now()
    with exclusive_transaction():
        if not job_end(part, status=JobStatus.DONE, result=result, worker=part.worker):
            return "dropped"
        simulation = Simulation.objects.select_for_update().get(pk=part.simulation_id)
        parts = SimulationPart.objects.filter(simulation=simulation)
        simulation.progress_done = parts.filter(
            status=JobStatus.DONE, position__lt=simulation.progress_total
        ).count()
        fields = ["progress_done"]
        finished = not parts.exclude(status=JobStatus.DONE).exists()
        if simulation.status == JobStatus.RUNNING and finished:
            simulation.results = _gather(list(parts.order_by("position")))
            simulation.status = JobStatus.DONE
            simulation.finished_at = now
            fields += ["results", "status", "finished_at"]
        simulation.save(update_fields=fields)
    return "done"


def _gather(parts: list[SimulationPart]) -> dict[str, Any]:
    """The sweep's results from its parts: what ``sweep(...).to_dict()`` gives."""
    results = [ReplayResult.from_dict(p.result or {}) for p in parts]
    baseline = results.pop()
    return SweepResult.of(results, baseline).to_dict()


# Taking back the parts whose worker stopped answering -----------------------------------


@dataclass(frozen=True)
class Recovered:
    """What a look for abandoned parts did: the parts queued again and the parts failed."""

    requeued: tuple[SimulationPart, ...] = ()
    failed: tuple[SimulationPart, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.requeued or self.failed)

    def __len__(self) -> int:
        return len(self.requeued) + len(self.failed)


def lost_worker_error(*, worker: str, runs: int) -> str:
    """Why a part whose worker stopped answering on its last allowed run failed."""
    return (
        f"worker {worker} stopped answering (no heartbeat for {lease_seconds():g} s) "
        f"on run {runs} of {settings.REDUCTION_SWEEP_MAX_RUNS}"
    )


def sweep_parts_recover(*, simulation_id: int | None = None) -> Recovered:
    """Take back the parts (of one sweep, or of every sweep) whose worker stopped
    answering: queue each again with a new task, or fail it and its sweep once it has had
    ``REDUCTION_SWEEP_MAX_RUNS`` runs.

    The watcher calls it for every sweep; so do every worker before and after each part
    it runs, a view of a running sweep, and ``manage.py sweep_recover``. Lookers exclude
    each other, so an abandoned part is queued again once."""
    parts = SimulationPart.objects.all()
    if simulation_id is not None:
        parts = parts.filter(simulation_id=simulation_id)
    return _recover(lost(parts))


def _recover(abandoned: QuerySet[SimulationPart]) -> Recovered:
    if not abandoned.exists():
        return Recovered()
    requeued: list[SimulationPart] = []
    failed: list[SimulationPart] = []
    now = timezone.now()
    with exclusive_transaction():
        # Read again under the lock: a second looker waits, then finds these parts queued.
        locked = abandoned.select_for_update(of=("self",)).select_related("simulation")
        for part in locked.order_by("pk"):
            sweep_runs = part.simulation.status in UNFINISHED
            if sweep_runs and part.runs < settings.REDUCTION_SWEEP_MAX_RUNS:
                part.requeued_after = [*part.requeued_after, part.worker]
                part.status = JobStatus.QUEUED
                part.worker = ""
                part.heartbeat_at = None
                part.save(update_fields=["requeued_after", "status", "worker", "heartbeat_at"])
                run_sweep_part.enqueue(part.pk)
                requeued.append(part)
                continue
            lost_worker = lost_worker_error(worker=part.worker, runs=part.runs)
            part.status = JobStatus.FAILED
            part.finished_at = now
            if sweep_runs:
                part.error = f"{part.name}: {lost_worker}"
                Simulation.objects.filter(pk=part.simulation_id, status__in=UNFINISHED).update(
                    status=JobStatus.FAILED, error=part.error, finished_at=now
                )
            else:
                part.error = f"{lost_worker}; not run again: the sweep had failed"
            part.save(update_fields=["status", "error", "finished_at"])
            failed.append(part)
    for part in requeued:
        logger.warning(
            "%s: worker %s stopped answering; queued again", part, part.requeued_after[-1]
        )
    for part in failed:
        logger.warning("%s: %s", part, part.error)
    return Recovered(requeued=tuple(requeued), failed=tuple(failed))


PARTS = register(
    JobKind(
        name="sweep part",
        rows=SimulationPart.objects.all,
        recover=lambda abandoned: len(_recover(abandoned)),
        # A part waits behind the other parts of its sweep, however many there are: how
        # long it waits says nothing of whether any worker runs.
        queue_timeout=lambda: 0.0,
    )
)
