"""What every dashboard page shares: who may see which workspace, and which one is shown.

A signed-in user sees only the workspaces they are a member of. The workspace shown is
the one named by ``?workspace=<slug>`` (for that request), else the one chosen with the
switcher (a POST, remembered in the session), else the user's first. Pages call
:func:`workspace_view` and get ``request.workspace`` set.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from reduction_app.http import PageRequest
from reduction_app.models import Workspace

SESSION_KEY = "reduction_workspace"


def workspaces_for(user: Any) -> QuerySet[Workspace]:
    if not user.is_authenticated:
        return Workspace.objects.none()
    return Workspace.objects.filter(members=user).order_by("slug")


def current_workspace(request: HttpRequest) -> Workspace | None:
    mine = workspaces_for(request.user)
    # A link may show another of the user's workspaces, but only the switcher's POST
    # changes the one remembered: a link from another site cannot switch it.
    for wanted in (request.GET.get("workspace"), request.session.get(SESSION_KEY)):
        chosen = mine.filter(slug=wanted).first() if wanted else None
        if chosen is not None:
            return chosen
    return mine.first()


@require_POST
@login_required
def workspace_switch(request: HttpRequest) -> HttpResponse:
    """Remember the workspace chosen in the switcher, then go back to the page."""
    chosen = workspaces_for(request.user).filter(slug=request.POST.get("workspace", "")).first()
    if chosen is None:
        raise Http404("not one of your workspaces")
    request.session[SESSION_KEY] = chosen.slug
    target = request.POST.get("next", "/")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/"
    return redirect(target)


P = ParamSpec("P")
R = TypeVar("R", bound=HttpResponseBase)


def workspace_view(
    view: Callable[Concatenate[PageRequest, P], R],
) -> Callable[Concatenate[HttpRequest, P], R | HttpResponse]:
    """Sign-in required; ``request.workspace`` is the workspace shown (a page saying so
    when the user belongs to none)."""

    def wrapped(request: HttpRequest, /, *args: P.args, **kwargs: P.kwargs) -> R | HttpResponse:
        workspace = current_workspace(request)
        if workspace is None:
            return render(request, "reduction_app/no_workspace.html", status=403)
        page = cast(PageRequest, request)
        page.workspace = workspace
        return view(page, *args, **kwargs)

    return login_required(wraps(view)(wrapped))


def render_page(
    request: HttpRequest, template: str, context: dict[str, Any], partial: str | None = None
) -> HttpResponse:
    """The whole page, or only ``template#partial`` when htmx asks for a swap.

    A history restore (htmx refetching a page missing from its cache) gets the whole page,
    and the answer varies on ``HX-Request`` so no cache serves a partial at a page's URL.
    """
    htmx = getattr(request, "htmx", None)
    swap = bool(partial and htmx and not htmx.history_restore_request)
    response = render(request, f"{template}#{partial}" if swap else template, context)
    patch_vary_headers(response, ("HX-Request",))
    return response
