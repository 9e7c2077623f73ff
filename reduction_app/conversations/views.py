"""The conversations list (``/conversations/``), a conversation's page
(``/conversations/<client_id>/``): its context window call by call, its message timeline
and its events; and one message whole (``/conversations/<client_id>/messages/<n>/``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.http import Http404, HttpResponse
from django.urls import path
from django.utils import timezone
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRefresh

from reduction_app.charts import ContextSeries, context_chart, series_from_events
from reduction_app.configs.selectors import config_get, config_latest, config_list
from reduction_app.conversations.selectors import (
    conversation_clear_series,
    conversation_counts,
    conversation_get,
    conversation_list_counted,
    fits_inline,
    infers_prefix,
    provider_usage,
    recorded_conversation,
)
from reduction_app.conversations.timeline import (
    ENGINE_MEASURE,
    INLINE_CHARS,
    message_parts,
    series_from_replay,
    timeline_rows,
)
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import Conversation, Workspace
from reduction_app.paging import int_param, pager_for, paginate
from reduction_app.prices.choice import listed_pricing
from reduction_app.prices.selectors import pricing_choices
from reduction_app.records.money import conversation_money, priced
from reduction_app.records.selectors import event_list
from reduction_app.sorting import Column, Sorting
from simulator.importers import TRACES_SOURCE, omitted_parts
from simulator.prefix import inferred_prefix, omitted_tokens
from simulator.pricing import Pricing
from simulator.replay import no_reduction

CONVERSATIONS_PER_PAGE = 25
MESSAGES_PER_PAGE = 50
EVENTS_PER_PAGE = 25
TEMPLATE = "reduction_app/conversation.html"
FIRST_COMPARISON: tuple[tuple[str, dict[str, Any]], ...] = (
    ("no reduction", no_reduction()),
    ("engine defaults", {}),
)
"""What an imported recording's page replays until a config is chosen."""


CONVERSATION_SORTING = Sorting(
    columns=(
        Column("conversation", "client_id", descending_first=False),
        Column("format", "message_format", descending_first=False),
        Column("messages", "message_count"),
        Column("events", "event_count"),
        Column("tokens", "tokens_saved"),
        # Dollars are the tokens at one price's base rates: the tokens' order is theirs.
        Column("cost", "sent_tokens"),
        Column("saved", "saved_tokens"),
        Column("files", "file_count"),
        Column("updated", "updated_at"),
    ),
    default="-updated",
)
"""The conversations list's columns, each sortable by its header (``?sort=``)."""


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def conversation_list(request: PageRequest) -> HttpResponse:
    search = request.GET.get("q", "").strip()
    message_format = request.GET.get("format", "")
    if message_format not in dict(Conversation.FORMAT_CHOICES):
        message_format = ""
    pricing_name, pricing = listed_pricing(request, request.workspace, request.GET)
    sort = CONVERSATION_SORTING.read(request)
    rows = conversation_list_counted(
        workspace=request.workspace,
        search=search,
        message_format=message_format,
    )
    page = paginate(request, CONVERSATION_SORTING.apply(rows, sort), CONVERSATIONS_PER_PAGE)
    for c in page.object_list:
        c.money = priced(
            pricing, calls=c.call_count, sent_tokens=c.sent_tokens, saved_tokens=c.saved_tokens
        )
    context = {
        "page": page,
        "pager": pager_for(request, page),
        "q": search,
        "format": message_format,
        "formats": Conversation.FORMAT_CHOICES,
        "filtered": bool(search or message_format),
        "sort": sort,
        "sorting": CONVERSATION_SORTING,
        "pricing": pricing_name,
        "presets": pricing_choices(workspace=request.workspace),
    }
    return render_page(request, "reduction_app/conversation_list.html", context, partial="table")


def _chosen_config(request: PageRequest, workspace: Workspace) -> tuple[dict[str, Any], Any]:
    """The config a replay runs under: ``?config=<profile id>``'s latest version, else the
    engine's defaults; and the profile (``None`` for the defaults)."""
    profile_id = int_param(request, "config")
    profile = config_get(workspace=workspace, profile_id=profile_id) if profile_id else None
    if profile is None:
        return {}, None
    return dict(config_latest(profile=profile).data), profile


def _comparison(conversation: Conversation) -> dict[str, Any]:
    """An imported recording's first view: a replay with no reduction against one under
    the engine's defaults, so the chart shows what the engine would change."""
    context: dict[str, Any] = {"comparison": True, "series": None, "chart": None}
    if not fits_inline(conversation, configs=len(FIRST_COMPARISON)):
        context["replay_error"] = (
            f"It has {conversation.message_count:,} messages; compare it on the Compare "
            "page, which runs big conversations in the background."
        )
        return context
    try:
        series = [series_from_replay(conversation, c, label=n) for n, c in FIRST_COMPARISON]
    except ValueError as exc:
        context["replay_error"] = f"The stored transcript cannot be replayed: {exc}"
        return context
    context["series"] = series[-1]
    context["unchanged"] = [p.after for p in series[0].points] == [
        p.after for p in series[-1].points
    ]
    if series[-1].points:
        context["chart"] = context_chart(series)
    return context


