"""Replay & compare: the chart, the totals against the simulator's own numbers, what the
model was sent at one call, background replays, isolation, escaping, query counts."""

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
from reduction_app.models import Conversation, Simulation
from reduction_app.simulations import services
from simulator.compare import compare
from simulator.metering import Meter
from simulator.pricing import DEFAULT_PRICING, PRESETS
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

TIGHT = {"max_tokens_for_clear": 8000, "max_length_for_trunc": 5000}
NO_REDUCTION = {"skip_truncation": True, "skip_clear": True}


@pytest.fixture
def setup() -> tuple[Client, Conversation, int]:
    client, ws = member_client()
    conversation = record_conversation(ws)
    profile = config_create(workspace=ws, name="tight", data=TIGHT).profile
    return client, conversation, profile.pk


def _chart(page: str, chart_id: str = "compare-chart") -> dict[str, Any]:
    found = re.search(rf'<script id="{chart_id}" type="application/json">(.*?)</script>', page)
    assert found, "no chart config"
    return json.loads(found.group(1))


def _cell(page: str, row: str, metric: str) -> str:
    """The text of the totals cell of ``metric`` in the row of config ``row``."""
    start = page.index(f'<th scope="row">{row}')
    end = page.index("</tr>", start)
    found = re.search(
        rf'data-metric="{metric}"><span class="value">([^<]*)</span>\s*'
        r'(?:<br><span class="delta[^"]*">([^<]*)</span>)?',
        page[start:end],
    )
    assert found, (row, metric)
    return " | ".join(g for g in found.groups() if g)


def _full(data: dict[str, Any]) -> dict[str, Any]:
    return engine.config_to_dict(engine.config_from_dict(data, backend=engine.InMemoryBackend()))


def _expected(conversation: Conversation, baseline: str = "first") -> Any:
    recorded = recorded_conversation(conversation)
    return compare(
        recorded, [("tight v1", TIGHT), ("no reduction", NO_REDUCTION)], baseline=baseline
    )


def test_compare_page_empty_form(setup: tuple[Client, Conversation, int]) -> None:
    client, conversation, pk = setup
    page = html(client.get("/compare/"))
    assert "<html" in page
    assert f'<option value="{conversation.pk}">ponyc-4595 (47 messages)</option>' in page
    assert page.count('<select name="config">') == 4
    assert f'<option value="{pk}">tight v1</option>' in page
    assert '<option value="none">no reduction</option>' in page
    assert '<option value="defaults">Eino defaults (built in)</option>' in page
    assert "Pick a conversation and one to four configs, then Compare." in page


def test_compare_page_no_conversations_says_how_to_get_one() -> None:
    client, _ = member_client()
    page = html(client.get("/compare/"))
    assert "No conversations in this workspace yet" in page


def test_compare_totals_match_the_simulator(setup: tuple[Client, Conversation, int]) -> None:
    client, conversation, pk = setup
    response = client.get(f"/compare/?conversation={conversation.pk}&config={pk}&config=none")
    assert response.status_code == HTTPStatus.OK
    page = html(response)
    expected = _expected(conversation)
    tight, off = (r.totals for r in expected.results)
    assert (tight.input_tokens_billed, off.input_tokens_billed) == (157173, 516549)
    assert _cell(page, "tight v1", "input_tokens_billed") == "157,173 tok"
    assert _cell(page, "tight v1", "peak_context_tokens") == "8,527 tok"
    assert _cell(page, "tight v1", "cost_usd") == "$0.2170"
    assert _cell(page, "tight v1", "chars_offloaded") == "68,437 chars"
    assert _cell(page, "tight v1", "refetches") == "2"
    assert _cell(page, "tight v1", "cached_share") == "89.6%"
    assert _cell(page, "tight v1", "mean_visible_tool_share") == "21.2%"
    assert _cell(page, "tight v1", "misses") == f"{tight.misses:,}"
    assert tight.cost_with_recovery_usd is not None
    assert (
        _cell(page, "tight v1", "cost_with_recovery_usd") == f"${tight.cost_with_recovery_usd:,.4f}"
    )
    assert (
        _cell(page, "no reduction", "input_tokens_billed") == "516,549 tok | +359,376 tok (+228.6%)"
    )
    assert (
        _cell(page, "no reduction", "peak_context_tokens") == "30,954 tok | +22,427 tok (+263.0%)"
    )
    assert _cell(page, "no reduction", "cost_usd") == "$0.6845 | +$0.4675"
    assert _cell(page, "no reduction", "refetches") == "0 | −2"
    assert _cell(page, "no reduction", "mean_visible_tool_share") == "100.0% | +78.8 pp"
    assert '<span class="delta delta-bad">+359,376 tok (+228.6%)</span>' in page
    assert '<span class="delta delta-good">−2</span>' in page
    assert '<th scope="row">tight v1 <span class="badge">baseline</span></th>' in page


