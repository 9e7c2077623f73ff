"""Sweep (``/sweep/``): sweep a grid over several conversations, or ask for the config to
recommend for them.

The form counts combinations and replays as it is filled (``POST /sweep/count/``),
validates everything and queues the work (:mod:`reduction_app.simulations.corpus`).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from reduction_app import engine
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import Conversation
from reduction_app.paging import digits
from reduction_app.prices.choice import chosen_pricing_name
from reduction_app.prices.selectors import pricing_choices
from reduction_app.simulations.corpus import (
    DEFAULT_MAX_SECONDS,
    MAX_COMBINATIONS,
    MAX_REPLAYS,
    combination_count,
    corpus_simulation_create,
    grid_over_limits,
)
from reduction_app.simulations.selectors import (
    SWEEP_LISTED,
    conversation_sources,
    sweep_candidates,
)
from reduction_app.simulations.services import SimulationInputError, simulation_enqueue
from simulator.recommend import DEFAULT_BUDGET, Budget, is_limit

SCOPES = (
    ("picked", "the conversations ticked below"),
    ("filter", "every conversation the filter shows"),
    ("recordings", "every imported recording"),
)
SWITCH_CHOICES = (("off", "off"), ("on", "on"), ("both", "both"))


def _number(piece: str) -> int:
    """``20000``, ``20_000``, ``20k`` or ``2.5k`` as a whole number; ValueError else."""
    text = piece.strip().replace("_", "").lower()
    if text.endswith("k"):
        value = float(text[:-1]) * 1000
        if not value.is_integer():
            raise ValueError(piece)
        return int(value)
    return int(text)


def _grid(params: QueryDict) -> tuple[dict[str, Any], dict[str, str]]:
    """The grid the fields ask for, and a problem per field at fault."""
    grid: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for spec in engine.config_knobs():
        raw = params.get(spec.name, "").strip()
        if not raw:
            continue
        values: list[int] = []
        for piece in (p for p in raw.split(",") if p.strip()):
            try:
                value = _number(piece)
            except ValueError:
                errors[spec.name] = f"{piece.strip()!r} is not a whole number"
                break
            try:
                engine.check_config({spec.name: value})
            except engine.ConfigError as exc:
                errors[spec.name] = f"{value}: {exc.problem}"
                break
            if value not in values:
                values.append(value)
        if values and spec.name not in errors:
            grid[spec.name] = values
    for spec in engine.config_switches():
        choice = params.get(spec.name, "off")
        if choice == "on":
            grid[spec.name] = [True]
        elif choice == "both":
            grid[spec.name] = [False, True]
    return grid, errors


def _scope(params: QueryDict) -> str:
    scope = params.get("scope", "")
    if scope in dict(SCOPES):
        return scope
    filtered = any(params.get(k) for k in ("q", "source", "format"))
    return "filter" if filtered else "picked"


def _picked(params: QueryDict) -> list[int]:
    return [int(v) for v in params.getlist("conversation") if digits(v)]


def _form(request: PageRequest, params: QueryDict) -> dict[str, Any]:
    """The page's state from ``params``: the selection, the grid and their counts."""
    workspace = request.workspace
    search = params.get("q", "").strip()
    source = params.get("source", "")
    message_format = params.get("format", "")
    candidates = sweep_candidates(
        workspace=workspace, search=search, source=source, message_format=message_format
    )
    scope = _scope(params)
    picked = _picked(params)
    if scope == "recordings":
        selection = list(sweep_candidates(workspace=workspace, source="any"))
    elif scope == "filter":
        selection = list(candidates)
    else:
        selection = list(sweep_candidates(workspace=workspace).filter(pk__in=picked))
    listed = list(candidates[:SWEEP_LISTED])
    shown = {c.pk for c in listed}
    listed += [c for c in selection if scope == "picked" and c.pk not in shown]
    grid, errors = _grid(params)
    combinations = combination_count(grid)
    replays = combinations * len(selection)
    problem = grid_over_limits(combinations, len(selection), sep=":")
    if problem is not None:
        errors["grid"] = problem
    knobs = [
        {
            "name": spec.name,
            "value": params.get(spec.name, ""),
            "default": spec.default,
            "help": spec.help,
            "error": errors.get(spec.name, ""),
        }
        for spec in engine.config_knobs()
    ]
    switches = [
        {"name": spec.name, "value": params.get(spec.name, "off"), "help": spec.help}
        for spec in engine.config_switches()
    ]
    pricing = chosen_pricing_name(request, workspace, params)
    presets = pricing_choices(workspace=workspace)
    return {
        "q": search,
        "source": source,
        "format": message_format,
        "sources": conversation_sources(workspace=workspace),
        "formats": Conversation.FORMAT_CHOICES,
        "scope": scope,
        "scopes": SCOPES,
        "listed": listed,
        "listed_more": candidates.count() > SWEEP_LISTED,
        "picked": set(picked) if picked else {c.pk for c in selection},
        "selection": selection,
        "grid": grid,
        "knobs": knobs,
        "switches": switches,
        "switch_choices": SWITCH_CHOICES,
        "combinations": combinations,
        "replays": replays,
        "errors": errors,
        "pricing": pricing,
        "presets": presets,
        "max_seconds": params.get("max_seconds", str(DEFAULT_MAX_SECONDS)),
        "budget": {
            name: params.get(name, f"{default:g}") for name, default in _budget_defaults().items()
        },
        "limits": {"combinations": MAX_COMBINATIONS, "replays": MAX_REPLAYS},
    }


