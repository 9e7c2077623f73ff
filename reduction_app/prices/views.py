"""The Prices pages: the built-in presets, and a workspace's own prices to list, add,
edit and delete."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_http_methods

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.errors import ServiceError
from reduction_app.http import PageRequest
from reduction_app.models import Workspace, WorkspacePrice
from reduction_app.prices.forms import PriceForm, initial_from_data
from reduction_app.prices.selectors import UnknownPricing, price_get, price_list, pricing_for
from reduction_app.prices.services import price_create, price_update
from reduction_app.prices.services import price_delete as price_remove
from simulator.price_file import pricing_to_json
from simulator.pricing import (
    DEFAULT_PRICING_NAME,
    LONG_CONTEXT_FIELDS,
    PRESETS,
    PRICE_FIELDS,
    PRICES_AS_OF,
    Pricing,
)


def picked_pricing(workspace: Workspace, name: str) -> Pricing:
    """The price a page's ``pricing`` parameter names (a preset or the workspace's own),
    or a 404."""
    try:
        return pricing_for(workspace=workspace, name=name)
    except UnknownPricing:
        raise Http404(f"no such price: {name}") from None


def pricing_param(workspace: Workspace, name: str | None) -> tuple[str, Pricing]:
    """The price a list's ``?pricing=`` names and its name; the default price for a
    name that is neither a preset nor one of the workspace's (a list still shows)."""
    if name:
        try:
            return name, pricing_for(workspace=workspace, name=name)
        except UnknownPricing:
            pass
    return DEFAULT_PRICING_NAME, PRESETS[DEFAULT_PRICING_NAME]


def _price_or_404(request: PageRequest, price_id: int) -> WorkspacePrice:
    price = price_get(workspace=request.workspace, price_id=price_id)
    if price is None:
        raise Http404("no such price")
    return price


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _values(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A price's JSON form as table cells: each field's value, then its tier."""
    cells = [(f.key, _text(data.get(f.key))) for f in PRICE_FIELDS]
    tier = data.get("long_context")
    if tier:
        parts = [f"{f.key} {_text(tier.get(f.key))}" for f in LONG_CONTEXT_FIELDS[1:]]
        cells.append(("long_context", f"past {tier['above']:,}: " + ", ".join(parts)))
    else:
        cells.append(("long_context", "-"))
    return cells


@require_GET
@workspace_view
def price_list_view(request: PageRequest) -> HttpResponse:
    own = [
        {"pk": p.pk, "name": p.name, "updated_at": p.updated_at, "values": _values(p.data)}
        for p in price_list(workspace=request.workspace)
    ]
    presets = [{"name": p.name, "values": _values(pricing_to_json(p))} for p in PRESETS.values()]
    context = {"own": own, "presets": presets, "fields": PRICE_FIELDS, "as_of": PRICES_AS_OF}
    return render_page(request, "reduction_app/prices.html", context)


def _render_form(
    request: PageRequest, form: PriceForm, price: WorkspacePrice | None
) -> HttpResponse:
    context = {"form": form, "price": price, "presets": list(PRESETS)}
    return render_page(request, "reduction_app/price_form.html", context)


def _save(request: PageRequest, form: PriceForm, price: WorkspacePrice | None) -> bool:
    try:
        if price is None:
            price_create(workspace=request.workspace, data=form.price_data)
        else:
            price_update(price=price, data=form.price_data)
    except ServiceError as exc:
        form.add_error("name", str(exc))
        return False
    return True


@require_http_methods(["GET", "POST"])
@workspace_view
def price_new(request: PageRequest) -> HttpResponse:
    """``?base=PRESET`` fills the form with a preset's values to start from."""
    if request.method == "POST":
        form = PriceForm(request.POST)
        if form.is_valid() and _save(request, form, None):
            return redirect("prices")
    else:
        base = PRESETS.get(request.GET.get("base", ""))
        initial: dict[str, Any] = {"prompt_cache": True}
        if base:
            initial = initial_from_data(pricing_to_json(base))
        if base:
            initial["name"] = f"{base.name}-mine"
        form = PriceForm(initial=initial)
    return _render_form(request, form, None)


@require_http_methods(["GET", "POST"])
@workspace_view
def price_edit(request: PageRequest, price_id: int) -> HttpResponse:
    price = _price_or_404(request, price_id)
    if request.method == "POST":
        form = PriceForm(request.POST)
        if form.is_valid() and _save(request, form, price):
            return redirect("prices")
    else:
        form = PriceForm(initial=initial_from_data(price.data))
    return _render_form(request, form, price)


@require_http_methods(["GET", "POST"])
@workspace_view
def price_delete(request: PageRequest, price_id: int) -> HttpResponse:
    """GET asks for confirmation; POST removes the price."""
    price = _price_or_404(request, price_id)
    if request.method == "POST":
        price_remove(price=price)
        return redirect("prices")
    return render_page(request, "reduction_app/price_delete.html", {"price": price})


urlpatterns = [
    path("prices/", price_list_view, name="prices"),
    path("prices/new/", price_new, name="price_new"),
    path("prices/<int:price_id>/edit/", price_edit, name="price_edit"),
    path("prices/<int:price_id>/delete/", price_delete, name="price_delete"),
]
