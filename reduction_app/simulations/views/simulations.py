"""Simulations (``/simulations/``): the workspace's replays and sweeps, and one
simulation's page.

While a simulation runs, its page shows how far it is (combinations done of all, and for
a sweep on the task workers the parts queued, running and done, which workers took them,
and the parts queued again after their worker stopped answering) and polls itself every
second with htmx (a "Refresh" link without JavaScript); each look first takes back the
parts whose worker stopped answering (``leases.sweep_lease_check``).
Once done it shows the results: for a sweep the Pareto front of cost against re-fetches,
then every combination in grid order, each with its misses and cost with recovery beside
its re-fetches and cost ("—" for results stored before misses were measured); for a
replay, the first misses of each config.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.simulations.display import METRIC_HELP, miss_examples
from reduction_app.simulations.leases import sweep_lease_check
from reduction_app.simulations.selectors import (
    simulation_get,
    simulation_list,
    simulation_parts,
)

LISTED = 50


@require_GET
@workspace_view
def simulation_list_page(request: PageRequest) -> HttpResponse:
    simulations = simulation_list(workspace=request.workspace)[:LISTED]
    return render_page(request, "reduction_app/simulations.html", {"simulations": simulations})


def _rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for index, result in enumerate(results.get("results", [])):
        totals = result.get("totals", {})
        rows.append(
            {
                "index": index + 1,
                "name": result.get("name", ""),
                "totals": totals,
                "pareto": bool(result.get("pareto")),
                "saved": result.get("cost_saved"),
                # None (shown "—") in results stored before misses were measured.
                "misses": totals.get("misses"),
                "recovery": totals.get("cost_with_recovery_usd"),
            }
        )
    return rows


@require_GET
@workspace_view
def simulation_page(request: PageRequest, simulation_id: int) -> HttpResponse:
    simulation = simulation_get(workspace=request.workspace, simulation_id=simulation_id)
    if simulation is None:
        raise Http404("no such simulation")
    simulation = sweep_lease_check(simulation=simulation)
    running = simulation.status in ("queued", "running")
    context: dict[str, Any] = {
        "simulation": simulation,
        "running": running,
        "parts": simulation_parts(simulation=simulation) if simulation.kind == "sweep" else None,
        "rows": [],
        "front": [],
        "baseline": None,
        "duration": None,
        "misses": [],
        "help": METRIC_HELP,
    }
    if simulation.started_at is not None and simulation.finished_at is not None:
        context["duration"] = (simulation.finished_at - simulation.started_at).total_seconds()
    if simulation.status == "done" and simulation.results:
        rows = _rows(simulation.results)
        # A sweep names its baseline with its totals; a comparison names it, and holds it
        # whole apart when it is none of the configs (no reduction).
        base = simulation.results.get("baseline")
        context.update(
            rows=rows,
            misses=miss_examples(simulation.results),
            front=sorted((r for r in rows if r["pareto"]), key=lambda r: r["totals"]["cost_usd"]),
            baseline=base if isinstance(base, dict) else simulation.results.get("baseline_result"),
        )
    return render_page(
        request, "reduction_app/simulation.html", context, partial="simulation-status"
    )


urlpatterns = [
    path("simulations/", simulation_list_page, name="simulation_list"),
    path("simulations/<int:simulation_id>/", simulation_page, name="simulation"),
]
