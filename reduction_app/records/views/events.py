"""The events page (``/events/``): every recorded event, filtered by conversation, phase,
tool and time, newest first or sorted by a column (``?sort=``), paged by cursor
(``?before=<id>`` / ``?after=<id>``: keyset on the sort column and the id, so a page costs
the same however deep it is)."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.http import HttpResponse
from django.urls import path
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.paging import Pager, int_param, url_with
from reduction_app.records import selectors
from reduction_app.records.views import filtered_to
from reduction_app.sorting import Column, Sorting, keyset_page

EVENTS_PER_PAGE = 50
PHASES = (("", "any"), ("truncation", "truncation"), ("clear", "clear"))
EVENT_SORTING = Sorting(
    columns=(
        Column("id", "id"),
        Column("when", "created_at"),
        Column("phase", "phase", descending_first=False),
        Column("tool", "tool_name", descending_first=False),
        Column("call", "call_id", descending_first=False),
        Column("tokens", "tokens_before"),
        Column("saved", "tokens_saved"),
    ),
    default="-id",
)
"""The events list's columns, each sortable by its header (``?sort=``)."""


class EventFilterForm(forms.Form):
    conversation = forms.CharField(required=False, max_length=200, label="Conversation id")
    phase = forms.ChoiceField(required=False, choices=PHASES)
    tool = forms.ChoiceField(required=False, choices=())
    since = forms.DateTimeField(
        required=False,
        label="Since (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )
    until = forms.DateTimeField(
        required=False,
        label="Until (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
    )

    def __init__(self, *args: Any, tools: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["tool"]).choices = [
            ("", "any"),
            *((t, t) for t in tools),
        ]


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def event_list(request: PageRequest) -> HttpResponse:
    workspace = request.workspace
    tools = selectors.event_tool_names(workspace=workspace)
    form = EventFilterForm(request.GET, tools=tools)
    # A bad value is reported on its field and that filter left out; the others still apply.
    form.is_valid()
    filters = {k: v for k, v in getattr(form, "cleaned_data", {}).items() if v}
    rows = selectors.event_list(workspace=workspace, **filters)
    sort = EVENT_SORTING.read(request)
    # ``before`` and ``after`` name the row a page continues from, as in the default
    # order (newest first): ``before`` the rows shown below it, ``after`` those above.
    before, after = int_param(request, "before"), int_param(request, "after")
    events, has_previous, has_next = keyset_page(
        rows,
        sort,
        next_from=before,
        previous_from=0 if before else after,
        size=EVENTS_PER_PAGE,
    )
    pager = Pager(
        number=0,
        count=0,
        previous=url_with(request, before=None, after=events[0].id)
        if has_previous and events
        else None,
        next=url_with(request, after=None, before=events[-1].id) if has_next and events else None,
        first=url_with(request, before=None, after=None) if (before or after) else None,
    )
    context = {
        "form": form,
        "events": events,
        "pager": pager,
        "filtered": bool(filters),
        "conversation": filtered_to(workspace, filters),
        "sort": sort,
        "sorting": EVENT_SORTING,
    }
    return render_page(request, "reduction_app/event_list.html", context, partial="table")


urlpatterns = [path("events/", event_list, name="event_list")]
