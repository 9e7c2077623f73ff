"""Simulations over HTTP: replay a recorded conversation under configs, or sweep a grid.

Small replays answer inline (``201``, done); sweeps and big replays are queued for the
task workers (``202``; a sweep as one task per combination) and polled with
``GET /simulations/{id}``, which lists a sweep's parts and first takes back those whose
worker stopped answering.
"""

# No `from __future__ import annotations`: django-ninja reads these signatures at import.

from typing import Any

from ninja import Router, Status
from ninja.pagination import paginate

from reduction_app.conversations.selectors import conversation_get
from reduction_app.cursors import LIST_ERRORS, PAGE, IdCursorPagination
from reduction_app.http import ApiRequest, api_workspace
from reduction_app.models import Simulation
from reduction_app.schemas import (
    BODY_ERRORS,
    PARAM_ERRORS,
    ApiError,
    ErrorOut,
    response_links,
)
from reduction_app.simulations.schemas import SimulationDetailOut, SimulationIn, SimulationOut
from reduction_app.simulations.selectors import simulation_get, simulation_list
from reduction_app.simulations.services import (
    SimulationInputError,
    runs_inline,
    simulation_create,
    simulation_enqueue,
    simulation_run,
)
from reduction_app.simulations.watch import simulation_check

router = Router(tags=["simulations"])


@router.post(
    "/simulations",
    response={201: SimulationOut, 202: SimulationOut, **BODY_ERRORS, 404: ErrorOut},
    openapi_extra=response_links(
        (201, 202), "simulation_id", "id", ("reduction_app_api_simulations_get_simulation",)
    ),
    url_name="simulation_create",
)
def create_simulation(request: ApiRequest, payload: SimulationIn) -> Status[Simulation]:
    """Replay a recorded conversation under each config (or sweep ``grid``) and measure it."""
    workspace = api_workspace(request)
    conversation = conversation_get(workspace=workspace, client_id=payload.conversation_id)
    if conversation is None:
        raise ApiError(
            404, f"conversation {payload.conversation_id!r} not found", "conversation_id"
        )
    try:
        simulation = simulation_create(
            workspace=workspace,
            conversation=conversation,
            configs=[c.model_dump() for c in payload.configs],
            grid=payload.grid,
            baseline=payload.baseline,
            pricing=payload.pricing,
            min_cacheable_prefix=payload.min_cacheable_prefix,
            inferred_prefix=payload.inferred_prefix,
        )
    except SimulationInputError as exc:
        raise ApiError(422, str(exc), exc.field) from exc
    if runs_inline(simulation):
        return Status(201, simulation_run(simulation_id=simulation.pk))
    simulation_enqueue(simulation=simulation)
    return Status(202, simulation)


@router.get(
    "/simulations/{simulation_id}",
    response={200: SimulationDetailOut, **PARAM_ERRORS, 404: ErrorOut},
    url_name="simulation_detail",
)
def get_simulation(request: ApiRequest, simulation_id: int) -> Status[Simulation]:
    """A simulation; a sweep's with its parts, after taking back those whose worker
    stopped answering."""
    simulation = simulation_get(workspace=api_workspace(request), simulation_id=simulation_id)
    if simulation is None:
        raise ApiError(404, f"simulation {simulation_id} not found", "simulation_id")
    return Status(200, simulation_check(simulation=simulation))


@router.get(
    "/simulations",
    response={200: list[SimulationOut], **LIST_ERRORS},
    url_name="simulation_list",
)
@paginate(IdCursorPagination, **PAGE)
def list_simulations(request: ApiRequest) -> Any:
    return simulation_list(workspace=api_workspace(request))
