"""Tune: knobs re-run the replay, the partial for htmx, saving as a config, isolation,
escaping and query counts; the chart and the totals in one measure, the price preset's."""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from reduction_app import engine
from reduction_app.configs.services import config_create
from reduction_app.conversations import selectors as conversation_selectors
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.models import ConfigProfile, Conversation
from simulator import members as members_module
from simulator.compare import compare
from simulator.misses import RECOVERY
from simulator.pricing import DEFAULT_PRICING_NAME, PRESETS
from simulator.replay import no_reduction
from tests.app.pages_support import (
    CUT_LISTING,
    HIDDEN_NAME,
    cut_listing_conversation,
    elements,
    html,
    member_client,
    metric,
    parsed,
    record_conversation,
    row_of,
    text,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup() -> tuple[Client, Conversation]:
    client, ws = member_client()
    return client, record_conversation(ws)


def _billed(page: str, row: str) -> str:
    start = page.index(f'<th scope="row">{row}')
    found = re.search(
        r'data-metric="input_tokens_billed"><span class="value">([^<]*)</span>', page[start:]
    )
    assert found
    return found.group(1)


def _tuned_billed(conversation: Conversation, config: dict[str, Any]) -> str:
    recorded = recorded_conversation(conversation)
    (result,) = compare(recorded, [("tuned", config)]).results
    return f"{result.totals.input_tokens_billed:,} tok"


def test_tune_page_without_a_conversation(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    page = html(client.get("/tune/"))
    assert "<html" in page
    assert "Pick a conversation and a starting config, then move the knobs." in page
    assert f'<option value="{conversation.pk}">ponyc-4595 (47 messages)</option>' in page
    assert '<option value="none">no reduction</option>' in page


def test_tune_page_shows_sliders_at_the_start_values(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    page = html(client.get(f"/tune/?conversation={conversation.pk}&start=defaults"))
    assert (
        '<input type="range" name="max_tokens_for_clear" min="1000" max="160000" step="500" '
        'value="160000"'
    ) in page
    assert '<input type="number" name="max_tokens_for_clear" value="160000"' in page
    assert '<input type="hidden" name="was_max_tokens_for_clear" value="160000">' in page
    assert '<input type="range" name="clear_retention_suffix_limit" min="-1" max="20"' in page
    assert 'hx-trigger="input changed delay:300ms, submit"' in page
    assert 'hx-push-url="true"' in page
    assert _billed(page, "start: Eino defaults (built in)") == "516,549 tok"
    assert _billed(page, "tuned") == "516,549 tok"
    assert '<canvas data-chart="tune-chart"' in page


def test_tune_changing_max_tokens_for_clear_changes_the_totals(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    url = f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=5000"
    page = html(client.get(url))
    assert _billed(page, "start: Eino defaults (built in)") == "516,549 tok"
    assert _billed(page, "tuned") == _tuned_billed(conversation, {"max_tokens_for_clear": 5000})
    assert _billed(page, "tuned") == "156,062 tok"
    tighter = html(client.get(url.replace("5000", "12000")))
    assert _billed(tighter, "tuned") == _tuned_billed(conversation, {"max_tokens_for_clear": 12000})
    assert _billed(tighter, "tuned") != _billed(page, "tuned")
    chart = json.loads(
        re.search(r'<script id="tune-chart" type="application/json">(.*?)</script>', page).group(1)
    )
    labels = [d["label"] for d in chart["data"]["datasets"]]
    assert labels == [
        "no reduction",
        "start: Eino defaults (built in)",
        "tuned",
        "threshold: tuned",
    ]


def test_tune_the_knob_that_moved_wins(setup: tuple[Client, Conversation]) -> None:
    """Without JavaScript the slider and the number input both arrive; the one that
    differs from the value the page was drawn with is the one the user moved."""
    client, conversation = setup
    url = (
        f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=160000"
        "&max_tokens_for_clear=5000&was_max_tokens_for_clear=160000"
    )
    response = client.get(url, follow=True)
    assert response.redirect_chain == [(_address(conversation, max_tokens_for_clear=5000), 302)]
    assert _billed(html(response), "tuned") == "156,062 tok"


def _address(
    conversation: Conversation, pricing: str = DEFAULT_PRICING_NAME, **changed: Any
) -> str:
    """Tune's address for the defaults with ``changed``: each parameter once, in order,
    the price always named."""
    values: dict[str, Any] = {spec.name: spec.default for spec in engine.config_knobs()}
    values |= {spec.name: "off" for spec in engine.config_switches()}
    values |= changed
    query = "&".join(f"{name}={value}" for name, value in values.items())
    return f"/tune/?conversation={conversation.pk}&start=defaults&{query}&pricing={pricing}"


def test_tune_htmx_keeps_an_address_that_names_each_parameter_once(
    setup: tuple[Client, Conversation],
) -> None:
    """htmx sends the whole form (each knob twice, each switch twice); the address it
    keeps in the history is the one the response names."""
    client, conversation = setup
    url = (
        f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=20000"
        "&max_tokens_for_clear=20000&was_max_tokens_for_clear=160000"
        "&clear_superseded=off&clear_superseded=on&clear_cache_aware=off"
    )
    response = client.get(url, headers={"HX-Request": "true"})
    assert response.status_code == HTTPStatus.OK
    assert response["HX-Push-Url"] == _address(
        conversation, max_tokens_for_clear=20000, clear_superseded="on"
    )


def test_tune_address_without_repeats_is_not_redirected(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    url = _address(conversation, max_tokens_for_clear=5000)
    response = client.get(url)
    assert response.status_code == HTTPStatus.OK
    assert "HX-Push-Url" not in response


def test_tune_htmx_gets_the_chart_and_totals_partial(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    url = f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=5000"
    page = html(client.get(url, headers={"HX-Request": "true"}))
    assert "<html" not in page and 'id="tune-form"' not in page
    assert page.strip().startswith('<section id="tune-results" class="results">')
    assert _billed(page, "tuned") == "156,062 tok"
    assert '<input type="hidden" name="max_tokens_for_clear" value="5000">' in page


def test_tune_invalid_knob_shows_the_engine_error(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    url = f"/tune/?conversation={conversation.pk}&start=defaults&clear_at_least_tokens=-5"
    page = html(client.get(url))
    message = "clear_at_least_tokens must be at least 0, got -5"
    assert f'<p class="error" id="error-clear_at_least_tokens">{message}</p>' in page
    assert '<fieldset class="knob invalid" id="knob-clear_at_least_tokens">' in page
    assert "tune-chart" not in page


def test_tune_starts_from_a_stored_config(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    profile = config_create(
        workspace=conversation.workspace, name="tight", data={"max_tokens_for_clear": 8000}
    ).profile
    page = html(client.get(f"/tune/?conversation={conversation.pk}&start={profile.pk}"))
    assert '<input type="number" name="max_tokens_for_clear" value="8000"' in page
    assert _billed(page, "start: tight v1") == _tuned_billed(
        conversation, {"max_tokens_for_clear": 8000}
    )


def test_tune_keeps_the_limits_of_a_stored_config(setup: tuple[Client, Conversation]) -> None:
    """The page shows no knob for the maps of limits, replays with them, and saves them."""
    client, conversation = setup
    limits = {"trunc_tool_limits": {"grep": 300}, "trunc_command_limits": {"reading": 500}}
    profile = config_create(
        workspace=conversation.workspace, name="limits", data={**limits, "skip_clear": True}
    ).profile
    page = html(client.get(f"/tune/?conversation={conversation.pk}&start={profile.pk}"))
    assert _billed(page, "start: limits v1") == _tuned_billed(
        conversation, {**limits, "skip_clear": True}
    )
    body = {"conversation": conversation.pk, "start": profile.pk, "name": "limits tuned"}
    assert client.post("/tune/save/", body).status_code == HTTPStatus.FOUND
    data = ConfigProfile.objects.get(name="limits tuned").versions.get().data
    assert (data["trunc_tool_limits"], data["trunc_command_limits"]) == (
        {"grep": 300},
        {"reading": 500},
    )


def test_tune_save_as_config_creates_a_profile(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    start = config_create(
        workspace=conversation.workspace, name="base", data={"skip_truncation": True}
    ).profile
    body = {
        "conversation": conversation.pk,
        "start": start.pk,
        "max_tokens_for_clear": 5000,
        "clear_retention_suffix_limit": 2,
        "clear_at_least_tokens": 100,
        "max_length_for_trunc": 50000,
        "name": "tuned on ponyc",
    }
    response = client.post("/tune/save/", body)
    saved = ConfigProfile.objects.get(name="tuned on ponyc")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == (
        f"/tune/?conversation={conversation.pk}&start={start.pk}&max_tokens_for_clear=5000"
        "&clear_retention_suffix_limit=2&clear_at_least_tokens=100&max_length_for_trunc=50000"
        "&trunc_only_when_shorter=off&clear_cache_aware=off&clear_superseded=off"
        f"&clear_offload_manifest=off&pricing=gpt-4o&saved={saved.pk}"
    )
    data = saved.versions.get().data
    assert (data["skip_truncation"], data["max_tokens_for_clear"]) == (True, 5000)
    assert (data["clear_retention_suffix_limit"], data["clear_at_least_tokens"]) == (2, 100)
    page = html(client.get(response["Location"]))
    assert f'Saved as <a href="/configs/{saved.pk}/versions/">tuned on ponyc v1</a>.' in page


def test_tune_save_refuses_a_taken_or_empty_name(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    config_create(workspace=conversation.workspace, name="taken", data={})
    body = {"conversation": conversation.pk, "start": "defaults", "name": "taken"}
    page = html(client.post("/tune/save/", body))
    assert (
        '<p class="error" id="error-save">a config named &#x27;taken&#x27; already exists</p>'
        in page
    )
    page = html(client.post("/tune/save/", {**body, "name": "  "}))
    assert '<p class="error" id="error-save">Give the new config a name.</p>' in page
    assert ConfigProfile.objects.count() == 1


def test_tune_other_workspaces_answer_404(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    _, other = member_client("bob", "Other")
    theirs = record_conversation(other, client_id="theirs")
    their_config = config_create(workspace=other, name="theirs", data={}).profile
    assert client.get(f"/tune/?conversation={theirs.pk}").status_code == HTTPStatus.NOT_FOUND
    url = f"/tune/?conversation={conversation.pk}&start={their_config.pk}"
    assert client.get(url).status_code == HTTPStatus.NOT_FOUND
    body = {"conversation": theirs.pk, "start": "defaults", "name": "x"}
    assert client.post("/tune/save/", body).status_code == HTTPStatus.NOT_FOUND
    assert not ConfigProfile.objects.filter(name="x").exists()
    assert client.get("/tune/save/").status_code == HTTPStatus.METHOD_NOT_ALLOWED


def test_tune_escapes_titles_and_names() -> None:
    client, ws = member_client()
    conversation = record_conversation(ws, title="<script>alert('t')</script>")
    profile = config_create(workspace=ws, name="<script>alert('n')</script>", data={}).profile
    page = html(client.get(f"/tune/?conversation={conversation.pk}&start={profile.pk}"))
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(&#x27;t&#x27;)&lt;/script&gt;" in page
    assert '<th scope="row">start: &lt;script&gt;alert(&#x27;n&#x27;)&lt;/script&gt; v1' in page
    assert "start: \\u003Cscript\\u003Ealert('n')\\u003C/script\\u003E v1" in page


def test_tune_queries_constant_as_data_grows(
    setup: tuple[Client, Conversation], django_assert_num_queries: Any
) -> None:
    client, conversation = setup
    url = f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=5000"
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    for i in range(6):
        config_create(workspace=conversation.workspace, name=f"more {i}", data={})
        record_conversation(conversation.workspace, client_id=f"more-{i}", index=i % 3)
    with django_assert_num_queries(len(queries)):
        client.get(url)


def test_tune_refuses_a_conversation_too_big_to_replay_per_slider(
    setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, conversation = setup
    monkeypatch.setattr(conversation_selectors, "INLINE_LIMIT", 10)
    page = client.get(f"/tune/?conversation={conversation.pk}").content.decode()
    assert "too many to re-run on every move of a slider" in page
    assert client.get("/tune/?conversation=%C2%B2").status_code == 404


def test_tune_reads_the_config_once_per_move(
    setup: tuple[Client, Conversation], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start config is read from its JSON once; the tuned one is a copy with the
    knobs changed, and both replays run these objects; no reduction, the reference, is
    read once too."""
    client, conversation = setup
    reads: list[dict[str, Any]] = []

    def counting(data: Any, **python_only: Any) -> Any:
        reads.append(dict(data))
        return real(data, **python_only)

    real = engine.config_from_dict
    monkeypatch.setattr(engine, "config_from_dict", counting)
    monkeypatch.setattr(members_module, "config_from_dict", counting)
    url = f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=5000"
    assert _billed(html(client.get(url)), "tuned") == "156,062 tok"
    assert reads == [{}, no_reduction()]


def test_tune_shows_each_strategy_as_a_switch_off_by_default(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    page = parsed(client.get(f"/tune/?conversation={conversation.pk}&start=defaults"))
    (switch,) = elements(page, "div", id="switch-clear_superseded")
    hidden, box = elements(switch, "input")
    assert dict(hidden.attributes) == {"type": "hidden", "name": "clear_superseded", "value": "off"}
    assert dict(box.attributes) == {  # unticked
        "type": "checkbox",
        "name": "clear_superseded",
        "value": "on",
        "id": "switch-clear_superseded-box",
        "aria-describedby": "switch-clear_superseded-help",
    }
    (label,) = elements(switch, "label", for_="switch-clear_superseded-box")
    assert text(label) == "clear_superseded"
    (description,) = elements(switch, "span", id="switch-clear_superseded-help")
    spec = next(s for s in engine.config_switches() if s.name == "clear_superseded")
    assert text(description) == "A clear pass first " + spec.help.split(": a clear pass first ")[1]


def test_tune_switch_turns_a_strategy_on_for_the_tuned_replay(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    page = html(
        client.get(
            f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=20000"
            "&clear_superseded=off&clear_superseded=on",
            follow=True,
        )
    )
    assert 'value="on" id="switch-clear_superseded-box"' in page
    assert 'aria-describedby="switch-clear_superseded-help" checked>' in page
    tuned = {"max_tokens_for_clear": 20000, "clear_superseded": True}
    assert _billed(page, "tuned") == _tuned_billed(conversation, tuned)
    recorded = recorded_conversation(conversation)
    (result,) = compare(recorded, [("tuned", tuned)]).results
    superseded = result.strategies["superseded"]
    assert superseded.results == 2
    assert f"{superseded.results:,} · {superseded.tokens_saved:,} tok" in page


def test_tune_save_keeps_the_switches(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    body = {
        "conversation": str(conversation.pk),
        "start": "defaults",
        "max_tokens_for_clear": "20000",
        "clear_superseded": ["off", "on"],
        "name": "superseded at 20k",
    }
    response = client.post("/tune/save/", body)
    assert response.status_code == HTTPStatus.FOUND
    assert (
        "&clear_superseded=on&clear_offload_manifest=off&pricing=gpt-4o&saved="
        in (response["Location"])
    )
    data = ConfigProfile.objects.get(name="superseded at 20k").versions.get().data
    assert (data["max_tokens_for_clear"], data["clear_superseded"]) == (20000, True)


def test_tune_shows_the_misses_a_cut_output_caused() -> None:
    """Truncation at 200 characters cuts the listing's middle, whose name the answer
    types: 1 miss (worked out in ``cut_listing_conversation``); at 2,000 nothing is cut."""
    client, ws = member_client()
    conversation = cut_listing_conversation(ws)
    pk = config_create(workspace=ws, name="cut", data=CUT_LISTING).profile.pk
    url = f"/tune/?conversation={conversation.pk}&start={pk}&max_length_for_trunc=2000"
    response = client.get(url)
    assert response.status_code == HTTPStatus.OK
    page = parsed(response)
    (cut,) = compare(recorded_conversation(conversation), [("cut", CUT_LISTING)]).results
    assert cut.totals.cost_with_recovery_usd is not None
    start = row_of(page, "totals", "start: cut v1")
    assert metric(start, "misses") == "1"
    assert metric(start, "cost_with_recovery_usd") == f"${cut.totals.cost_with_recovery_usd:,.4f}"
    assert metric(row_of(page, "totals", "tuned"), "misses") == "0"
    (heading,) = elements(page, "th", data_metric="cost_with_recovery_usd")
    assert f"{RECOVERY.calls:g} model calls" in dict(heading.attributes)["title"]
    (examples,) = elements(page, "table", id="miss-examples")
    (example,) = [r for r in elements(examples, "tr") if elements(r, "td")]
    assert [text(td) for td in elements(example, "td")] == ["2", "grep_repo", HIDDEN_NAME]


NO_EFFECT = "no effect on this conversation"


def _effects(page: Any) -> dict[str, str]:
    return {
        spec.name: text(elements(page, "span", id=f"effect-{spec.name}")[0])
        for spec in engine.config_switches()
    }


def test_tune_says_which_switches_change_nothing(setup: tuple[Client, Conversation]) -> None:
    """At the default threshold (160,000 tokens) the context is never cleared and no
    output is over 50,000 characters: no switch changes what is sent. At 20,000 tokens
    one pass clears: clear_superseded clears two results more (the switch test above)
    and the manifest lists what was offloaded, while clear_cache_aware lets the pass be
    and nothing is truncated either way."""
    client, conversation = setup
    base = f"/tune/?conversation={conversation.pk}&start=defaults"
    page = parsed(client.get(base))
    assert _effects(page) == {spec.name: NO_EFFECT for spec in engine.config_switches()}
    page = parsed(client.get(f"{base}&max_tokens_for_clear=20000"))
    assert _effects(page) == {
        "trunc_only_when_shorter": NO_EFFECT,
        "clear_cache_aware": NO_EFFECT,
        "clear_superseded": "",
        "clear_offload_manifest": "",
    }


def test_tune_switch_effect_compares_the_messages_sent(
    setup: tuple[Client, Conversation],
) -> None:
    """The note follows the messages each call sent, replayed with the switch flipped."""
    client, conversation = setup
    recorded = recorded_conversation(conversation)
    for threshold in (160_000, 20_000, 5_000):
        tuned = {"max_tokens_for_clear": threshold}
        page = parsed(client.get(_address(conversation, max_tokens_for_clear=threshold)))
        for spec in engine.config_switches():
            same, flipped = compare(
                recorded,
                [("tuned", tuned), ("flipped", {**tuned, spec.name: True})],
                contexts=range(len(recorded.messages)),
            ).results
            expected = NO_EFFECT if same.contexts == flipped.contexts else ""
            assert _effects(page)[spec.name] == expected, (threshold, spec.name)


def test_tune_htmx_updates_the_switch_notes_out_of_band(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    url = _address(conversation, max_tokens_for_clear=20000)
    page = html(client.get(url, headers={"HX-Request": "true"}))
    assert '<span class="effect" id="effect-clear_superseded" hx-swap-oob="true"></span>' in page
    assert (
        f'<span class="effect" id="effect-clear_cache_aware" hx-swap-oob="true">{NO_EFFECT}</span>'
    ) in page
    full = html(client.get(url))
    assert 'hx-swap-oob="true"' not in full


def test_tune_no_switch_notes_for_a_conversation_too_big_to_replay_them(
    setup: tuple[Client, Conversation], monkeypatch: pytest.MonkeyPatch
) -> None:
    """47 messages: two replays per move fit in 100 steps, seven (with the switches
    flipped) do not."""
    client, conversation = setup
    monkeypatch.setattr(conversation_selectors, "INLINE_LIMIT", 100)
    page = parsed(client.get(f"/tune/?conversation={conversation.pk}&start=defaults"))
    assert _effects(page) == {spec.name: "" for spec in engine.config_switches()}
    assert elements(page, "table", class_="totals")


def test_tune_explains_the_threshold_as_a_trigger(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    page = parsed(client.get(f"/tune/?conversation={conversation.pk}&start=defaults"))
    (card,) = elements(page, "fieldset", id="knob-max_tokens_for_clear")
    (note,) = elements(card, "p", id="threshold-note")
    assert text(note) == (
        "A trigger, not a cap: the clear phase starts when the context passes this many "
        "tokens. The context can stay above it when little is clearable, as only old tool "
        "results, outside the latest rounds that clear_retention_suffix_limit keeps, are "
        "cleared."
    )


def test_tune_htmx_clears_the_switch_notes_on_a_refused_knob(
    setup: tuple[Client, Conversation],
) -> None:
    """No replay, so no note stays from the previous one."""
    client, conversation = setup
    url = _address(conversation, clear_at_least_tokens=-5)
    page = html(client.get(url, headers={"HX-Request": "true"}))
    for spec in engine.config_switches():
        assert f'<span class="effect" id="effect-{spec.name}" hx-swap-oob="true"></span>' in page
    assert "clear_at_least_tokens must be at least 0, got -5" in page


START = "start: Eino defaults (built in)"


def _tune_chart(page: str) -> dict[str, Any]:
    found = re.search(r'<script id="tune-chart" type="application/json">(.*?)</script>', page)
    assert found, "no chart config"
    chart: dict[str, Any] = json.loads(found.group(1))
    return chart


@pytest.mark.parametrize(("query", "preset"), [("", "gpt-4o"), ("&pricing=gpt-4.1", "gpt-4.1")])
def test_tune_chart_counts_tokens_as_the_totals_do(
    setup: tuple[Client, Conversation], query: str, preset: str
) -> None:
    """Each call's point is what the price preset's provider counts for it (what the
    billed totals add up), and the threshold is the config's, converted at each call."""
    client, conversation = setup
    url = f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=5000"
    page = html(client.get(url + query))
    start_run, tuned_run = compare(
        recorded_conversation(conversation),
        [(START, None), ("tuned", {"max_tokens_for_clear": 5000})],
        pricing=PRESETS[preset],
    ).results
    chart = _tune_chart(page)
    _, start_line, tuned_line, threshold = chart["data"]["datasets"]
    assert start_line["data"] == [c.context_tokens for c in start_run.calls]
    assert tuned_line["data"] == [c.context_tokens for c in tuned_run.calls]
    assert max(tuned_line["data"]) == tuned_run.totals.peak_context_tokens
    assert _billed(page, "tuned") == f"{tuned_run.totals.input_tokens_billed:,} tok"
    # At each call the threshold is 5,000 scaled by the provider's count over the config's.
    assert threshold["data"] == [
        round(5000 * c.context_tokens / c.clear.tokens_after) for c in tuned_run.calls
    ]
    assert chart["options"]["scales"]["y"]["title"]["text"] == f"tokens, as {preset} bills them"
    (caption,) = elements(parsed(client.get(url + query)), "p", class_="chart-measure")
    assert text(caption).startswith(f"Tokens counted as {preset} bills them, like the totals")


def test_tune_keeps_a_chosen_price_preset_in_the_address_once(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    url = _address(conversation, pricing="claude-opus-4.5", max_tokens_for_clear=20000)
    response = client.get(f"{url}&max_tokens_for_clear=20000", headers={"HX-Request": "true"})
    assert response["HX-Push-Url"] == url
    redirected = client.get(f"{url}&max_tokens_for_clear=20000")
    assert redirected["Location"] == url
    page = parsed(client.get(url))
    (picker,) = elements(page, "select", name="pricing")
    options = elements(picker, "option")
    assert [dict(o.attributes)["value"] for o in options] == list(PRESETS)
    assert [dict(o.attributes)["value"] for o in options if "selected" in dict(o.attributes)] == [
        "claude-opus-4.5"
    ]
    (pick,) = elements(page, "form", id="tune-pick")
    (kept,) = elements(pick, "input", name="pricing")
    assert dict(kept.attributes)["value"] == "claude-opus-4.5"
    # The default too is named, in the address and in the form that picks a
    # conversation: a link without a price takes the one remembered.
    default = _address(conversation, max_tokens_for_clear=20000)
    response = client.get(default, headers={"HX-Request": "true"})
    assert response["HX-Push-Url"] == default
    (pick,) = elements(parsed(client.get(default)), "form", id="tune-pick")
    (kept,) = elements(pick, "input", name="pricing")
    assert dict(kept.attributes)["value"] == DEFAULT_PRICING_NAME


def test_tune_save_keeps_the_price_preset(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    body = {
        "conversation": conversation.pk,
        "start": "defaults",
        "pricing": "claude-sonnet-4.5",
        "name": "priced",
    }
    response = client.post("/tune/save/", body)
    saved = ConfigProfile.objects.get(name="priced")
    assert response["Location"].endswith(f"&pricing=claude-sonnet-4.5&saved={saved.pk}")
    assert "pricing" not in saved.versions.get().data


def test_tune_unknown_price_preset_answers_404(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    url = f"/tune/?conversation={conversation.pk}&start=defaults&pricing=gpt-9"
    assert client.get(url).status_code == HTTPStatus.NOT_FOUND


def test_tune_shows_no_reduction_as_the_reference_with_deltas_against_both(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    url = f"/tune/?conversation={conversation.pk}&start=defaults&max_tokens_for_clear=5000"
    page = parsed(client.get(url))
    table = elements(page, "table", class_="totals")[0]
    names = [" ".join(text(th).split()) for th in elements(table, "th", scope="row")]
    assert names == ["no reduction reference", START, "tuned"]
    tuned = row_of(page, "totals", "tuned")
    (cell,) = elements(tuned, "td", data_metric="input_tokens_billed")
    # 156,062 tuned against 516,549 for both no reduction and the defaults (which clear
    # nothing on this conversation): −360,487 tokens each way.
    against = {
        dict(s.attributes)["data-against"]: text(s)
        for s in elements(cell, "span")
        if "data-against" in dict(s.attributes)
    }
    assert against == {"baseline": "−360,487 tok (−69.8%)", "start": "−360,487 tok (−69.8%)"}


def test_tune_can_start_from_no_reduction(setup: tuple[Client, Conversation]) -> None:
    """From no reduction the knobs start at the engine's defaults, both phases on; the
    start is the reference itself, so it is one row."""
    client, conversation = setup
    page = html(client.get(f"/tune/?conversation={conversation.pk}&start=none"))
    assert '<option value="none" selected>no reduction</option>' in page
    assert '<input type="number" name="max_tokens_for_clear" value="160000"' in page
    assert "start: no reduction" not in page
    assert _billed(page, "no reduction") == "516,549 tok"
    assert _billed(page, "tuned") == _tuned_billed(conversation, {})
    moved = html(
        client.get(f"/tune/?conversation={conversation.pk}&start=none&max_tokens_for_clear=5000")
    )
    assert _billed(moved, "tuned") == "156,062 tok"
