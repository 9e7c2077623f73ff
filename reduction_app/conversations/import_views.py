"""Importing recordings from the dashboard (``/imports/``): upload agent runs in any format
the simulator reads and see what each file became; and one import's page
(``/imports/<id>/``), which follows a big import on the task workers.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods

from reduction_app.conversations import imports
from reduction_app.conversations.selectors import recording_import_get, recording_import_list
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.errors import ServiceError
from reduction_app.http import PageRequest
from reduction_app.models import UNFINISHED
from reduction_app.sorting import Column, Sorting
from simulator.importers import FORMATS

LISTED = 20
TEMPLATE = "reduction_app/imports.html"
IMPORT_SORTING = Sorting(
    columns=(
        Column("id", "id"),
        Column("status", "status", descending_first=False),
        Column("done", "progress_done"),
        Column("created", "created_at"),
    ),
    default="-id",
)
"""The recent imports' columns, each sortable by its header (``?sort=``): the page lists
the first ``LISTED`` of the workspace's imports in that order."""


def _form_page(
    request: PageRequest, context: dict[str, Any], status: int = HTTPStatus.OK
) -> HttpResponse:
    sort = IMPORT_SORTING.read(request)
    recent = IMPORT_SORTING.apply(recording_import_list(workspace=request.workspace), sort)
    context = {
        "formats": FORMATS,
        "format": "",
        "replace": False,
        "result": None,
        "error": "",
        "inline_bytes": settings.REDUCTION_IMPORT_INLINE_BYTES,
        "recent": recent[:LISTED],
        "sort": sort,
        "sorting": IMPORT_SORTING,
        **context,
    }
    # A header's click swaps only the list; an upload's answer is always the whole page.
    partial = "recent" if request.method == "GET" else None
    response = render_page(request, TEMPLATE, context, partial=partial)
    response.status_code = status
    return response


def _upload(request: PageRequest) -> HttpResponse:
    """Uploads up to ``REDUCTION_IMPORT_INLINE_BYTES`` in all are imported here and shown at
    once; bigger ones go to the task workers, and the browser to the import's page."""
    fmt = request.POST.get("format", "")
    replace = request.POST.get("replace") == "on"
    chosen = {"format": fmt if fmt in FORMATS else "", "replace": replace}
    files = [(f.name or "recording", f.read()) for f in request.FILES.getlist("file")]
    if not files:
        return _form_page(
            request, {**chosen, "error": "Choose one or more files."}, HTTPStatus.BAD_REQUEST
        )
    workspace = request.workspace
    try:
        if not imports.runs_inline(files):
            job = imports.recording_import_create(
                workspace=workspace, files=files, fmt=fmt, replace=replace
            )
            imports.recording_import_enqueue(recording_import=job)
            return redirect("recording_import", import_id=job.pk)
        job = imports.recording_import_inline(
            workspace=workspace, files=files, fmt=fmt, replace=replace
        )
    except (imports.RecordingImportError, ServiceError) as exc:
        return _form_page(request, {**chosen, "error": str(exc)}, HTTPStatus.UNPROCESSABLE_ENTITY)
    return _form_page(request, {**chosen, "result": job})


@require_http_methods(["GET", "POST"])
@workspace_view
def import_page(request: PageRequest) -> HttpResponse:
    """The upload form, the workspace's recent imports, and a POSTed upload's result."""
    # An upload over REDUCTION_MAX_REQUEST_BYTES never gets here (limits.py answers 413).
    if request.method == "POST":
        return _upload(request)
    return _form_page(request, {})


@require_GET
@workspace_view
def import_detail(request: PageRequest, import_id: int) -> HttpResponse:
    """One import's progress or result; running, it polls itself every second with htmx
    (a "Refresh" link without JavaScript) until it is done."""
    job = recording_import_get(workspace=request.workspace, import_id=import_id)
    if job is None:
        raise Http404("no such import")
    job = imports.recording_import_check(recording_import=job)
    context = {"job": job, "running": job.status in UNFINISHED}
    return render_page(
        request, "reduction_app/recording_import.html", context, partial="import-status"
    )


urlpatterns = [
    path("imports/", import_page, name="imports"),
    path("imports/<int:import_id>/", import_detail, name="recording_import"),
]
