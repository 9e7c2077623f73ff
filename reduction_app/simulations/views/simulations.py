"""Simulations (``/simulations/``): the workspace's replays, sweeps and
recommendations, and one simulation's page.

While a simulation runs, its page shows how far it is (replays done of all; for a sweep
of one conversation on the task workers, in a details section, the parts queued, running
and done, which workers took them, and the parts queued again after their worker stopped
answering) and polls itself every second with htmx (a "Refresh" link without
JavaScript); each look first takes back the parts whose worker stopped answering
(``watch.simulation_check``).
Once done it shows the results: for a sweep the front chart (cost saved against
re-fetches and misses, one circle per distinct point, each linking to the point's page:
:mod:`.points`), the Pareto front of cost against re-fetches (rows with the same figures
once, with their count), then every combination in grid order, each with its misses and
cost with recovery beside its re-fetches and cost ("—" for results stored before misses
were measured); for a recommendation the config recommended, or why there is none, and
its front; for a replay, the first misses of each config. When some of its conversations
are recordings that left out a prefix (Claude Code logs), it says whether their replays
counted it (:mod:`reduction_app.simulations.prefix`).
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import UNFINISHED, JobStatus, Simulation
from reduction_app.simulations.display import METRIC_HELP, miss_examples
from reduction_app.simulations.front_chart import front_chart
from reduction_app.simulations.points import grid_items, group_points, points_of
from reduction_app.simulations.prefix import infers_prefix
from reduction_app.simulations.selectors import (
    simulation_conversations,
    simulation_get,
    simulation_parts,
    simulation_rows,
)
from reduction_app.simulations.watch import simulation_check
from simulator.recommend import LIMIT_LABELS

LISTED = 50


@require_GET
@workspace_view
def simulation_list_page(request: PageRequest) -> HttpResponse:
    simulations = simulation_rows(workspace=request.workspace)[:LISTED]
    return render_page(request, "reduction_app/simulations.html", {"simulations": simulations})


def _rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """A row per config or combination (a sweep over several conversations stores them
    under ``combinations``, with the same fields)."""
    rows = []
    listed = results.get("results") or results.get("combinations") or []
    for index, result in enumerate(listed):
        totals = result.get("totals", {})
        rows.append(
            {
                "index": index + 1,
                "config": result.get("config"),
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


def _front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The front's rows, cheapest first, rows with the same figures shown once with
    their count."""
    front = sorted((r for r in rows if r["pareto"]), key=lambda r: r["totals"]["cost_usd"])
    shown: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in front:
        totals = row["totals"]
        key = tuple(totals.get(k) for k in _SAME_FIGURES)
        if key in shown:
            shown[key]["same"].append(row)
        else:
            shown[key] = {**row, "same": []}
    return list(shown.values())


_SAME_FIGURES = (
    "cost_usd",
    "cost_with_recovery_usd",
    "refetches",
    "misses",
    "input_tokens_billed",
)


def _results(simulation: Simulation, results: dict[str, Any]) -> dict[str, Any]:
    points = points_of(simulation.kind, results, simulation.grid)
    groups = group_points(points)
    recovery = any(p.saved_with_recovery is not None for p in points)
    chart = front_chart(
        groups,
        href=lambda n: reverse("point", args=(simulation.pk, n)),
        recovery=recovery,
    )
    out: dict[str, Any] = {"points": points, "chart": chart, "groups": groups}
    if simulation.kind == "recommend":
        out["recommended"] = next((p for p in points if p.recommended), None)
        out["budget"] = results.get("budget")
        out["expected"] = results.get("expected")
        out["ceiling"] = results.get("ceiling")
        binding = results.get("binding")
        out["binding"] = LIMIT_LABELS.get(binding) if isinstance(binding, str) else None
        if results.get("misses_per_100_calls") is not None:
            out["rates"] = {
                "misses": results["misses_per_100_calls"],
                "refetches": results.get("refetches_per_100_calls"),
                "run_loss": results.get("run_loss"),
                "runs_worse": results.get("runs_worse"),
            }
        out["rows"] = []
        return out
    rows = _rows(results)
    # A sweep names its baseline with its totals; a comparison names it, and holds it
    # whole apart when it is none of the configs (no reduction).
    base = results.get("baseline")
    out.update(
        rows=rows,
        misses=miss_examples(results),
        front=_front(rows),
        baseline=base if isinstance(base, dict) else results.get("baseline_result"),
        corpus="combinations" in results,
    )
    return out


@require_GET
@workspace_view
def simulation_page(request: PageRequest, simulation_id: int) -> HttpResponse:
    simulation = simulation_get(workspace=request.workspace, simulation_id=simulation_id)
    if simulation is None:
        raise Http404("no such simulation")
    simulation = simulation_check(simulation=simulation)
    running = simulation.status in UNFINISHED
    corpus = bool(simulation.options.get("corpus"))
    conversations = simulation_conversations(simulation=simulation)
    context: dict[str, Any] = {
        "simulation": simulation,
        "running": running,
        "corpus": corpus,
        "conversations": conversations,
        "prefixed": [c for c in conversations if infers_prefix(c)],
        "prefix_on": simulation.options.get("inferred_prefix", True) is not False,
        "grid": grid_items(simulation.grid),
        "parts": (
            simulation_parts(simulation=simulation)
            if simulation.kind == "sweep" and not corpus
            else None
        ),
        "rows": [],
        "front": [],
        "baseline": None,
        "duration": None,
        "misses": [],
        "help": METRIC_HELP,
    }
    if simulation.started_at is not None and simulation.finished_at is not None:
        context["duration"] = (simulation.finished_at - simulation.started_at).total_seconds()
    if simulation.status == JobStatus.DONE and simulation.results:
        context.update(_results(simulation, simulation.results))
    return render_page(
        request, "reduction_app/simulation.html", context, partial="simulation-status"
    )


urlpatterns = [
    path("simulations/", simulation_list_page, name="simulation_list"),
    path("simulations/<int:simulation_id>/", simulation_page, name="simulation"),
]
