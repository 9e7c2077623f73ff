"""Sweeps and recommendations over several recorded conversations (the Sweep page).

:func:`corpus_simulation_create` validates and records one, queued; ``simulation_enqueue``
hands it to the task workers as one task, which :func:`corpus_run` carries out. A sweep
of one conversation from the REST API keeps its own way (one task per combination,
:mod:`.sweeps`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from django.db import transaction

from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.errors import SimulationInputError
from reduction_app.models import Conversation, Simulation, Workspace
from reduction_app.prices.selectors import UnknownPricing, pricing_options, stored_pricing
from simulator.compare import GRID_KNOBS, grid_configs
from simulator.corpus_sweep import corpus_sweep
from simulator.pricing import DEFAULT_PRICING_NAME
from simulator.recommend import DEFAULT_BUDGET, Budget, recommend

__all__ = [
    "DEFAULT_MAX_SECONDS",
    "MAX_COMBINATIONS",
    "MAX_CONVERSATIONS",
    "MAX_REPLAYS",
    "MAX_SECONDS",
    "combination_count",
    "corpus_run",
    "corpus_simulation_create",
    "grid_over_limits",
]

MAX_COMBINATIONS = 500
"""The most combinations a sweep from the Sweep page replays."""
MAX_CONVERSATIONS = 500
"""The most conversations one sweep or recommendation from the Sweep page reads."""
MAX_REPLAYS = 5_000
"""The most replays (combinations × conversations) a sweep from the Sweep page runs."""
DEFAULT_MAX_SECONDS = 120
MAX_SECONDS = 900
"""The longest a recommendation may search."""


def combination_count(grid: Mapping[str, Any]) -> int:
    """How many combinations ``grid`` makes, counted before any is built."""
    axes = [v for k, v in grid.items() if k in GRID_KNOBS and isinstance(v, list)]
    return math.prod(len(v) for v in axes) if axes else 0


def grid_over_limits(combinations: int, conversations: int, *, sep: str = ";") -> str | None:
    """What passes the Sweep page's limits (:data:`MAX_COMBINATIONS`, :data:`MAX_REPLAYS`)
    in ``combinations`` over ``conversations``, the limit after ``sep``; ``None`` within
    them. The one check of the form and of :func:`corpus_simulation_create`."""
    if combinations > MAX_COMBINATIONS:
        return (
            f"{combinations:,} combinations{sep} at most {MAX_COMBINATIONS:,} can be swept at once"
        )
    if combinations * conversations > MAX_REPLAYS:
        return (
            f"{combinations:,} combinations × {conversations:,} conversations = "
            f"{combinations * conversations:,} replays{sep} at most {MAX_REPLAYS:,} at once"
        )
    return None


def _check_grid(grid: Mapping[str, Any], conversations: int) -> int:
    problem = grid_over_limits(combination_count(grid), conversations)
    if problem is not None:
        raise SimulationInputError("grid", problem)
    try:
        return len(grid_configs(grid))
    except ValueError as exc:
        raise SimulationInputError("grid", str(exc).removeprefix("grid: ")) from exc


def corpus_simulation_create(
    *,
    workspace: Workspace,
    conversations: Sequence[Conversation],
    kind: str,
    grid: Mapping[str, Any] | None,
    pricing: str = DEFAULT_PRICING_NAME,
    max_seconds: int = DEFAULT_MAX_SECONDS,
    budget: Budget = DEFAULT_BUDGET,
) -> Simulation:
    """Validate and record a sweep (``kind="sweep"``, a grid needed) or a recommendation
    (``"recommend"``, the simulator's coarse grid when ``grid`` is ``None``) over
    ``conversations``, queued; nothing runs yet. The :class:`Simulation`'s
    ``conversation`` is the first of them, its ``conversations`` every one."""
    if kind not in ("sweep", "recommend"):
        raise SimulationInputError("kind", f"must be 'sweep' or 'recommend', got {kind!r}")
    if not conversations:
        raise SimulationInputError("conversations", "pick at least one conversation")
    if len(conversations) > MAX_CONVERSATIONS:
        raise SimulationInputError(
            "conversations",
            f"{len(conversations):,} conversations; at most {MAX_CONVERSATIONS:,} at once",
        )
    if any(c.workspace_id != workspace.pk for c in conversations):
        raise SimulationInputError("conversations", "a conversation of another workspace")
    try:
        priced = pricing_options(workspace=workspace, name=pricing)
    except UnknownPricing as exc:
        raise SimulationInputError("pricing", str(exc)) from exc
    options: dict[str, Any] = {**priced, "corpus": True}
    if kind == "sweep":
        if grid is None:
            raise SimulationInputError("grid", "give the values to sweep")
        total = _check_grid(grid, len(conversations)) * len(conversations)
    else:
        if not 5 <= max_seconds <= MAX_SECONDS:
            raise SimulationInputError(
                "max_seconds", f"must be between 5 and {MAX_SECONDS}, got {max_seconds}"
            )
        options["max_seconds"] = max_seconds
        options["budget"] = budget.to_dict()
        total = _check_grid(grid, len(conversations)) * len(conversations) if grid else 0
    for conversation in conversations:
        try:
            recorded_conversation(conversation, restore=False)
        except ValueError as exc:
            raise SimulationInputError(
                "conversations", f"{conversation}: the stored transcript cannot be read: {exc}"
            ) from exc
    # The row and its conversations together: no worker or page sees one without the other.
    with transaction.atomic():
        simulation = Simulation.objects.create(
            workspace=workspace,
            conversation=conversations[0],
            kind=kind,
            grid=dict(grid) if grid is not None else None,
            options=options,
            progress_total=total,
        )
        simulation.conversations.set(conversations)
    return simulation


def corpus_run(simulation: Simulation, report: Callable[[int, int], None]) -> dict[str, Any]:
    """The results of a sweep or recommendation over several conversations (raises what
    the simulator raises; the caller records it).

    A sweep is :func:`simulator.corpus_sweep.corpus_sweep` (every combination on every
    conversation, summed), a recommendation :func:`simulator.recommend.recommend` within
    ``max_seconds``. Progress counts replays of a combination on a conversation."""
    options = simulation.options
    pricing = stored_pricing(options)
    prefix = options.get("min_cacheable_prefix")
    conversations = list(simulation.conversations.order_by("id")) or [simulation.conversation]
    recorded = [recorded_conversation(c) for c in conversations]
    if simulation.kind == "recommend":
        return recommend(
            recorded,
            pricing=pricing,
            grid=simulation.grid,
            max_seconds=float(options.get("max_seconds", DEFAULT_MAX_SECONDS)),
            budget=Budget(**options.get("budget", DEFAULT_BUDGET.to_dict())),
            min_cacheable_prefix=prefix,
            workers=1,
            progress=report,
        ).to_dict()
    return corpus_sweep(
        recorded,
        simulation.grid or {},
        pricing=pricing,
        min_cacheable_prefix=prefix,
        workers=1,
        progress=report,
    ).to_dict()
