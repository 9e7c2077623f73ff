"""Replay & compare (``/compare/``): one conversation under up to four configs.

A GET form (``?conversation=ID&config=3&config=none&baseline=first&pricing=gpt-4o&call=N``),
so the page works without JavaScript; htmx swaps only the results. A replay that
``simulations.services.fits_inline`` allows runs in the request; a bigger one becomes a
``Simulation`` for the task worker, and the results poll it every second.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import path
from django.views.decorators.http import require_http_methods

from reduction_app.charts import (
    BILLED_AXIS,
    comparison_series,
    context_chart,
    thresholds_off_chart,
)
from reduction_app.configs.selectors import ConfigChoice, config_choices, resolve_config_choices
from reduction_app.conversations.selectors import (
    conversation_choices,
    conversation_for,
    recorded_conversation,
)
from reduction_app.dashboard import render_page, workspace_view
from reduction_app.engine.inspect import classify
from reduction_app.http import PageRequest
from reduction_app.models import Conversation, Simulation
from reduction_app.paging import digits
from reduction_app.prices.choice import chosen_pricing
from reduction_app.prices.selectors import pricing_choices, pricing_options
from reduction_app.simulations import services
from reduction_app.simulations.display import (
    ReplayRun,
    miss_examples,
    run_comparison,
    side_by_side,
    strategy_table,
    totals_rows,
)
from reduction_app.simulations.prefix import infers_prefix, prefix_params, prefix_wanted
from reduction_app.simulations.selectors import (
    point_choices,
    simulation_for,
    simulation_matching,
    simulation_results,
)
from simulator.importers import RecordedConversation
from simulator.prefix import inferred_prefix
from simulator.pricing import Pricing
from simulator.stored import ComparisonResults

MAX_CONFIGS = 4


def _named(chosen: list[ConfigChoice]) -> list[dict[str, Any]]:
    """``[{name, config}]`` with unique names (a config chosen twice gets ``(2)``)."""
    out: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for choice in chosen:
        seen[choice.label] = seen.get(choice.label, 0) + 1
        name = choice.label if seen[choice.label] == 1 else f"{choice.label} ({seen[choice.label]})"
        out.append({"name": name, "config": choice.data})
    return out


def _url(params: list[tuple[str, str]]) -> str:
    return "/compare/?" + urlencode([(k, v) for k, v in params if v != ""])


def _results_context(
    *,
    results: ComparisonResults,
    comparison: ReplayRun | None,
    configs: list[dict[str, Any]],
    call: int | None,
    calls: int,
    base_params: list[tuple[str, str]],
    pricing: Pricing,
) -> dict[str, Any]:
    # One measure on the page: the chart counts tokens as the totals do, the price
    # preset's, with each threshold converted to it.
    series = comparison_series(results, billed=True)
    axis = BILLED_AXIS.format(pricing=pricing.name)
    context: dict[str, Any] = {
        "chart": context_chart(series, highlight=call, axis=axis),
        "pricing": pricing.name,
        "estimate": pricing.estimate,
        "tokenizer": pricing.tokenizer,
        "off_chart": thresholds_off_chart(series),
        "rows": totals_rows(results),
        "strategies": strategy_table(results),
        "baseline": results.baseline,
        "calls": calls,
        "call": call,
        "call_links": [(n, _url([*base_params, ("call", str(n))])) for n in range(1, calls + 1)],
    }
    # Each miss links to what the model was sent at its call, where the output is hidden.
    context["misses"] = misses = miss_examples(results)
    for example in (e for group in misses for e in group["examples"]):
        if 1 <= example["call"] <= calls:
            example["href"] = _url([*base_params, ("call", str(example["call"]))])
    if comparison is not None and call is not None:
        counters = [str(c["config"].get("token_counter", "approx")) for c in configs]
        context["sent"] = side_by_side(comparison, call - 1, counters, pricing)
        tokens = [r.calls[call - 1].context_tokens for r in results.results]
        context["columns"] = list(zip([c["name"] for c in configs], tokens, strict=True))
    return context


@require_http_methods(["GET", "POST"])
@workspace_view
def compare_page(request: PageRequest) -> HttpResponse:
    """GET shows a comparison; a POST (the form's "replay in the background" button,
    CSRF-checked) is the only way to queue a big one, so no link can load the worker.

    ``call`` is the 1-based model call whose messages are shown side by side; ``pricing``
    names the price (a preset of ``simulator.pricing.PRESETS`` or one of the workspace's
    own, ``prices.selectors.pricing_for``) whose provider counts and prices every token on
    the page; without it, the price remembered from the last page that named one
    (:mod:`reduction_app.prices.choice`). ``prefix=off`` leaves out the prefix an imported
    Claude Code log left out (:mod:`reduction_app.simulations.prefix`), which replays
    count otherwise.
    """
    workspace = request.workspace
    params = request.POST if request.method == "POST" else request.GET
    conversation = conversation_for(workspace=workspace, value=params.get("conversation"))
    if params.get("conversation") and conversation is None:
        raise Http404("no such conversation")
    values = params.getlist("config")[:MAX_CONFIGS]
    # A sweep's or a recommendation's point comes as it is, offered beside the stored ones.
    choices = [
        *config_choices(workspace=workspace),
        *point_choices(workspace=workspace, values=values),
    ]
    chosen, missing = resolve_config_choices(choices, values)
    if missing:
        raise Http404(f"no such config: {missing[0]}")
    baseline = "none" if params.get("baseline") == "none" else "first"
    pricing, price = chosen_pricing(request, workspace, params)
    prefix = prefix_wanted(params)
    if request.method == "POST":
        if conversation is None or not chosen:
            raise Http404("pick a conversation and at least one config")
        simulation = _background(
            request, conversation, _named(chosen), baseline, price, prefix, start=True
        )
        assert simulation is not None
        query = [("conversation", str(conversation.pk)), *(("config", v) for v in values if v)]
        query += [("baseline", baseline), ("pricing", pricing), *prefix_params(prefix)]
        query += [("simulation", str(simulation.pk))]
        return redirect(f"{request.path}?{urlencode(query)}")
    context: dict[str, Any] = {
        "conversations": conversation_choices(workspace=workspace, chosen=conversation),
        "conversation": conversation,
        "choices": choices,
        "slots": [values[i] if i < len(values) else "" for i in range(MAX_CONFIGS)],
        "baseline": baseline,
        "presets": pricing_choices(workspace=workspace),
        "pricing": pricing,
        "ran": False,
        "prefix_on": prefix,
        "prefix_switch": conversation is not None and infers_prefix(conversation),
    }
    if conversation is not None and chosen:
        context.update(_run(request, conversation, _named(chosen), baseline, price, prefix, values))
    return render_page(request, "reduction_app/compare.html", context, partial="compare-results")


def _run(
    request: PageRequest,
    conversation: Conversation,
    configs: list[dict[str, Any]],
    baseline: str,
    pricing: Pricing,
    prefix: bool,
    values: list[str],
) -> dict[str, Any]:
    base_params = [("conversation", str(conversation.pk))]
    base_params += [("config", v) for v in values if v]
    base_params += [("baseline", baseline), ("pricing", pricing.name), *prefix_params(prefix)]
    try:
        recorded = recorded_conversation(conversation)
    except ValueError as exc:
        return {"ran": True, "error": f"The stored transcript cannot be replayed: {exc}"}
    shown = {"prefix_tokens": _prefix_tokens(recorded, pricing), "prefix_on": prefix}
    calls = sum(1 for m in recorded.messages if classify(m) == "assistant")
    wanted = request.GET.get("call", "")
    call: int | None = min(max(int(wanted), 1), calls) if digits(wanted) else calls
    if calls == 0:
        call = None
    steps = conversation.message_count * len(configs)
    if services.fits_inline(conversation, configs=len(configs)):
        comparison = run_comparison(
            recorded,
            [(c["name"], c["config"]) for c in configs],
            baseline=baseline,
            call=None if call is None else call - 1,
            pricing=pricing,
            inferred_prefix=prefix,
        )
        return {
            "ran": True,
            **shown,
            **_results_context(
                results=comparison.results,
                comparison=comparison,
                configs=configs,
                call=call,
                calls=calls,
                base_params=base_params,
                pricing=pricing,
            ),
        }
    simulation = _background(request, conversation, configs, baseline, pricing, prefix, start=False)
    if simulation is None:
        return {"ran": True, "needs_start": True, "steps": steps, "start_params": base_params}
    poll = _url([*base_params, ("simulation", str(simulation.pk)), ("call", wanted)])
    context: dict[str, Any] = {"ran": True, "simulation": simulation, "poll_url": poll, **shown}
    stored = simulation_results(simulation)
    if isinstance(stored, ComparisonResults):
        # The side-by-side view of a big conversation replays it again, so only on request.
        rerun: ReplayRun | None = None
        if digits(wanted) and call is not None:
            rerun = run_comparison(
                recorded,
                [(c["name"], c["config"]) for c in configs],
                baseline=baseline,
                call=call - 1,
                pricing=pricing,
                inferred_prefix=prefix,
            )
        context.update(
            _results_context(
                results=stored,
                comparison=rerun,
                configs=configs,
                call=call if rerun is not None else None,
                calls=calls,
                base_params=[*base_params, ("simulation", str(simulation.pk))],
                pricing=pricing,
            )
        )
    return context


def _background(
    request: PageRequest,
    conversation: Conversation,
    configs: list[dict[str, Any]],
    baseline: str,
    pricing: Pricing,
    inferred: bool,
    *,
    start: bool,
) -> Simulation | None:
    """The queued, running or finished simulation of this comparison; with ``start``,
    queue it when there is none yet. It counts as the inline replay does: the preset's
    shortest cacheable prompt, and the inferred prefix unless it is switched off."""
    workspace = request.workspace
    prefix = pricing.min_cacheable_prefix
    priced = pricing_options(workspace=workspace, name=pricing.name)
    options: dict[str, Any] = {"baseline": baseline, **priced, "min_cacheable_prefix": prefix}
    if not inferred:
        options["inferred_prefix"] = False
    asked = simulation_for(workspace=workspace, value=request.GET.get("simulation"))
    if (
        asked is not None
        and asked.conversation_id == conversation.pk
        and asked.configs == configs
        and asked.options == options
    ):
        return asked
    found = simulation_matching(conversation=conversation, configs=configs, options=options)
    if found is not None or not start:
        return found
    simulation = services.simulation_create(
        workspace=workspace,
        conversation=conversation,
        configs=configs,
        baseline=baseline,
        pricing=pricing.name,
        min_cacheable_prefix=prefix,
        inferred_prefix=inferred,
    )
    services.simulation_enqueue(simulation=simulation)
    return simulation


def _prefix_tokens(recorded: RecordedConversation, pricing: Pricing) -> int | None:
    """The prefix the recording left out by ``pricing``'s count, as its replays infer it
    when they count it; ``None`` when none is inferred."""
    return inferred_prefix(recorded, pricing)


urlpatterns = [path("compare/", compare_page, name="compare")]
