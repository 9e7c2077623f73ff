"""Tune (``/tune/``): move the numeric knobs of a config and watch a replay follow.

The page replays the conversation under no reduction (the fixed reference every delta
is first against), the starting config and the tuned one; htmx swaps the chart and
totals as a knob moves and keeps the address in the history, and the page works without
JavaScript (docs/dashboard.md).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Literal
from urllib.parse import urlencode

from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_GET, require_POST

from reduction_app import engine
from reduction_app.charts import (
    BILLED_AXIS,
    comparison_series,
    context_chart,
    thresholds_off_chart,
)
from reduction_app.configs.selectors import ConfigChoice, config_choices, config_profile
from reduction_app.configs.services import config_create
from reduction_app.conversations.selectors import (
    conversation_choices,
    conversation_for,
    recorded_conversation,
)
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.engine.inspect import classify
from reduction_app.errors import ServiceError
from reduction_app.http import PageRequest
from reduction_app.models import Conversation
from reduction_app.paging import digits
from reduction_app.prices.choice import chosen_pricing
from reduction_app.prices.selectors import pricing_choices
from reduction_app.simulations import services
from reduction_app.simulations.display import (
    message_text,
    miss_examples,
    run_comparison,
    strategy_table,
    totals_rows,
)
from reduction_app.simulations.prefix import infers_prefix, prefix_params, prefix_wanted
from simulator.importers import RecordedConversation
from simulator.prefix import inferred_prefix
from simulator.pricing import engine_measure
from simulator.replay import no_reduction, replay_many

SWITCH_ON, SWITCH_OFF = "on", "off"
BEYOND = "Beyond the reference: "
REFERENCE = "no reduction"
"""The row every Tune page shows, whatever the start: the deltas are first against it."""


def _round_up(value: float, step: int) -> int:
    return int(math.ceil(max(value, 1) / step) * step)


def _start_choices(workspace: Any) -> list[ConfigChoice]:
    """No reduction, the defaults and the stored profiles."""
    return config_choices(workspace=workspace)


def _tuned_base(start: ConfigChoice) -> dict[str, Any]:
    """The fields the knobs are moved from: the start's, but from no reduction the
    engine's defaults (both phases on), as no reduction has no knob that does anything."""
    return {} if start.value == "none" else dict(start.data)


def _knob_value(params: QueryDict, knob: str, start: int) -> tuple[int | str, bool]:
    """The knob's value from the slider and number input of that name, and whether it
    was given; a value that is not a whole number comes back as text, for the engine
    to refuse."""
    values = [v.strip() for v in params.getlist(knob) if v.strip()]
    if not values:
        return start, False
    was = params.get(f"was_{knob}", "")
    moved = [v for v in values if v != was]
    raw = moved[0] if moved else values[0]
    try:
        return int(raw), True
    except ValueError:
        return raw, True


def _switch_value(params: QueryDict, name: str, start: bool) -> bool:
    """A strategy switch: a hidden ``off`` and, when ticked, a checkbox ``on`` of the same
    name, so the last value wins; absent (a link without it) keeps the start's value."""
    values = params.getlist(name)
    if not values:
        return start
    return values[-1] == SWITCH_ON


def _switches(
    values: Mapping[str, Any], unchanged: frozenset[str] | None = None
) -> list[dict[str, Any]]:
    """One row per strategy switch. The legend says they go beyond the reference, so each
    description leaves that out. ``no_effect``: flipping it sends the same messages."""
    return [
        {
            "name": spec.name,
            "on": values[spec.name],
            "help": _capitalized(spec.help.removeprefix(BEYOND)),
            "no_effect": unchanged is not None and spec.name in unchanged,
        }
        for spec in engine.config_switches()
    ]


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def unchanged_switches(
    recorded: RecordedConversation, tuned: engine.ReductionConfig, *, inferred_prefix: bool = True
) -> frozenset[str]:
    """The strategy switches whose flip leaves the replay of ``recorded`` under ``tuned``
    as it is: the same messages sent at every model call.

    The tuned config is replayed once more beside each flip (each on a backend of its
    own), keeping what every call sent: tuples of the message values, compared whole
    (a message left alone is the same object from call to call, so most of the
    comparison is by identity)."""
    names = [spec.name for spec in engine.config_switches()]
    flips: list[tuple[str, dict[str, Any]]] = [("tuned", {})]
    flips += [(name, {name: not getattr(tuned, name)}) for name in names]
    configs = [
        (label, dataclasses.replace(tuned, backend=engine.InMemoryBackend(), **changed))
        for label, changed in flips
    ]
    results = replay_many(
        recorded,
        configs,
        contexts=range(len(recorded.messages)),
        inferred_prefix=inferred_prefix,
    )
    sent = results[0].contexts
    return frozenset(r.name for r in results[1:] if r.contexts == sent)