def _render(
    request: PageRequest, context: dict[str, Any], *, status: int = HTTPStatus.OK
) -> HttpResponse:
    response = render_page(request, "reduction_app/sweep.html", context, partial="sweep-count")
    response.status_code = status
    return response


@require_GET
@workspace_view
def sweep_page(request: PageRequest) -> HttpResponse:
    return _render(request, _form(request, request.GET))


@require_POST
@workspace_view
def sweep_count(request: PageRequest) -> HttpResponse:
    """The counts for the fields as they are (the form's htmx, or its "Count" button)."""
    return _render(request, _form(request, request.POST))


def _budget_defaults() -> dict[str, float]:
    """The budget's fields as the form shows them: the run loss in percent."""
    defaults = DEFAULT_BUDGET.to_dict()
    return {**defaults, "max_run_loss": 100 * defaults["max_run_loss"]}


def _budget(fields: dict[str, str], errors: dict[str, str]) -> Budget:
    """The budget the form gives; an error per field that is no number of at least 0."""
    values: dict[str, float] = {}
    for name, text in fields.items():
        try:
            value = float(str(text).strip())
        except ValueError:
            value = -1.0
        if not is_limit(value):
            errors[name] = f"{text!r} is not a number of at least 0"
            value = 0.0  # the form is shown again with the error; nothing runs
        values[name] = value
    return Budget(
        misses_per_100_calls=values["misses_per_100_calls"],
        refetches_per_100_calls=values["refetches_per_100_calls"],
        max_run_loss=values["max_run_loss"] / 100,
    )


def _start(request: PageRequest, kind: str) -> HttpResponse:
    context = _form(request, request.POST)
    errors: dict[str, str] = context["errors"]
    if not context["selection"]:
        errors["conversations"] = "Pick at least one conversation."
    if kind == "sweep" and not context["grid"] and not errors:
        errors["grid"] = "Give values for at least one knob, or turn a switch on or to both."
    max_seconds = str(context["max_seconds"]).strip()
    if kind == "recommend" and not digits(max_seconds):
        errors["max_seconds"] = f"{max_seconds!r} is not a whole number of seconds"
    budget = _budget(context["budget"], errors) if kind == "recommend" else DEFAULT_BUDGET
    if not errors:
        try:
            simulation = corpus_simulation_create(
                workspace=request.workspace,
                conversations=context["selection"],
                kind=kind,
                grid=context["grid"] or None,
                pricing=context["pricing"],
                max_seconds=int(max_seconds) if kind == "recommend" else DEFAULT_MAX_SECONDS,
                budget=budget,
            )
        except SimulationInputError as exc:
            errors[exc.field] = str(exc).split(": ", 1)[1]
        else:
            simulation_enqueue(simulation=simulation)
            return redirect("simulation", simulation.pk)
    context["error_kind"] = kind
    # A form sent whole, not swapped in part: the page again, with what is wrong.
    response = render_page(request, "reduction_app/sweep.html", context)
    response.status_code = HTTPStatus.BAD_REQUEST
    return response


@require_POST
@workspace_view
def sweep_start(request: PageRequest) -> HttpResponse:
    return _start(request, "sweep")


@require_POST
@workspace_view
def sweep_recommend(request: PageRequest) -> HttpResponse:
    return _start(request, "recommend")


urlpatterns = [
    path("sweep/", sweep_page, name="sweep"),
    path("sweep/count/", sweep_count, name="sweep_count"),
    path("sweep/start/", sweep_start, name="sweep_start"),
    path("sweep/recommend/", sweep_recommend, name="sweep_recommend"),
]