def test_compare_baseline_no_reduction(setup: tuple[Client, Conversation, int]) -> None:
    client, conversation, pk = setup
    page = html(client.get(f"/compare/?conversation={conversation.pk}&config={pk}&baseline=none"))
    assert _cell(page, "tight v1", "input_tokens_billed") == "157,173 tok | −359,376 tok (−69.6%)"
    assert '<span class="delta delta-good">−359,376 tok (−69.6%)</span>' in page
    assert "Deltas against no reduction." in page


def test_compare_chart_has_one_dataset_per_config_and_point_per_call(
    setup: tuple[Client, Conversation, int],
) -> None:
    client, conversation, pk = setup
    page = html(
        client.get(
            f"/compare/?conversation={conversation.pk}&config={pk}&config=none&config=defaults"
        )
    )
    chart = _chart(page)
    expected = compare(
        recorded_conversation(conversation),
        [("tight v1", TIGHT), ("no reduction", NO_REDUCTION), ("Eino defaults (built in)", {})],
    )
    series = [d for d in chart["data"]["datasets"] if not d["label"].startswith("threshold")]
    assert [d["label"] for d in series] == ["tight v1", "no reduction", "Eino defaults (built in)"]
    for dataset, result in zip(series, expected.results, strict=True):
        # The billed measure, the totals' unit (not the clear phase's own counts).
        assert dataset["data"] == [c.context_tokens for c in result.calls]
        assert dataset["data"] != [c.clear.tokens_after for c in result.calls]
        assert len(dataset["data"]) == 23
    assert chart["type"] == "line"
    assert chart["data"]["labels"] == list(range(1, 24))
    assert chart["options"]["scales"]["y"]["title"]["text"] == "tokens, as gpt-4o bills them"
    # tight's threshold (8,000 by its counter) is drawn, converted at each call by that
    # call's ratio of billed tokens to the counter's; the default 160,000 is far above.
    (threshold,) = [d for d in chart["data"]["datasets"] if d["label"].startswith("threshold")]
    converted = [
        round(8000 * c.context_tokens / c.clear.tokens_after) for c in expected.results[0].calls
    ]
    assert threshold == {**threshold, "label": "threshold: tight v1", "data": converted}
    assert "Eino defaults (built in) at 160,000 tok" in page
    assert '<canvas data-chart="compare-chart"' in page


def test_compare_htmx_gets_the_results_partial(setup: tuple[Client, Conversation, int]) -> None:
    client, conversation, pk = setup
    url = f"/compare/?conversation={conversation.pk}&config={pk}&config=none"
    page = html(client.get(url, headers={"HX-Request": "true"}))
    assert "<html" not in page and "<form" not in page
    assert page.strip().startswith('<section id="compare-results" class="results">')
    assert '<script id="compare-chart" type="application/json">' in page
    assert _cell(page, "tight v1", "input_tokens_billed") == "157,173 tok"


def _row(page: str, number: int) -> str:
    start = page.index(f'<td class="num">{number}</td>')
    return page[start : page.index("</tr>", start)]