SLIDER_REACH: dict[str, Literal["tokens", "result_chars"]] = {
    "max_length_for_trunc": "result_chars",
    "max_tokens_for_clear": "tokens",
    "clear_at_least_tokens": "tokens",
}
"""Where the slider of a knob whose spec sets no ``high`` reaches: a tenth past the
conversation's tokens, or past its longest tool result in characters. Every other
slider fact (its bottom, step and any fixed top) is the knob's spec."""


def _sliders(values: Mapping[str, Any], total_tokens: int, longest: int) -> list[dict[str, Any]]:
    reach = {"tokens": total_tokens, "result_chars": longest}
    out = []
    for spec in engine.config_knobs():
        knob = spec.knob
        assert knob is not None
        high = knob.high
        if high is None:
            high = _round_up(reach[SLIDER_REACH[spec.name]] * 1.1, 1000)
        value = values[spec.name]
        number = value if isinstance(value, int) else knob.low
        out.append(
            {
                "name": spec.name,
                "value": value,
                "min": min(knob.low, number),
                "max": max(high, number),
                "step": knob.step,
                "help": spec.help,
            }
        )
    return out


def _state(request: PageRequest, params: QueryDict) -> dict[str, Any]:
    """Everything the page needs from ``params`` (the query, or the save form's body)."""
    workspace = request.workspace
    conversation = conversation_for(workspace=workspace, value=params.get("conversation"))
    if params.get("conversation") and conversation is None:
        raise Http404("no such conversation")
    choices = _start_choices(workspace)
    start_value = params.get("start") or "defaults"
    start = next((c for c in choices if c.value == start_value), None)
    if start is None:
        raise Http404("no such config")
    pricing, price = chosen_pricing(request, workspace, params)
    base = _tuned_base(start)
    values: dict[str, Any] = {}
    for spec in engine.config_knobs():
        start_knob = spec.in_force(int(base.get(spec.name, spec.default)))
        values[spec.name], _ = _knob_value(params, spec.name, start_knob)
    for spec in engine.config_switches():
        start_on = bool(base.get(spec.name, spec.default))
        values[spec.name] = _switch_value(params, spec.name, start_on)
    tuned = {**base, **values}
    # Each config is read once per request: the tuned one is the start with the knobs
    # changed (on a backend of its own, as each replay counts its own offloads), and the
    # replays run these objects.
    error: tuple[str, str] | None = None
    configs: tuple[engine.ReductionConfig, engine.ReductionConfig] | None = None
    try:
        start_config = engine.config_from_dict(start.data, backend=engine.InMemoryBackend())
        base_config = (
            start_config
            if start.value != "none"
            else engine.config_from_dict(base, backend=engine.InMemoryBackend())
        )
        tuned_config = engine.validate(
            dataclasses.replace(base_config, backend=engine.InMemoryBackend(), **values)
        )
        configs = (start_config, tuned_config)
    except engine.ConfigError as exc:
        error = (exc.field, str(exc))
    return {
        "conversation": conversation,
        "conversations": conversation_choices(workspace=workspace, chosen=conversation),
        "choices": choices,
        "start": start,
        "presets": pricing_choices(workspace=workspace),
        "pricing": pricing,
        "price": price,
        "prefix_on": prefix_wanted(params),
        "prefix_switch": conversation is not None and infers_prefix(conversation),
        "values": values,
        "tuned": tuned,
        "configs": configs,
        "knob_error": error,
    }


def _query(state: Mapping[str, Any]) -> list[tuple[str, str]]:
    conversation: Conversation = state["conversation"]
    pairs = [("conversation", str(conversation.pk)), ("start", state["start"].value)]
    switches = [
        (spec.name, SWITCH_ON if state["values"][spec.name] else SWITCH_OFF)
        for spec in engine.config_switches()
    ]
    knobs = [(spec.name, str(state["values"][spec.name])) for spec in engine.config_knobs()]
    # The price always: without it the page would take the one remembered in the session.
    pricing = [("pricing", state["pricing"])]
    return pairs + knobs + switches + pricing + prefix_params(state["prefix_on"])


