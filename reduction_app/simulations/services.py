"""Simulations: replaying recorded conversations through the simulator, from the app.

:func:`simulation_create` validates everything up front and records a queued
:class:`Simulation`; :func:`simulation_run` carries it out, reporting progress as it
goes. Small replays run inline in the request; :func:`simulation_enqueue` hands the rest
to the task backend (django-tasks' database backend, run by ``manage.py db_worker``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone
from django_tasks import task

from reduction_app import engine
from reduction_app.configs.selectors import config_get, config_latest
from reduction_app.conversations.selectors import INLINE_LIMIT, fits_inline, recorded_conversation
from reduction_app.errors import SimulationInputError
from reduction_app.jobs.lease import claim_fields, heartbeat, job_end
from reduction_app.jobs.watch import watch_enqueue
from reduction_app.models import Conversation, JobStatus, Simulation, Workspace
from reduction_app.prices.selectors import UnknownPricing, pricing_options, stored_pricing
from reduction_app.simulations.corpus import corpus_run
from reduction_app.simulations.sweeps import sweep_enqueue
from reduction_app.simulations.watch import one_task
from simulator.compare import compare, grid_configs, sweep
from simulator.pricing import DEFAULT_PRICING_NAME
from simulator.replay import no_reduction

__all__ = [
    "INLINE_LIMIT",
    "SimulationInputError",
    "fits_inline",
    "run_simulation",
    "runs_inline",
    "simulation_create",
    "simulation_enqueue",
    "simulation_run",
]

PROGRESS_EVERY_SECONDS = 0.5


def _configs(workspace: Workspace, items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for index, item in enumerate(items):
        where = f"configs[{index}]"
        name = str(item.get("name") or "")
        if item.get("config_id") is not None:
            profile = config_get(workspace=workspace, profile_id=int(item["config_id"]))
            if profile is None:
                raise SimulationInputError(
                    f"{where}.config_id", f"config {item['config_id']} not found"
                )
            data = dict(config_latest(profile=profile).data)
            name = name or f"{profile.name} v{config_latest(profile=profile).number}"
        elif item.get("config") is None:
            data = no_reduction()
            name = name or "no reduction"
        else:
            data = dict(item["config"])
        try:
            engine.check_config(data)
        except engine.ConfigError as exc:
            raise SimulationInputError(f"{where}.config.{exc.field}", exc.problem) from exc
        out.append({"name": name or f"config {index + 1}", "config": data})
    return out


def simulation_create(
    *,
    workspace: Workspace,
    conversation: Conversation,
    configs: Sequence[Mapping[str, Any]],
    grid: Mapping[str, Any] | None = None,
    baseline: str = "first",
    pricing: str = DEFAULT_PRICING_NAME,
    min_cacheable_prefix: int = 1024,
    inferred_prefix: bool = True,
) -> Simulation:
    """Validate and record a simulation (``queued``): the configs through the engine, the
    grid through the simulator; nothing runs yet. ``inferred_prefix``:
    count the prefix a recording left out, where one is inferred (``simulator.prefix``);
    recorded in the options only when off."""
    try:
        priced = pricing_options(workspace=workspace, name=pricing)
    except UnknownPricing as exc:
        raise SimulationInputError("pricing", str(exc)) from exc
    if baseline not in ("first", "none"):
        raise SimulationInputError("baseline", f"must be 'first' or 'none', got {baseline!r}")
    if min_cacheable_prefix < 0:
        raise SimulationInputError("min_cacheable_prefix", "must be at least 0")
    try:
        recorded_conversation(conversation, restore=False)
    except ValueError as exc:
        raise SimulationInputError(
            "conversation_id", f"the stored transcript cannot be read: {exc}"
        ) from exc
    kind = "sweep" if grid is not None else "replay"
    checked = _configs(workspace, configs)
    if grid is not None:
        try:
            total = len(grid_configs(grid))
        except ValueError as exc:
            raise SimulationInputError("grid", str(exc)) from exc
    else:
        if not checked:
            raise SimulationInputError("configs", "give at least one config")
        total = len(checked)
    options: dict[str, Any] = {
        "baseline": baseline,
        **priced,
        "min_cacheable_prefix": min_cacheable_prefix,
    }
    if not inferred_prefix:
        options["inferred_prefix"] = False
    return Simulation.objects.create(
        workspace=workspace,
        conversation=conversation,
        kind=kind,
        configs=checked,
        grid=grid,
        options=options,
        progress_total=total,
    )


def runs_inline(simulation: Simulation) -> bool:
    """Whether a queued simulation answers inline: replays that fit, never sweeps."""
    return simulation.kind == "replay" and fits_inline(
        simulation.conversation, configs=len(simulation.configs)
    )


def simulation_enqueue(*, simulation: Simulation) -> None:
    """Hand a queued simulation to the task workers: a sweep of one conversation as one
    task per combination (:mod:`reduction_app.simulations.sweeps`), a replay, a sweep
    over several conversations or a recommendation as one task."""
    if not one_task(simulation):
        sweep_enqueue(simulation=simulation)
        return
    # A sweep over several conversations (the Sweep page, see .corpus) is one task too.
    # The watcher fails it if its worker dies or none takes it (.watch).
    with transaction.atomic():
        run_simulation.enqueue(simulation.pk)
        watch_enqueue()


def _progress(simulation_id: int) -> Any:
    last = [0.0]

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= PROGRESS_EVERY_SECONDS:
            last[0] = now
            Simulation.objects.filter(pk=simulation_id).update(
                progress_done=done, progress_total=total
            )

    return report


def simulation_run(*, simulation_id: int) -> Simulation:
    """Carry out a queued simulation; a failure is recorded on it, never raised. While it
    runs, its heartbeat shows it alive (:mod:`.watch`); if it was failed meanwhile (its
    worker presumed dead), its outcome is dropped."""
    with transaction.atomic():
        simulation = (
            Simulation.objects.select_for_update()
            .select_related("conversation")
            .get(pk=simulation_id)
        )
        if simulation.status != JobStatus.QUEUED:
            return simulation
        simulation.save(update_fields=claim_fields(simulation, timezone.now()))
    with heartbeat(simulation):
        _carry_out(simulation)
    simulation.refresh_from_db()
    return simulation


@task()
def run_simulation(simulation_id: int) -> str:
    """Carry out a queued simulation; its outcome is stored on the Simulation row."""
    watch_enqueue()  # again, should the watch have been lost with a worker
    return simulation_run(simulation_id=simulation_id).status


def _carry_out(simulation: Simulation) -> None:
    """Run the simulation and record its outcome, unless it ended meanwhile."""
    options = simulation.options
    pricing = stored_pricing(options)
    prefix = int(options.get("min_cacheable_prefix", 1024))
    inferred = bool(options.get("inferred_prefix", True))
    report = _progress(simulation.pk)
    try:
        if options.get("corpus"):
            results: dict[str, Any] = corpus_run(simulation, report)
        elif simulation.kind == "sweep":
            recorded = recorded_conversation(simulation.conversation)
            # In this process only: a web or worker process forks no pool of its own
            # (more workers are more `db_worker` processes, see simulation_enqueue).
            results = sweep(
                recorded,
                simulation.grid or {},
                pricing=pricing,
                min_cacheable_prefix=prefix,
                progress=report,
                workers=1,
                inferred_prefix=inferred,
            ).to_dict()
        else:
            recorded = recorded_conversation(simulation.conversation)
            configs = [(c["name"], c["config"]) for c in simulation.configs]
            results = compare(
                recorded,
                configs,
                baseline=options.get("baseline", "first"),
                pricing=pricing,
                min_cacheable_prefix=prefix,
                inferred_prefix=inferred,
            ).to_dict()
            report(len(configs), len(configs))
    except Exception as exc:  # recorded for the user; the worker must keep going
        job_end(simulation, status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}")
    else:
        job_end(simulation, status=JobStatus.DONE, results=results)
