"""One point of a sweep or a recommendation (``/simulations/<id>/points/<n>/``): its knobs
as ``name = value``, its figures, and what to do with it: open it in Tune or Compare,
or save it as a config.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from reduction_app import engine
from reduction_app.configs.selectors import config_rows
from reduction_app.configs.services import config_create
from reduction_app.configs.snippets import shown_snippets
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.errors import ServiceError
from reduction_app.http import PageRequest
from reduction_app.models import Conversation, Simulation, Workspace
from reduction_app.paging import digits
from reduction_app.prices.selectors import pricing_choices
from reduction_app.simulations.points import (
    Point,
    group_points,
    point_name,
    point_value,
    points_of,
)
from reduction_app.simulations.selectors import (
    simulation_conversations,
    simulation_get,
    simulation_results,
)


def _point(request: PageRequest, simulation_id: int, number: int) -> tuple[Simulation, Point]:
    simulation = simulation_get(workspace=request.workspace, simulation_id=simulation_id)
    if simulation is None:
        raise Http404("no such simulation")
    points = points_of(simulation_results(simulation), simulation.grid)
    if not 1 <= number <= len(points):
        raise Http404("no such point")
    return simulation, points[number - 1]


def tune_fields(point: Point) -> list[tuple[str, str]]:
    """The point's knobs and switches as the Tune page reads them from its query."""
    values = point.config
    fields = [("start", "defaults")]
    for spec in engine.config_knobs():
        if spec.name in values:
            fields.append((spec.name, str(values[spec.name])))
    for spec in engine.config_switches():
        if spec.name in values:
            fields.append((spec.name, "on" if values[spec.name] else "off"))
    return fields


def sweep_pricing(simulation: Simulation, workspace: Workspace) -> list[tuple[str, str]]:
    """``[("pricing", name)]``: the price the sweep ran at, for the links to Compare and
    Tune, while the workspace still offers it (a workspace price may be gone); ``[]``
    else, and those pages take the remembered one (:mod:`reduction_app.prices.choice`)."""
    name = simulation.options.get("pricing")
    if isinstance(name, str) and name in pricing_choices(workspace=workspace):
        return [("pricing", name)]
    return []


def _context(simulation: Simulation, point: Point, **extra: Any) -> dict[str, Any]:
    points = points_of(simulation_results(simulation), simulation.grid)
    same = next(g for g in group_points(points) if point in g.members)
    conversations = simulation_conversations(simulation=simulation)
    priced = sweep_pricing(simulation, simulation.workspace)
    return {
        "simulation": simulation,
        "point": point,
        "same": [p for p in same.members if p is not point],
        "conversations": conversations,
        "worse_on": worse_conversations(point, conversations),
        "tune_fields": tune_fields(point) + priced,
        "sweep_pricing": priced,
        "save_name": point_name(simulation, point),
        "point_label": point_name(simulation, point),
        "snippets": shown_snippets(point.config),
        **extra,
    }


@require_GET
@workspace_view
def point_page(request: PageRequest, simulation_id: int, number: int) -> HttpResponse:
    """The point's page; its "Open in Tune" is a GET form to ``/tune/`` carrying the
    point's knobs and switches (:func:`tune_fields`) on the conversation chosen."""
    simulation, point = _point(request, simulation_id, number)
    return render_page(request, "reduction_app/sweep_point.html", _context(simulation, point))


def worse_conversations(point: Point, conversations: list[Conversation]) -> list[Conversation]:
    """The conversations the point costs more on than no reduction, with recovery, as
    the sweep named them (by client id); ``[]`` for results that did not name them."""
    named = set(point.worse_runs)
    return [c for c in conversations if c.client_id in named]


def _stored(workspace: Workspace, config: dict[str, Any]) -> int | None:
    """The id of a live config whose latest version holds exactly ``config``."""
    full = engine.config_to_dict(engine.check_config(config))
    for row in config_rows(workspace=workspace):
        if row.latest_data == full:
            return int(row.pk)
    return None


@require_POST
@workspace_view
def point_compare(request: PageRequest, simulation_id: int, number: int) -> HttpResponse:
    """The "Open in Compare" button: ``/compare/`` on the conversation chosen, no reduction
    first (so every delta is against it), then the point: the workspace's config holding
    exactly its settings when there is one, else the point itself, replayed without being
    saved (nothing is added to the configs)."""
    simulation, point = _point(request, simulation_id, number)
    wanted = request.POST.get("conversation", "")
    conversations = simulation_conversations(simulation=simulation)
    conversation: Conversation | None = next(
        (c for c in conversations if digits(wanted) and c.pk == int(wanted)), conversations[0]
    )
    assert conversation is not None
    try:
        profile_id = _stored(request.workspace, point.config)
    except engine.ConfigError as exc:
        context = _context(simulation, point, compare_error=str(exc))
        response = render_page(request, "reduction_app/sweep_point.html", context)
        response.status_code = HTTPStatus.BAD_REQUEST
        return response
    config = str(profile_id) if profile_id is not None else point_value(simulation, point)
    query = [
        ("conversation", str(conversation.pk)),
        ("config", "none"),
        ("config", config),
        ("baseline", "first"),
    ]
    query += sweep_pricing(simulation, request.workspace)
    return redirect(f"/compare/?{urlencode(query)}")


@require_POST
@workspace_view
def point_save(request: PageRequest, simulation_id: int, number: int) -> HttpResponse:
    """The "Save as config" button: save the point under the name given, then go to the
    config's versions, which say it was saved and offer it to copy."""
    simulation, point = _point(request, simulation_id, number)
    name = request.POST.get("name", "").strip()
    error = ""
    if not name:
        error = "Give the new config a name."
    else:
        try:
            version = config_create(workspace=request.workspace, name=name[:100], data=point.config)
        except (engine.ConfigError, ServiceError) as exc:
            error = str(exc)
        else:
            messages.success(
                request,
                f"Saved as config “{version.profile.name}”, version {version.number}: "
                "copy it below, or open it in Compare or Tune.",
            )
            return redirect("config_versions", version.profile.pk)
    context = _context(simulation, point, save_name=name, save_error=error)
    response = render_page(request, "reduction_app/sweep_point.html", context)
    response.status_code = HTTPStatus.BAD_REQUEST
    return response


urlpatterns = [
    path("simulations/<int:simulation_id>/points/<int:number>/", point_page, name="point"),
    path(
        "simulations/<int:simulation_id>/points/<int:number>/compare/",
        point_compare,
        name="point_compare",
    ),
    path(
        "simulations/<int:simulation_id>/points/<int:number>/save/",
        point_save,
        name="point_save",
    ),
]