def _run(state: dict[str, Any]) -> dict[str, Any]:
    conversation: Conversation = state["conversation"]
    if not services.fits_inline(conversation, configs=2):
        # Every slider move replays twice in the request; a big conversation would hold it
        # for seconds each time.
        return {
            "error": f"This conversation has {conversation.message_count:,} messages, too many "
            "to re-run on every move of a slider; compare configs for it on the Compare page, "
            "which replays big conversations in the background."
        }
    try:
        recorded = recorded_conversation(conversation)
    except ValueError as exc:
        return {"error": f"The stored transcript cannot be replayed: {exc}"}
    counter = engine.get_token_counter(str(state["tuned"].get("token_counter", "approx")))
    # The clear threshold's slider reaches past the whole context, prefix included when
    # the replays count it (by the engine's own count, as the threshold is compared).
    engine_prefix = inferred_prefix(recorded, engine_measure(state["price"]))
    counted_prefix = (engine_prefix or 0) if state["prefix_on"] else 0
    total_tokens = int(counter(list(recorded.messages), list(recorded.tools))) + counted_prefix
    longest = max(
        (len(message_text(m)) for m in recorded.messages if classify(m) == "tool_result"),
        default=0,
    )
    unchanged = None
    switches = len(engine.config_switches())
    # The notes need the tuned config and each flip replayed once more; a conversation
    # too big for that goes without them.
    if state["configs"] is not None and services.fits_inline(conversation, configs=3 + switches):
        unchanged = unchanged_switches(
            recorded, state["configs"][1], inferred_prefix=state["prefix_on"]
        )
    out: dict[str, Any] = {
        "sliders": _sliders(state["values"], total_tokens, longest),
        "switches": _switches(state["values"], unchanged),
    }
    if state["configs"] is not None:
        start_config, tuned_config = state["configs"]
        pricing = state["price"]
        # No reduction on the tuned config's own counter, as Compare counts its baseline.
        counter = state["tuned"].get("token_counter")
        reference = {**no_reduction(), **({"token_counter": counter} if counter else {})}
        start_name = f"start: {state['start'].label}"
        runs: list[tuple[str, Any]] = [(REFERENCE, reference)]
        if state["start"].value != "none":
            runs.append((start_name, start_config))
        runs.append(("tuned", tuned_config))
        comparison = run_comparison(
            recorded, runs, pricing=pricing, inferred_prefix=state["prefix_on"]
        )
        # One measure on the page: the chart counts tokens as the totals do, the price
        # preset's, with each threshold converted to it.
        series = comparison_series(comparison.results, billed=True)
        out.update(
            chart=context_chart(series, axis=BILLED_AXIS.format(pricing=pricing.name)),
            estimate=pricing.estimate,
            tokenizer=pricing.tokenizer,
            off_chart=thresholds_off_chart(series),
            rows=totals_rows(comparison.results, also_against=start_name),
            start_name=start_name,
            strategies=strategy_table(comparison.results),
            misses=miss_examples(comparison.results),
            baseline=comparison.results.baseline,
            query_pairs=_query(state),
            prefix_tokens=inferred_prefix(recorded, pricing),
        )
    return out


def _render(request: PageRequest, state: dict[str, Any], **extra: Any) -> HttpResponse:
    context = {**state, **extra}
    if state["conversation"] is not None:
        context.update(_run(state))
        saved = request.GET.get("saved", "")
        if digits(saved):
            context["saved"] = config_profile(
                workspace=request.workspace,
                profile_id=int(saved),
            )
    return render_page(request, "reduction_app/tune.html", context, partial="tune-results")


def _address(request: PageRequest, state: Mapping[str, Any]) -> str:
    """The page's address for ``state``: each parameter once."""
    pairs = _query(state)
    saved = request.GET.get("saved", "")
    if digits(saved):
        pairs.append(("saved", saved))
    return f"{request.path}?{urlencode(pairs)}"


@require_GET
@workspace_view
def tune_page(request: PageRequest) -> HttpResponse:
    state = _state(request, request.GET)
    if state["conversation"] is None:
        return _render(request, state)
    # The form sends each knob twice (slider and number), its was_ value and each switch
    # twice (hidden "off", ticked "on"); the address kept in the history and the one a
    # form without JavaScript lands on name each parameter once.
    address = _address(request, state)
    repeated = any(len(values) > 1 for _, values in request.GET.lists())
    if not request.htmx and (repeated or any(key.startswith("was_") for key in request.GET)):
        return redirect(address)
    response = _render(request, state)
    if request.htmx:
        response["HX-Push-Url"] = address
    return response


@require_POST
@workspace_view
def tune_save(request: PageRequest) -> HttpResponse:
    state = _state(request, request.POST)
    if state["conversation"] is None:
        raise Http404("no such conversation")
    name = request.POST.get("name", "").strip()
    if state["knob_error"] is not None:
        return _render(request, state)
    if not name:
        return _render(request, state, save_error="Give the new config a name.", save_name=name)
    try:
        version = config_create(
            workspace=request.workspace,
            name=name[:100],
            data=state["tuned"],
        )
    except ServiceError as exc:
        return _render(request, state, save_error=str(exc), save_name=name)
    query = urlencode([*_query(state), ("saved", str(version.profile.pk))])
    return redirect(f"/tune/?{query}")


urlpatterns = [
    path("tune/", tune_page, name="tune"),
    path("tune/save/", tune_save, name="tune_save"),
]
