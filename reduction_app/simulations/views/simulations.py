"""Simulations (``/simulations/``): the workspace's replays, sweeps and
recommendations, and one simulation's page.

While a simulation runs its page polls itself (with a plain "Refresh" link without
JavaScript); once done it shows the results of its kind (docs/dashboard.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import Http404, HttpResponse
from django.urls import path, reverse
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reduction_app.configs.snippets import shown_snippets
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import UNFINISHED, JobStatus, Simulation
from reduction_app.paging import pager_for, paginate
from reduction_app.simulations.display import METRIC_HELP, miss_examples
from reduction_app.simulations.front_chart import front_chart
from reduction_app.simulations.points import (
    front_numbers,
    grid_items,
    group_points,
    page_measure,
    points_of,
)
from reduction_app.simulations.prefix import infers_prefix
from reduction_app.simulations.selectors import (
    simulation_conversations,
    simulation_get,
    simulation_parts,
    simulation_results,
    simulation_rows,
)
from reduction_app.simulations.watch import simulation_check
from reduction_app.sorting import Column, Sorting
from simulator.recommend import LIMIT_LABELS
from simulator.stored import (
    ComparedRun,
    ComparisonResults,
    CorpusCombination,
    CorpusSweepResults,
    RecommendationResults,
    SimulationResults,
    SweepResults,
    SweepRow,
)

LISTED = 50
"""Simulations a page of the list shows."""
SIMULATION_SORTING = Sorting(
    columns=(
        Column("id", "id"),
        Column("kind", "kind", descending_first=False),
        Column("status", "status", descending_first=False),
        Column("done", "progress_done"),
        Column("created", "created_at"),
    ),
    default="-id",
)
"""The simulations list's columns, each sortable by its header (``?sort=``)."""


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def simulation_list_page(request: PageRequest) -> HttpResponse:
    kind = request.GET.get("kind", "")
    status = request.GET.get("status", "")
    rows = simulation_rows(workspace=request.workspace)
    # A value the list does not know filters nothing, as an unknown order sorts by default.
    if kind in dict(Simulation.KIND_CHOICES):
        rows = rows.filter(kind=kind)
    else:
        kind = ""
    if status in JobStatus.values:
        rows = rows.filter(status=status)
    else:
        status = ""
    sort = SIMULATION_SORTING.read(request)
    page = paginate(request, SIMULATION_SORTING.apply(rows, sort), LISTED)
    context = {
        "simulations": page.object_list,
        "page": page,
        "pager": pager_for(request, page),
        "kind": kind,
        "status": status,
        "kinds": Simulation.KIND_CHOICES,
        "statuses": JobStatus.choices,
        "filtered": bool(kind or status),
        "sort": sort,
        "sorting": SIMULATION_SORTING,
    }
    return render_page(request, "reduction_app/simulations.html", context, partial="table")


def _rows(results: SweepResults | CorpusSweepResults | ComparisonResults) -> list[dict[str, Any]]:
    """A row per config or combination."""
    listed: Sequence[ComparedRun | SweepRow | CorpusCombination] = (
        results.combinations if isinstance(results, CorpusSweepResults) else results.results
    )
    return [
        {
            "index": index,
            "config": result.config,
            "name": result.name,
            "totals": result.totals,
            "pareto": getattr(result, "pareto", False),
            "saved": getattr(result, "cost_saved", None),
            # None (shown "—") in results stored before misses were measured.
            "misses": result.totals.misses,
            "recovery": result.totals.cost_with_recovery_usd,
        }
        for index, result in enumerate(listed, start=1)
    ]


def _front(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The front's rows, fewest re-fetches + misses first, rows with the same figures
    shown once with their count."""
    front = sorted((r for r in rows if r["pareto"]), key=lambda r: (r["lost"], -r["saving"]))
    shown: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in front:
        totals = row["totals"]
        key = tuple(getattr(totals, k) for k in _SAME_FIGURES)
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


def _results(simulation: Simulation, results: SimulationResults) -> dict[str, Any]:
    points = points_of(results, simulation.grid)
    groups = group_points(points)
    # One measure on the page: the chart, its front and both tables.
    measure = page_measure(points)
    front = front_numbers(points, measure)
    chart = front_chart(
        groups,
        href=lambda n: reverse("point", args=(simulation.pk, n)),
        measure=measure,
        front=front,
    )
    out: dict[str, Any] = {"points": points, "chart": chart, "groups": groups, "measure": measure}
    if isinstance(results, RecommendationResults):
        recommended = next((p for p in points if p.recommended), None)
        out["recommended"] = recommended
        out["snippets"] = shown_snippets(None if recommended is None else recommended.config)
        out["budget"] = results.budget
        out["searched"] = results.configs_tried
        if results.baseline_cost_usd is not None and results.cost_with_recovery_usd is not None:
            out["dollars"] = {
                "baseline": results.baseline_cost_usd,
                "cost": results.cost_with_recovery_usd,
                "saved": results.baseline_cost_usd - results.cost_with_recovery_usd,
            }
        out["expected"] = results.expected
        out["ceiling"] = results.ceiling
        out["binding"] = None if results.binding is None else LIMIT_LABELS.get(results.binding)
        if results.misses_per_100_calls is not None:
            out["rates"] = {
                "misses": results.misses_per_100_calls,
                "refetches": results.refetches_per_100_calls,
                "run_loss": results.run_loss,
                "runs_worse": results.runs_worse,
            }
        out["rows"] = []
        return out
    rows = _rows(results)
    for row, point in zip(rows, points, strict=False):
        # A sweep's rows are its points, in order; a comparison has no points.
        row.update(pareto=point.number in front, saving=measure.of(point), lost=point.lost)
    # A sweep names its baseline with its totals; a comparison names it, and holds it
    # whole apart when it is none of the configs (no reduction).
    out.update(
        rows=rows,
        misses=miss_examples(results) if isinstance(results, ComparisonResults) else [],
        front=_front(rows),
        baseline=(
            results.baseline_result if isinstance(results, ComparisonResults) else results.baseline
        ),
        corpus=isinstance(results, CorpusSweepResults),
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
    results = simulation_results(simulation)
    if results is not None:
        context.update(_results(simulation, results))
    return render_page(
        request, "reduction_app/simulation.html", context, partial="simulation-status"
    )


urlpatterns = [
    path("simulations/", simulation_list_page, name="simulation_list"),
    path("simulations/<int:simulation_id>/", simulation_page, name="simulation"),
]