def test_compare_side_by_side_marks_placeholder_and_truncation(
    setup: tuple[Client, Conversation, int],
) -> None:
    client, conversation, pk = setup
    page = html(
        client.get(f"/compare/?conversation={conversation.pk}&config={pk}&config=none&call=8")
    )
    assert "What the model was sent at call 8 of 23" in page
    assert '<th>tight v1<br><span class="muted">6,831 tok sent</span></th>' in page
    off_tokens = _expected(conversation).results[1].calls[7].context_tokens
    assert f'<th>no reduction<br><span class="muted">{off_tokens:,} tok sent</span></th>' in page
    # message 4, the first tool result: cleared under tight, the original under no reduction
    cleared = _row(page, 4)
    tight_cell, off_cell = cleared.split('<td class="cell">')[1:]
    assert '<span class="badge cleared">cleared</span>' in tight_cell
    assert (
        '<mark class="changed">&lt;persisted-output&gt;Tool result saved to: /tmp/clear/'
    ) in tight_cell
    assert '<span class="badge">as recorded</span>' in off_cell
    original = recorded_conversation(conversation).messages[3].content
    assert html_escape(original[:80]) in off_cell
    assert "<mark" not in off_cell
    # message 16: truncated under tight
    assert '<span class="badge truncated">truncated</span>' in _row(page, 16)
    # the system prompt is the same everywhere: one cell, its tokens as gpt-4o bills
    # them (the totals' measure), not by the configs' counter
    system = recorded_conversation(conversation).messages[0]
    billed = Meter(DEFAULT_PRICING, None).message(system)
    assert billed != engine.get_token_counter("approx").count_message(system)
    assert 'colspan="2" class="cell same"' in _row(page, 1)
    assert f"same under every config · {billed:,} tok" in _row(page, 1)
    assert 'aria-current="true">8</a>' in page


def html_escape(text: str) -> str:
    from django.utils.html import escape

    return str(escape(text))


def test_compare_call_defaults_to_the_last_and_is_clamped(
    setup: tuple[Client, Conversation, int],
) -> None:
    client, conversation, pk = setup
    base = f"/compare/?conversation={conversation.pk}&config={pk}&config=none"
    assert "at call 23 of 23" in html(client.get(base))
    assert "at call 23 of 23" in html(client.get(base + "&call=99"))
    first = html(client.get(base + "&call=0"))
    assert "at call 1 of 23" in first
    for dataset in _chart(first)["data"]["datasets"][:2]:  # the chosen call's point stands out
        assert dataset["pointRadius"] == [5] + [2] * 22


def test_compare_other_workspaces_answer_404(setup: tuple[Client, Conversation, int]) -> None:
    client, conversation, _ = setup
    _, other = member_client("bob", "Other")
    theirs = record_conversation(other, client_id="theirs")
    their_config = config_create(workspace=other, name="theirs", data={}).profile
    assert (
        client.get(f"/compare/?conversation={theirs.pk}&config=none").status_code
        == HTTPStatus.NOT_FOUND
    )
    url = f"/compare/?conversation={conversation.pk}&config={their_config.pk}"
    assert client.get(url).status_code == HTTPStatus.NOT_FOUND
    url = f"/compare/?conversation={conversation.pk}&config=nope"
    assert client.get(url).status_code == HTTPStatus.NOT_FOUND
    page = html(client.get("/compare/"))
    assert "theirs" not in page


def test_compare_escapes_titles_and_names() -> None:
    client, ws = member_client()
    conversation = record_conversation(ws, title="<script>alert('t')</script>")
    profile = config_create(workspace=ws, name="<script>alert('n')</script>", data=TIGHT).profile
    page = html(client.get(f"/compare/?conversation={conversation.pk}&config={profile.pk}&call=8"))
    assert "<script>alert(" not in page
    assert "&lt;script&gt;alert(&#x27;t&#x27;)&lt;/script&gt; (47 messages)" in page
    assert '<th scope="row">&lt;script&gt;alert(&#x27;n&#x27;)&lt;/script&gt; v1' in page
    assert "\\u003Cscript\\u003Ealert('n')\\u003C/script\\u003E v1" in page  # the chart's JSON


