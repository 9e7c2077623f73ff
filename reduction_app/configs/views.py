"""The Configs pages: list, create, edit (a new version), versions, delete."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods

from reduction_app import engine
from reduction_app.configs.forms import (
    ConfigForm,
    config_defaults,
    display_value,
    initial_from_data,
    version_changes,
)
from reduction_app.configs.selectors import config_profile, config_rows, config_versions
from reduction_app.configs.services import config_create, config_delete, config_update
from reduction_app.configs.snippets import shown_snippets
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.errors import ServiceError
from reduction_app.http import PageRequest
from reduction_app.models import ConfigProfile
from reduction_app.sorting import Column, Sorting

if TYPE_CHECKING:
    from reduction_app.configs.selectors import ConfigRow

KEY_FIELDS = ("max_tokens_for_clear", "clear_retention_suffix_limit", "max_length_for_trunc")
"""The fields the list shows; the rest is one click away."""
CONFIG_SORTING = Sorting(
    columns=(
        Column("name", "name", descending_first=False),
        Column("version", "latest_number"),
        Column("updated", "updated_at"),
    ),
    default="name",
)
"""The configs list's columns, each sortable by its header (``?sort=``)."""


def _profile_or_404(request: PageRequest, profile_id: int) -> ConfigRow:
    profile = config_profile(workspace=request.workspace, profile_id=profile_id)
    if profile is None:
        raise Http404("no such config")
    return profile


def _phases(data: dict[str, Any]) -> str:
    on = [p for p in ("truncation", "clear") if not data.get(f"skip_{p}")]
    return " + ".join(on) if on else "no reduction"


@require_GET
@workspace_view
def config_list(request: PageRequest) -> HttpResponse:
    defaults = config_defaults()
    search = request.GET.get("q", "").strip()
    sort = CONFIG_SORTING.read(request)
    profiles = config_rows(workspace=request.workspace)
    if search:
        profiles = profiles.filter(name__icontains=search)
    rows = []
    for profile in profiles.order_by(*sort.order_by()):
        data = {**defaults, **(profile.latest_data or {})}
        rows.append(
            {
                "profile": profile,
                "phases": _phases(data),
                "fields": [(name, display_value(name, data[name])) for name in KEY_FIELDS],
            }
        )
    context = {
        "rows": rows,
        "key_fields": KEY_FIELDS,
        "q": search,
        "sort": sort,
        "sorting": CONFIG_SORTING,
    }
    return render_page(request, "reduction_app/configs.html", context, partial="config-table")


def _save_form(
    request: PageRequest, form: ConfigForm, profile: ConfigProfile | None
) -> ConfigProfile | None:
    """Create or update from a valid form; the profile, or ``None`` with the form's error."""
    name = form.cleaned_data["name"]
    try:
        if profile is None:
            return config_create(
                workspace=request.workspace,
                name=name,
                data=form.config_data,
            ).profile
        config_update(profile=profile, data=form.config_data, name=name)
    except ServiceError as exc:
        form.add_error("name", str(exc))
        return None
    except engine.ConfigError as exc:  # the form checked already; kept for races in the engine
        form.add_error(exc.field if exc.field in form.fields else None, str(exc))
        return None
    return profile


def _render_form(
    request: PageRequest, form: ConfigForm, profile: ConfigProfile | None
) -> HttpResponse:
    context = {"form": form, "profile": profile}
    return render_page(request, "reduction_app/config_form.html", context, partial="config-form")


@require_http_methods(["GET", "POST"])
@workspace_view
def config_new(request: PageRequest) -> HttpResponse:
    if request.method == "POST":
        form = ConfigForm(request.POST)
        if form.is_valid():
            profile = _save_form(request, form, None)
            if profile is not None:
                messages.success(request, f"Saved config “{profile.name}”, version 1.")
                return redirect("config_versions", profile_id=profile.pk)
    else:
        form = ConfigForm(initial=initial_from_data({}))
    return _render_form(request, form, None)


@require_http_methods(["GET", "POST"])
@workspace_view
def config_edit(request: PageRequest, profile_id: int) -> HttpResponse:
    profile = _profile_or_404(request, profile_id)
    if request.method == "POST":
        form = ConfigForm(request.POST)
        if form.is_valid():
            current = {**config_defaults(), **(profile.latest_data or {})}
            unchanged = form.cleaned_data["name"] == profile.name and not version_changes(
                current, {**config_defaults(), **form.config_data}
            )
            if unchanged:
                messages.info(request, "Nothing changed, so no version was added.")
                return redirect("config_versions", profile_id=profile.pk)
            if _save_form(request, form, profile) is not None:
                latest = profile.versions.values_list("number", flat=True).first()
                messages.success(request, f"Saved “{profile.name}”, version {latest}.")
                return redirect("config_versions", profile_id=profile.pk)
    else:
        form = ConfigForm(
            initial={"name": profile.name, **initial_from_data(profile.latest_data or {})}
        )
    return _render_form(request, form, profile)


@require_GET
@workspace_view
def config_version_list(request: PageRequest, profile_id: int) -> HttpResponse:
    profile = _profile_or_404(request, profile_id)
    versions = config_versions(profile=profile)
    defaults = config_defaults()
    items = []
    for i, version in enumerate(versions):
        previous = versions[i + 1].data if i + 1 < len(versions) else None
        changes = version_changes(previous, version.data)
        changed = {name for name, _, _ in changes}
        data = {**defaults, **version.data}
        items.append(
            {
                "version": version,
                "changes": changes,
                "values": [
                    (name, display_value(name, data[name]), name in changed)
                    for name in engine.JSON_FIELDS
                ],
                "snippets": shown_snippets(version.data),
                "snippet_prefix": f"v{version.number}-",
            }
        )
    context = {"profile": profile, "items": items}
    return render_page(request, "reduction_app/config_versions.html", context)


@require_http_methods(["GET", "POST"])
@workspace_view
def config_delete_view(request: PageRequest, profile_id: int) -> HttpResponse:
    """GET asks for confirmation; POST hides the profile."""
    profile = _profile_or_404(request, profile_id)
    if request.method == "POST":
        config_delete(profile=profile)
        return redirect("configs")
    return render_page(request, "reduction_app/config_delete.html", {"profile": profile})


urlpatterns = [
    path("configs/", config_list, name="configs"),
    path("configs/new/", config_new, name="config_new"),
    path("configs/<int:profile_id>/edit/", config_edit, name="config_edit"),
    path("configs/<int:profile_id>/versions/", config_version_list, name="config_versions"),
    path("configs/<int:profile_id>/delete/", config_delete_view, name="config_delete"),
]