def _omissions(conversation: Conversation, prefix_tokens: int | None) -> dict[str, Any]:
    """What an imported recording left out of what the model was sent, and about how many
    tokens a request that was where the provider's counts show it (``prefix_tokens``, the
    prefix its replays infer, when they infer one: the same figure)."""
    omits = list(conversation.omits or ())
    size = prefix_tokens
    if omits and size is None and conversation.provider_usage:
        try:
            size = omitted_tokens(recorded_conversation(conversation), ENGINE_MEASURE)
        except ValueError:
            size = None  # the replay says why the transcript cannot be read
    return {"omits": omits, "omitted_tokens": size if omits else None}


def _prefix_tokens(conversation: Conversation) -> int | None:
    """Tokens of the prefix the recording left out, as its replays here infer it (by the
    engine's own count, the chart's); ``None`` when none is inferred."""
    if not infers_prefix(conversation):
        return None
    try:
        return inferred_prefix(recorded_conversation(conversation), ENGINE_MEASURE)
    except ValueError:
        return None  # the replay says why the transcript cannot be read


def _context_window(request: PageRequest, conversation: Conversation) -> dict[str, Any]:
    """The recorded clear passes when there are some; otherwise a replay of the transcript
    under the chosen config, or, for an imported recording with none chosen, a replay with
    no reduction against one under the engine's defaults (:func:`_comparison`)."""
    workspace: Workspace = request.workspace
    rows = conversation_clear_series(conversation=conversation)
    context: dict[str, Any] = {
        "replay_error": "",
        "profile": None,
        "configs": [],
        "comparison": False,
        "prefix_tokens": _prefix_tokens(conversation),
        # What the prefix holds, as the recording's format declares it.
        "prefix_parts": omitted_parts(conversation.source, has_system=False, has_tools=False),
    }
    series: ContextSeries | None = None
    if any(row["kind"] == "summary" for row in rows):
        series = series_from_events(rows)
    else:
        config, context["profile"] = _chosen_config(request, workspace)
        context["configs"] = list(config_list(workspace=workspace))
        context["imported"] = bool(conversation.source)
        if conversation.source and context["profile"] is None:
            return {**context, **_comparison(conversation)}
        if not fits_inline(conversation, configs=1):
            # Replaying in the request would hold it for seconds: Compare runs big
            # conversations in the background.
            context["replay_error"] = (
                f"It has {conversation.message_count:,} messages and no recorded clear "
                "passes; replay it on the Compare page, which runs big conversations in "
                "the background."
            )
        else:
            try:
                series = series_from_replay(conversation, config)
            except ValueError as exc:
                context["replay_error"] = f"The stored transcript cannot be replayed: {exc}"
    context["series"] = series
    context["chart"] = (
        context_chart([series], headroom=None, markers=True) if series and series.points else None
    )
    return context


def _timeline(request: PageRequest, conversation: Conversation) -> dict[str, Any]:
    try:
        messages = list(recorded_conversation(conversation, restore=False).messages)
    except ValueError as exc:
        return {"timeline_error": str(exc), "timeline": [], "timeline_pager": None}
    page = paginate(request, messages, MESSAGES_PER_PAGE, param="messages")
    start = page.start_index() - 1 if messages else 0
    rows = timeline_rows(messages, start, start + len(page.object_list))
    return {
        "timeline_error": "",
        "timeline": rows,
        "timeline_pager": pager_for(request, page, param="messages"),
        "message_total": len(messages),
        "inline_chars": INLINE_CHARS,
    }


def _events(request: PageRequest, conversation: Conversation) -> dict[str, Any]:
    events = event_list(
        workspace=request.workspace,
        conversation=conversation.client_id,
    )
    page = paginate(request, events, EVENTS_PER_PAGE, param="events")
    return {"events": page.object_list, "events_pager": pager_for(request, page, param="events")}


