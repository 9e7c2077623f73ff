"""The events page (``/events/``): every recorded event, filtered by conversation, phase,
tool and time, newest first, paged by cursor (``?before=<id>`` / ``?after=<id>``: keyset on
the id, so a page costs the same however deep it is)."""

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

EVENTS_PER_PAGE = 50
PHASES = (("", "any"), ("truncation", "truncation"), ("clear", "clear"))


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
    before, after = int_param(request, "before"), int_param(request, "after")
    if after and not before:
        # Newer events: the page just above ``after``, read upwards and shown newest first.
        page = list(rows.filter(id__gt=after).order_by("id")[: EVENTS_PER_PAGE + 1])
        has_newer = len(page) > EVENTS_PER_PAGE
        events = page[:EVENTS_PER_PAGE][::-1]
        has_older = bool(events)
    else:
        if before:
            rows = rows.filter(id__lt=before)
        page = list(rows[: EVENTS_PER_PAGE + 1])
        has_older = len(page) > EVENTS_PER_PAGE
        events = page[:EVENTS_PER_PAGE]
        has_newer = bool(before) and bool(events)
    pager = Pager(
        number=0,
        count=0,
        previous=url_with(request, before=None, after=events[0].id) if has_newer else None,
        next=url_with(request, after=None, before=events[-1].id) if has_older else None,
        first=url_with(request, before=None, after=None) if (before or after) else None,
    )
    context = {
        "form": form,
        "events": events,
        "pager": pager,
        "filtered": bool(filters),
        "conversation": filtered_to(workspace, filters),
    }
    return render_page(request, "reduction_app/event_list.html", context, partial="table")


urlpatterns = [path("events/", event_list, name="event_list")]
