"""Sweeps fanned out over the task workers: one task per grid combination.

``sweep_enqueue`` turns a queued sweep into one :class:`SimulationPart` per combination
(and one for the no-reduction baseline, last) and enqueues a ``run_sweep_part`` task for
each. Any number of ``manage.py db_worker`` processes, on any number of machines, take
them from the one database: django-tasks' database backend hands each task to one worker
(``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL, an exclusive transaction on
SQLite). ``sweep_part_run`` replays its combination and stores the totals; the part that
finishes last gathers every part into the sweep's ``results``, the same object an
in-process :func:`simulator.compare.sweep` gives (``SweepResult.to_dict``). Progress is
the count of combinations done.

A worker holds a lease on the part it runs, and a part whose worker stopped answering is
queued again (:mod:`.leases`); so a part may be claimed more than once, and a run of it
may end after another: the first run to finish stores the part's result (done or failed),
a later one is dropped, and the sweep is gathered once.

A worker process keeps the last conversations it prepared (:class:`simulator.prepared.Prepared`),
so the parts of one sweep it takes share the parsing, the token counts and the
truncation of the tool results, as a sweep in one process does.
"""

from __future__ import annotations

import os
import socket
import threading
from collections import OrderedDict
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_tasks_db.utils import exclusive_transaction

from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.models import Conversation, Simulation, SimulationPart
from reduction_app.prices.selectors import stored_pricing
from reduction_app.simulations.leases import heartbeat, sweep_parts_recover, sweep_watch_enqueue
from simulator.compare import SweepResult, sweep_configs
from simulator.parallel import totals_only
from simulator.pricing import Pricing
from simulator.replay import Prepared, replay_many
from simulator.results import ReplayResult

__all__ = ["sweep_enqueue", "sweep_part_run"]

PREPARED_KEPT = 2
"""Prepared conversations a worker process keeps (the sweeps it is working through)."""

_prepared: OrderedDict[tuple[Any, ...], Prepared] = OrderedDict()
_prepared_lock = threading.Lock()


def sweep_enqueue(*, simulation: Simulation) -> int:
    """Make the parts of a queued sweep and enqueue a task for each; how many."""
    from reduction_app.tasks import run_sweep_part

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
        sweep_watch_enqueue(simulation_id=simulation.pk)
    return len(parts)


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def _claim(part_id: int) -> SimulationPart | None:
    """Mark the part running (once: a part already taken is left alone)."""
    now = timezone.now()
    with exclusive_transaction():
        part = (
            SimulationPart.objects.select_for_update().select_related("simulation").get(pk=part_id)
        )
        if part.status != "queued":
            return None
        if part.simulation.status == "failed":
            part.status = "failed"
            part.error = "not run: the sweep had failed"
            part.finished_at = now
            part.save(update_fields=["status", "error", "finished_at"])
            return None
        part.status = "running"
        part.runs += 1
        part.worker = _worker_name()
        part.started_at = now
        part.heartbeat_at = now
        part.save(update_fields=["status", "runs", "worker", "started_at", "heartbeat_at"])
        Simulation.objects.filter(pk=part.simulation_id, status="queued").update(
            status="running", started_at=now
        )
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
        with heartbeat(part):
            result = _replay(part)
    except Exception as exc:  # recorded for the user; the worker must keep going
        outcome = _fail(part, f"{part.name}: {type(exc).__name__}: {exc}")
    else:
        outcome = _finish(part, result)
    sweep_parts_recover()
    return outcome


def _store(part: SimulationPart, **fields: Any) -> bool:
    """End the part with ``fields`` unless a run already ended it (one taken back from a
    worker presumed dead may end after another run of it): whether this run did."""
    ended = SimulationPart.objects.filter(pk=part.pk, status__in=("queued", "running"))
    return bool(ended.update(worker=part.worker, **fields))


def _fail(part: SimulationPart, error: str) -> str:
    now = timezone.now()
    with exclusive_transaction():
        if not _store(part, status="failed", error=error, finished_at=now):
            return "dropped"
        Simulation.objects.filter(pk=part.simulation_id).exclude(status="failed").update(
            status="failed", error=error, finished_at=now
        )
    return "failed"


def _finish(part: SimulationPart, result: dict[str, Any]) -> str:
    """Store the part's result; count the sweep's progress, and gather it when this was
    the last part (under the sweep's row lock, so exactly one part gathers)."""
    now = timezone.now()
    with exclusive_transaction():
        if not _store(part, status="done", result=result, finished_at=now):
            return "dropped"
        simulation = Simulation.objects.select_for_update().get(pk=part.simulation_id)
        parts = SimulationPart.objects.filter(simulation=simulation)
        simulation.progress_done = parts.filter(
            status="done", position__lt=simulation.progress_total
        ).count()
        fields = ["progress_done"]
        if simulation.status == "running" and not parts.exclude(status="done").exists():
            simulation.results = _gather(list(parts.order_by("position")))
            simulation.status = "done"
            simulation.finished_at = now
            fields += ["results", "status", "finished_at"]
        simulation.save(update_fields=fields)
    return "done"


def _gather(parts: list[SimulationPart]) -> dict[str, Any]:
    """The sweep's results from its parts: what ``sweep(...).to_dict()`` gives."""
    results = [ReplayResult.from_dict(p.result or {}) for p in parts]
    baseline = results.pop()
    return SweepResult.of(results, baseline).to_dict()