def _usage(conversation: Conversation, pricing: Pricing) -> dict[str, Any]:
    """The provider's figures of each model call an imported recording kept: prompt,
    cached and completion tokens, by the message the call produced, and the prompt's
    cost at ``pricing`` (its cached share at the cache-read rate, a long prompt at the
    long-context rates)."""
    try:
        usage = provider_usage(conversation)
    except ValueError as exc:
        return {"usage_rows": [], "usage_error": str(exc)}
    if usage is None:
        return {"usage_rows": [], "usage_error": ""}
    figures = (usage.prompt_tokens, usage.cached_prompt_tokens, usage.completion_tokens)
    indexes = sorted(set().union(*figures))
    rows = []
    for call, index in enumerate(indexes, start=1):
        prompt = usage.prompt_tokens.get(index)
        cached = usage.cached_prompt_tokens.get(index)
        cost = None
        if prompt is not None:
            cost = pricing.cost(
                uncached_tokens=prompt - (cached or 0),
                cached_tokens=cached or 0,
                prompt_tokens=prompt,
            )
        rows.append(
            {
                "call": call,
                "message": index + 1,  # numbered from 1, as the timeline numbers messages
                "prompt": prompt,
                "cached": cached,
                "completion": usage.completion_tokens.get(index),
                "cost": cost,
            }
        )
    priced_rows = [row["cost"] for row in rows if row["cost"] is not None]
    return {
        "usage_rows": rows,
        "usage_error": "",
        "usage_cost": sum(priced_rows) if priced_rows else None,
        "usage_run_cost": usage.cost,
    }


# Which part an htmx request swaps (its HX-Target), and what that part needs.
_PARTS = {"context-window": _context_window, "timeline": _timeline, "conversation-events": _events}


LIVE_SECONDS = 15 * 60
"""How long after its last update a conversation made from live traces is watched for
more: its page looks again every few seconds, and reloads when it grew."""


def _live_stamp(conversation: Conversation) -> str:
    """What changes when the conversation does: its length and its last update."""
    return f"{conversation.message_count}-{conversation.updated_at.timestamp():.6f}"


def _live(conversation: Conversation) -> dict[str, Any]:
    live = conversation.source == TRACES_SOURCE and (
        timezone.now() - conversation.updated_at
    ) < timedelta(seconds=LIVE_SECONDS)
    return {"live": live, "live_stamp": _live_stamp(conversation)}


@require_GET
@vary_on_headers("HX-Request", "HX-Target")
@workspace_view
def conversation_detail(request: PageRequest, client_id: str) -> HttpResponse:
    workspace = request.workspace
    conversation = conversation_get(workspace=workspace, client_id=client_id)
    if conversation is None:
        raise Http404("no such conversation")
    context: dict[str, Any] = {"conversation": conversation}
    target = request.htmx.target if request.htmx else None
    if target == "live":
        # The page's watch of a live conversation: reload it once it changed.
        if request.GET.get("since") != _live_stamp(conversation):
            return HttpResponseClientRefresh()
        return HttpResponse(status=204)
    context.update(_live(conversation))
    if target in _PARTS:
        context.update(_PARTS[target](request, conversation))
        return render_page(request, TEMPLATE, context, partial=target.replace("-", "_"))
    event_count, file_count = conversation_counts(conversation=conversation)
    pricing_name, pricing = listed_pricing(request, workspace, request.GET)
    context.update(
        event_count=event_count,
        file_count=file_count,
        pricing=pricing_name,
        presets=pricing_choices(workspace=workspace),
        money=conversation_money(
            workspace=workspace, conversation_id=conversation.pk, pricing=pricing
        ),
        **_usage(conversation, pricing),
    )
    for part in _PARTS.values():
        context.update(part(request, conversation))
    context.update(_omissions(conversation, context.get("prefix_tokens")))
    return render_page(request, TEMPLATE, context)


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def conversation_message(request: PageRequest, client_id: str, number: int) -> HttpResponse:
    """Message ``number`` (from 1) whole: its text and every tool call's arguments. htmx
    swaps its body into the conversation page's timeline in place."""
    conversation = conversation_get(workspace=request.workspace, client_id=client_id)
    if conversation is None:
        raise Http404("no such conversation")
    try:
        messages = list(recorded_conversation(conversation, restore=False).messages)
    except ValueError as exc:
        raise Http404(f"the stored transcript cannot be read: {exc}") from exc
    if not 1 <= number <= len(messages):
        raise Http404("no such message")
    (row,) = timeline_rows(messages, number - 1, number)
    context = {
        "conversation": conversation,
        "row": row,
        "parts": message_parts(
            messages[number - 1], result_name=row.tool_name if row.role == "tool" else ""
        ),
        "message_total": len(messages),
        # The timeline page holding this message, for the way back.
        "timeline_page": (number - 1) // MESSAGES_PER_PAGE + 1,
    }
    return render_page(request, "reduction_app/message.html", context, partial="message_body")


urlpatterns = [
    path("conversations/", conversation_list, name="conversation_list"),
    # Before the conversation's own page: its client id may hold slashes.
    path(
        "conversations/<path:client_id>/messages/<int:number>/",
        conversation_message,
        name="conversation_message",
    ),
    path("conversations/<path:client_id>/", conversation_detail, name="conversation"),
]
