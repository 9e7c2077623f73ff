"""Which price Sweep, a sweep's points, Compare and Tune count and bill with, and the
Overview and the conversations price what was recorded at.

A page's ``pricing`` parameter (a link's or a form's) wins and is remembered in the
user's session; without one, the page uses the one remembered while the workspace still
offers it, else ``simulator.pricing.DEFAULT_PRICING_NAME``, the default's one home. Links
between these pages always name the price, so each shows what the page before it showed.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.http import Http404, HttpRequest

from reduction_app.models import Workspace
from reduction_app.prices.selectors import UnknownPricing, pricing_choices, pricing_for
from simulator.pricing import DEFAULT_PRICING_NAME, Pricing

__all__ = [
    "SESSION_KEY",
    "chosen_pricing",
    "chosen_pricing_name",
    "listed_pricing",
    "picked_pricing",
]

SESSION_KEY = "reduction_pricing"


def picked_pricing(workspace: Workspace, name: str) -> Pricing:
    """The price ``name`` names (a preset or the workspace's own), or a 404."""
    try:
        return pricing_for(workspace=workspace, name=name)
    except UnknownPricing:
        raise Http404(f"no such price: {name}") from None


def _remembered(request: HttpRequest, workspace: Workspace) -> str:
    remembered = request.session.get(SESSION_KEY)
    if isinstance(remembered, str) and remembered in pricing_choices(workspace=workspace):
        return remembered
    return DEFAULT_PRICING_NAME


def chosen_pricing_name(
    request: HttpRequest, workspace: Workspace, params: Mapping[str, str]
) -> str:
    """The price's name for a page whose query or form is ``params``: one it names and
    the workspace offers (then remembered), else the remembered one, else the default."""
    asked = params.get("pricing") or ""
    if asked and asked in pricing_choices(workspace=workspace):
        request.session[SESSION_KEY] = asked
        return asked
    return _remembered(request, workspace)


def chosen_pricing(
    request: HttpRequest, workspace: Workspace, params: Mapping[str, str]
) -> tuple[str, Pricing]:
    """The name and the price a page shows: the one its ``pricing`` parameter names (a 404
    when the workspace has no such price), remembered for the pages after it, else the
    remembered one, else the default."""
    asked = params.get("pricing") or ""
    if asked:
        price = picked_pricing(workspace, asked)
        request.session[SESSION_KEY] = asked
        return asked, price
    name = _remembered(request, workspace)
    return name, picked_pricing(workspace, name)


def listed_pricing(
    request: HttpRequest, workspace: Workspace, params: Mapping[str, str]
) -> tuple[str, Pricing]:
    """For the pages that price what was recorded (the Overview, the conversations): as
    :func:`chosen_pricing`, but a name the workspace does not offer shows the remembered
    price (else the default) rather than a 404, so the page always shows."""
    name = chosen_pricing_name(request, workspace, params)
    return name, picked_pricing(workspace, name)