def test_compare_queries_constant_as_data_grows(
    setup: tuple[Client, Conversation, int], django_assert_num_queries: Any
) -> None:
    client, conversation, pk = setup
    url = f"/compare/?conversation={conversation.pk}&config={pk}&config=none&call=3"
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    ws = conversation.workspace
    for i in range(6):
        config_create(workspace=ws, name=f"more {i}", data={"max_tokens_for_clear": 1000 + i})
        record_conversation(ws, client_id=f"more-{i}", index=i % 3)
    with django_assert_num_queries(len(queries)):
        client.get(url)
    # No conversation to look up, nor its messages.
    with django_assert_num_queries(len(queries) - 2):
        client.get("/compare/")


def test_compare_big_conversation_runs_in_the_background(
    setup: tuple[Client, Conversation, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, conversation, pk = setup
    monkeypatch.setattr(conversation_selectors, "INLINE_LIMIT", 10)
    url = f"/compare/?conversation={conversation.pk}&config={pk}&config=none"
    # A GET only offers to start it (a link must not load the worker): a POST does.
    offer = html(client.get(url, headers={"HX-Request": "true"}))
    assert Simulation.objects.count() == 0
    assert "Replay in the background</button>" in offer
    assert '<input type="hidden" name="config" value="none">' in offer
    started = client.post(
        "/compare/", {"conversation": conversation.pk, "config": [pk, "none"], "baseline": "first"}
    )
    simulation = Simulation.objects.get()
    assert started.status_code == 302
    assert started["Location"] == (
        f"/compare/?conversation={conversation.pk}&config={pk}&config=none"
        f"&baseline=first&pricing=gpt-4o&simulation={simulation.pk}"
    )
    page = html(client.get(started["Location"], headers={"HX-Request": "true"}))
    assert simulation.status == "queued"
    assert simulation.configs == [
        {"name": "tight v1", "config": _full(TIGHT)},
        {"name": "no reduction", "config": NO_REDUCTION},
    ]
    poll = (
        f"/compare/?conversation={conversation.pk}&amp;config={pk}&amp;config=none"
        f"&amp;baseline=first&amp;pricing=gpt-4o&amp;simulation={simulation.pk}"
    )
    assert f'hx-get="{poll}" hx-trigger="every 1s" hx-swap="outerHTML"' in page
    assert "0 of 2 configs done." in page
    # asking again finds the same simulation, and so does starting it again
    assert "0 of 2 configs done." in html(client.get(url))
    client.post("/compare/", {"conversation": conversation.pk, "config": [pk, "none"]})
    assert Simulation.objects.count() == 1
    # a stale ?simulation= of other configs is not shown under these configs
    other = html(
        client.get(url.replace("config=none", "config=defaults") + f"&simulation={simulation.pk}")
    )
    assert "Replay in the background</button>" in other
    services.simulation_run(simulation_id=simulation.pk)
    done = html(client.get(poll.replace("&amp;", "&"), headers={"HX-Request": "true"}))
    assert "every 1s" not in done
    assert _cell(done, "tight v1", "input_tokens_billed") == "157,173 tok"
    assert "Pick a call above to see what each config sent at it." in done
    sent = html(client.get(poll.replace("&amp;", "&") + "&call=8"))
    assert '<span class="badge cleared">cleared</span>' in _row(sent, 4)


def test_compare_and_tune_take_only_plain_numbers(setup: tuple[Client, Conversation, int]) -> None:
    """Unicode digits such as "²" pass str.isdigit() but not int(): never a 500."""
    client, conversation, _ = setup
    assert client.get("/compare/?conversation=%C2%B2").status_code == 404
    for url in (
        f"/compare/?conversation={conversation.pk}&config=defaults&call=%C2%B2",
        f"/tune/?conversation={conversation.pk}&saved=%C2%B2",
    ):
        assert client.get(url).status_code == 200, url


def test_compare_renders_a_simulation_stored_before_calls_carried_their_clear_pass(
    setup: tuple[Client, Conversation, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Older results have no ``clear`` per call: the chart reads the summary events they
    do hold, and where there are none (no reduction) the billed count, with no threshold."""
    client, conversation, pk = setup
    monkeypatch.setattr(conversation_selectors, "INLINE_LIMIT", 10)
    client.post("/compare/", {"conversation": conversation.pk, "config": [pk, "none"]})
    simulation = Simulation.objects.get()
    services.simulation_run(simulation_id=simulation.pk)
    simulation.refresh_from_db()
    assert simulation.results is not None
    for run in simulation.results["results"]:
        for call in run["calls"]:
            del call["clear"]
    simulation.save(update_fields=["results"])
    url = (
        f"/compare/?conversation={conversation.pk}&config={pk}&config=none"
        f"&baseline=first&simulation={simulation.pk}"
    )
    page = html(client.get(url))
    assert _cell(page, "tight v1", "input_tokens_billed") == "157,173 tok"
    tight, off = _expected(conversation).results
    chart = _chart(page)
    labels = [d["label"] for d in chart["data"]["datasets"]]
    assert labels == ["tight v1", "no reduction", "threshold: tight v1"]
    series = chart["data"]["datasets"]
    assert series[0]["data"] == [c.context_tokens for c in tight.calls]
    assert series[1]["data"] == [c.context_tokens for c in off.calls]
    ratios = [c.context_tokens / c.clear.tokens_after for c in tight.calls]
    assert series[2]["data"] == [round(8000 * r) for r in ratios]


def test_compare_renders_a_simulation_stored_before_misses_were_measured(
    setup: tuple[Client, Conversation, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Older results have no misses nor cost with recovery: shown as unknown, no delta."""
    client, conversation, pk = setup
    monkeypatch.setattr(conversation_selectors, "INLINE_LIMIT", 10)
    client.post("/compare/", {"conversation": conversation.pk, "config": [pk, "none"]})
    simulation = Simulation.objects.get()
    services.simulation_run(simulation_id=simulation.pk)
    simulation.refresh_from_db()
    assert simulation.results is not None
    for run in simulation.results["results"]:
        del run["totals"]["misses"], run["totals"]["cost_with_recovery_usd"]
        del run["deltas"]["misses"], run["deltas"]["cost_with_recovery_usd"]
        del run["miss_examples"]
    simulation.save(update_fields=["results"])
    url = (
        f"/compare/?conversation={conversation.pk}&config={pk}&config=none"
        f"&baseline=first&simulation={simulation.pk}"
    )
    page = html(client.get(url))
    assert _cell(page, "tight v1", "input_tokens_billed") == "157,173 tok"
    for row in ("tight v1", "no reduction"):
        assert _cell(page, row, "misses") == "—"
        assert _cell(page, row, "cost_with_recovery_usd") == "—"
    assert 'id="miss-examples"' not in page


def test_compare_says_which_strategy_removed_what(
    setup: tuple[Client, Conversation, int],
) -> None:
    client, conversation, pk = setup
    # At 20k the superseded results of this run are enough, at first, to get under the
    # threshold (at 8k they are not found in range).
    superseded = {"max_tokens_for_clear": 20000, "clear_superseded": True}
    other = config_create(workspace=conversation.workspace, name="superseded", data=superseded)
    page = html(
        client.get(
            f"/compare/?conversation={conversation.pk}&config={pk}&config={other.profile.pk}"
        )
    )
    recorded = recorded_conversation(conversation)
    expected = compare(recorded, [("tight v1", TIGHT), ("superseded v1", superseded)])
    plain, chosen = (r.strategies for r in expected.results)
    assert set(plain) == {"reference"} and "superseded" in chosen
    table = page[page.index('<table class="totals strategies">') :]
    table = table[: table.index("</table>")]
    names = list(dict.fromkeys([*plain, *chosen]))
    assert re.findall(r'<th class="num">([^<]*)</th>', table) == names
    for row, effects in (("tight v1", plain), ("superseded v1", chosen)):
        start = table.index(f'<th scope="row">{row}</th>')
        cells = re.findall(
            r'<td class="num">([^<]*)</td>', table[start : table.index("</tr>", start)]
        )
        assert cells == [
            f"{effects[n].results:,} · {effects[n].tokens_saved:,} tok" if n in effects else "–"
            for n in names
        ]


def test_compare_shows_no_strategy_table_when_only_the_reference_cleared(
    setup: tuple[Client, Conversation, int],
) -> None:
    client, conversation, pk = setup
    page = html(client.get(f"/compare/?conversation={conversation.pk}&config={pk}&config=none"))
    assert "What each clear strategy removed" not in page


def test_compare_shows_the_misses_a_cut_output_caused() -> None:
    """The listing's middle is cut under "cut v1" and its answer types a name from there:
    1 miss (worked out in ``cut_listing_conversation``), none with no reduction."""
    client, ws = member_client()
    conversation = cut_listing_conversation(ws)
    pk = config_create(workspace=ws, name="cut", data=CUT_LISTING).profile.pk
    response = client.get(f"/compare/?conversation={conversation.pk}&config={pk}&config=none")
    assert response.status_code == HTTPStatus.OK
    page = parsed(response)
    (cut, off) = compare(
        recorded_conversation(conversation), [("cut v1", CUT_LISTING), ("none", NO_REDUCTION)]
    ).results
    assert (cut.totals.misses, off.totals.misses) == (1, 0)
    assert cut.totals.cost_with_recovery_usd is not None
    assert cut.totals.cost_with_recovery_usd > cut.totals.cost_usd
    row = row_of(page, "totals", "cut v1")
    assert metric(row, "misses") == "1"
    assert metric(row, "cost_with_recovery_usd") == f"${cut.totals.cost_with_recovery_usd:,.4f}"
    assert metric(row, "refetches") == "0"
    assert metric(row_of(page, "totals", "no reduction"), "misses") == "0"
    (heading,) = elements(page, "th", data_metric="misses")
    assert text(heading) == "misses"
    assert dict(heading.attributes)["title"].startswith("Tool outputs the reduction hid")
    (examples,) = elements(page, "table", id="miss-examples")
    (example,) = [r for r in elements(examples, "tr") if elements(r, "td")]
    assert text(elements(example, "th")[0]) == "cut v1 1 miss"
    assert [text(td) for td in elements(example, "td")] == ["2", "grep_repo", HIDDEN_NAME]
    (link,) = elements(example, "a")
    assert dict(link.attributes)["href"] == (
        f"/compare/?conversation={conversation.pk}&config={pk}&config=none&baseline=first"
        "&pricing=gpt-4o&call=2#sent"
    )


def test_compare_escapes_a_miss_example() -> None:
    client, ws = member_client()
    conversation = cut_listing_conversation(ws, tool="<script>alert(1)</script>")
    pk = config_create(workspace=ws, name="cut", data=CUT_LISTING).profile.pk
    response = client.get(f"/compare/?conversation={conversation.pk}&config={pk}")
    page = parsed(response)
    (examples,) = elements(page, "table", id="miss-examples")
    (tool,) = [c for c in elements(examples, "code") if text(c).startswith("<script")]
    assert text(tool) == "<script>alert(1)</script>"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html(response)
    assert not [s for s in elements(page, "script") if "alert(1)" in text(s)]


def test_compare_background_replay_counts_with_the_chosen_preset(
    setup: tuple[Client, Conversation, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A queued replay keeps the preset, with its shortest cacheable prompt, as the inline
    replay counts: the same totals either way."""
    client, conversation, pk = setup
    monkeypatch.setattr(conversation_selectors, "INLINE_LIMIT", 10)
    body = {"conversation": conversation.pk, "config": [pk, "none"], "pricing": "claude-opus-4.5"}
    started = client.post("/compare/", body)
    simulation = Simulation.objects.get()
    assert "&pricing=claude-opus-4.5&" in started["Location"]
    assert simulation.options == {
        "baseline": "first",
        "pricing": "claude-opus-4.5",
        "min_cacheable_prefix": 4096,
    }
    services.simulation_run(simulation_id=simulation.pk)
    page = html(client.get(started["Location"]))
    expected = compare(
        recorded_conversation(conversation),
        [("tight v1", TIGHT), ("no reduction", NO_REDUCTION)],
        pricing=PRESETS["claude-opus-4.5"],
    )
    billed = expected.results[0].totals.input_tokens_billed
    assert _cell(page, "tight v1", "input_tokens_billed").startswith(f"{billed:,} tok")
    assert "cost at claude-opus-4.5 prices" in page
    assert client.get(f"/compare/?conversation={conversation.pk}&pricing=gpt-9").status_code == (
        HTTPStatus.NOT_FOUND
    )
