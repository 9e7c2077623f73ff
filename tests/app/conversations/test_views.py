"""The conversations list and a conversation's page: context-window chart (recorded or
replayed), message timeline with its badges, and events."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from reduction_app.configs.services import config_create
from reduction_app.conversations.imports import recordings_import
from reduction_app.conversations.services import conversation_create, conversation_upsert
from reduction_app.conversations.timeline import ENGINE_MEASURE
from reduction_app.workspaces.services import api_key_create
from simulator.importers import load_conversations
from simulator.prefix import omitted_tokens
from tests.app.conversations.recordings import CLAUDE_CODE
from tests.app.dashboard_data import (
    HX,
    agent_run,
    event_row,
    expected_tokens,
    member_client,
    stored_file,
)
from tests.app.pages_support import elements, parsed, text
from tests.app.records.test_views_overview import chart_config
from tests.app.support import ApiClient, truncate_over_20
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = pytest.mark.django_db

OUTPUTS = [("grep", "x" * 500), ("read_file", "line\n" * 100), ("ls", "a b c")]


def _tool_transcript(output: str, tool: str = "grep") -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Look around."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": tool, "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": output},
        {"role": "assistant", "content": "Done."},
    ]


def _rows(page: str) -> list[str]:
    body = page.split("<tbody>")[1].split("</tbody>")[0]
    return re.findall(r"<tr[ >].*?</tr>", body, flags=re.S)


# The list ----------------------------------------------------------------------------------


def test_conversation_list_counts_per_row() -> None:
    client, ws = member_client()
    agent_run(ws, "run-1", OUTPUTS, title="First run")
    conversation_upsert(workspace=ws, client_id="imported", message_format="anthropic")
    page = client.get("/conversations/").content.decode()
    first, second = _rows(page)
    assert '<a href="/conversations/imported/">imported</a>' in first
    assert re.findall(r'<td class="num">(.*?)</td>', first) == ["0", "0", "0 tok", "0"]
    assert '<a href="/conversations/run-1/">First run</a>' in second
    assert '<code class="muted">run-1</code>' in second
    assert re.findall(r'<td class="num">(.*?)</td>', second) == [
        "9",
        "8",
        "202 tok",
        '<a href="/files/?conversation=run-1">2</a>',
    ]
    assert "<td>Anthropic Messages</td>" in first


def test_conversation_list_search_and_format_filter() -> None:
    client, ws = member_client()
    conversation_upsert(workspace=ws, client_id="alpha-1", message_format="openai_chat")
    conversation_upsert(
        workspace=ws, client_id="b-2", message_format="anthropic", title="Airline alpha"
    )
    conversation_upsert(workspace=ws, client_id="c-3", message_format="anthropic")

    def ids(**params: str) -> list[str]:
        page = client.get("/conversations/", params).content.decode()
        return re.findall(r'<a href="/conversations/([^/]+)/">', page)

    assert ids() == ["c-3", "b-2", "alpha-1"]
    assert ids(q="ALPHA") == ["b-2", "alpha-1"]
    assert ids(q="alpha", format="anthropic") == ["b-2"]
    assert ids(format="anthropic") == ["c-3", "b-2"]
    assert ids(format="nonsense") == ["c-3", "b-2", "alpha-1"]
    page = client.get("/conversations/", {"q": "alpha"}).content.decode()
    assert "2 conversations match." in page
    assert 'value="alpha"' in page


def test_conversation_list_pages_with_real_links() -> None:
    client, ws = member_client()
    for i in range(30):
        conversation_upsert(workspace=ws, client_id=f"c{i:02d}", message_format="openai_chat")
    page = client.get("/conversations/", {"format": "openai_chat"}).content.decode()
    assert len(_rows(page)) == 25
    assert "Page 1 of 2" in page
    assert (
        '<a rel="next" href="/conversations/?format=openai_chat&amp;page=2" '
        'hx-get="/conversations/?format=openai_chat&amp;page=2" hx-target="#conversation-table"'
    ) in page
    second = client.get("/conversations/", {"format": "openai_chat", "page": 2})
    rows = _rows(second.content.decode())
    assert len(rows) == 5
    assert "c04" in rows[0]
    assert "c00" in rows[-1]


def test_conversation_list_partial_for_htmx() -> None:
    client, ws = member_client()
    conversation_upsert(workspace=ws, client_id="x", message_format="openai_chat")
    page = client.get("/conversations/", {"q": "x"}, headers=HX).content.decode()
    assert "<html" not in page
    assert page.lstrip().startswith('<div id="conversation-table">')
    assert "1 conversation matches." in page


def test_conversation_list_sweep_these_carries_the_filter() -> None:
    """ "Sweep these" opens the Sweep page on the list's filter, the search escaped, also
    in the table htmx swaps in as the filter changes; an empty list has none."""
    client, ws = member_client()
    conversation_upsert(workspace=ws, client_id="a&b c", message_format="anthropic")

    def sweep_links(**params: str) -> list[str]:
        response = client.get("/conversations/", params, headers=HX if params else {})
        links = elements(parsed(response), "a", id="sweep-these")
        return [dict(link.attributes)["href"] for link in links]

    assert sweep_links() == ["/sweep/?scope=filter&q=&format="]
    assert sweep_links(q="a&b c", format="anthropic") == [
        "/sweep/?scope=filter&q=a%26b%20c&format=anthropic"
    ]
    assert sweep_links(q="nothing") == []


def test_conversation_list_shows_only_this_workspace() -> None:
    client, _ = member_client()
    _, other = member_client("bob", "Other")
    conversation_upsert(workspace=other, client_id="secret", message_format="openai_chat")
    assert "secret" not in client.get("/conversations/").content.decode()


def test_conversation_list_query_count_is_constant(django_assert_num_queries: Any) -> None:
    client, ws = member_client()
    client.get("/conversations/")

    def fill(n: int, start: int) -> None:
        for i in range(start, start + n):
            conv = conversation_upsert(
                workspace=ws, client_id=f"c{i}", message_format="openai_chat"
            )
            event_row(ws, conversation=conv, tokens_saved=i)
            stored_file(ws, f"/f/{i}", f"content {i}", conversation=conv)

    fill(5, 0)
    # Session, user, workspace twice, the price choices, the count, the page (counts and
    # the calls' tokens as subqueries).
    with django_assert_num_queries(7):
        client.get("/conversations/")
    fill(10, 5)
    with django_assert_num_queries(7):
        client.get("/conversations/")


def _text(node: Any) -> str:
    if isinstance(node, str):
        return node
    return "".join(_text(child) for child in node.children)


def _usd(dollars: float) -> str:
    return f"${dollars:,.4f}"


def test_conversation_list_cost_and_saved_per_row() -> None:
    client, ws = member_client()
    long_run = agent_run(ws, "long", OUTPUTS * 2)
    short_run = agent_run(ws, "short", OUTPUTS[:1])
    conversation_upsert(workspace=ws, client_id="no-calls", message_format="openai_chat")
    expected = expected_tokens(ws)

    def cells(**params: str) -> dict[str, list[str]]:
        tree = parsed(client.get("/conversations/", params))
        rows = elements(tree, "tbody")[0].children
        out = {}
        for row in rows:
            link = elements(row, "a")[0]
            out[str(link.children[0])] = [_text(td) for td in elements(row, "td", class_="money")]
        return out

    shown = cells()
    for run in (long_run, short_run):
        _, sent, kept = expected[run.pk]
        # gpt-4o, the default price: $2.50 per million input tokens.
        assert shown[run.client_id] == [_usd(sent * 2.5 / 1e6), _usd(kept * 2.5 / 1e6)]
    assert shown["no-calls"] == ["–", "–"]
    # Another price: claude-haiku-4.5 at $1.00 per million.
    _, sent, kept = expected[long_run.pk]
    assert cells(pricing="claude-haiku-4.5")["long"] == [_usd(sent / 1e6), _usd(kept / 1e6)]
    # An unknown price shows the one picked last (remembered for the session), else the
    # default.
    assert cells(pricing="nonsense")["long"] == [_usd(sent / 1e6), _usd(kept / 1e6)]
    # A new session starts at the default.
    client = Client()
    client.force_login(ws.members.get())
    assert cells(pricing="nonsense")["long"] == shown["long"]


def _listed(client: Any, **params: Any) -> list[str]:
    page = client.get("/conversations/", params)
    assert page.status_code == HTTPStatus.OK
    return re.findall(r'<a href="/conversations/([^/]+)/">', page.content.decode())


def test_conversation_list_sorts_by_each_column() -> None:
    client, ws = member_client()
    agent_run(ws, "b-long", OUTPUTS * 2)
    agent_run(ws, "c-short", OUTPUTS[:1])
    conversation_upsert(workspace=ws, client_id="a-none", message_format="anthropic")
    expected = expected_tokens(ws)
    assert expected  # both runs recorded calls
    assert _listed(client, sort="-cost") == ["b-long", "c-short", "a-none"]
    assert _listed(client, sort="cost") == ["a-none", "c-short", "b-long"]
    assert _listed(client, sort="-saved")[0] == "b-long"
    assert _listed(client, sort="conversation") == ["a-none", "b-long", "c-short"]
    assert _listed(client, sort="-conversation") == ["c-short", "b-long", "a-none"]
    assert _listed(client, sort="-messages") == ["b-long", "c-short", "a-none"]
    assert _listed(client, sort="format")[0] == "a-none"  # Anthropic before OpenAI
    default = _listed(client)
    assert default == ["a-none", "c-short", "b-long"]  # most recently updated first
    for unknown in ("nonsense", "-", "--cost", "client_id", "updated_at", "-pk"):
        assert _listed(client, sort=unknown) == default


def test_conversation_list_headers_link_the_sorted_address_and_pages_keep_it() -> None:
    client, ws = member_client()
    for i in range(30):
        conversation_upsert(workspace=ws, client_id=f"c{i:02d}", message_format="openai_chat")
    tree = parsed(client.get("/conversations/", {"q": "c", "sort": "conversation"}))
    headers = {
        th.attributes and dict(th.attributes).get("data-sort"): th for th in elements(tree, "th")
    }
    sorted_by = headers["conversation"]
    assert dict(sorted_by.attributes)["aria-sort"] == "ascending"
    # A click on the column shown reverses it; on another, sorts by it; the filter stays
    # and the page starts again from the first.
    link = elements(sorted_by, "a")[0]
    assert dict(link.attributes)["href"] == "/conversations/?q=c&sort=-conversation"
    cost = elements(headers["cost"], "a")[0]
    assert dict(cost.attributes)["href"] == "/conversations/?q=c&sort=-cost"
    assert "aria-sort" not in dict(headers["cost"].attributes)
    (following,) = elements(tree, "a", rel="next")
    assert dict(following.attributes)["href"] == "/conversations/?page=2&q=c&sort=conversation"
    assert _listed(client, q="c", sort="conversation", page=2) == [f"c{i}" for i in range(25, 30)]
    # A new order from page 2 starts at the top.
    page_two = parsed(client.get("/conversations/", {"sort": "conversation", "page": 2}))
    (header,) = elements(page_two, "th", data_sort="files")
    assert dict(elements(header, "a")[0].attributes)["href"] == "/conversations/?sort=-files"


# A conversation's page -----------------------------------------------------------------


def test_conversation_page_charts_the_recorded_clear_passes() -> None:
    client, ws = member_client()
    agent_run(ws, "run-1", OUTPUTS, title="First run")
    response = client.get("/conversations/run-1/")
    assert response.status_code == HTTPStatus.OK
    page = response.content.decode()
    assert "Recorded: the conversation's 4 clear passes" in page
    assert "4 model calls</span> · <span>peak 145 tok</span>" in page
    assert "<span>2 clears applied</span> · <span>2 truncations</span>" in page
    assert "9 messages" in page
    assert '<a href="/events/?conversation=run-1">8 events</a>' in page
    chart = chart_config(page, "context-chart")
    sent, before, threshold, truncations, clears = chart["data"]["datasets"]
    assert chart["data"]["labels"] == [1, 2, 3, 4]
    assert sent["data"] == [15, 113, 145, 84]
    assert before["data"] == [15, 113, 213, 152]
    assert threshold == {**threshold, "label": "max_tokens_for_clear", "data": [150] * 4}
    # A truncation arrived before calls 2 and 3; calls 3 and 4 cleared a result.
    assert truncations["data"] == [None, 113, 145, None]
    assert clears["data"] == [None, None, 213, 152]


def test_conversation_page_timeline_badges_link_the_files() -> None:
    client, ws = member_client()
    agent_run(ws, "run-1", OUTPUTS)
    page = client.get("/conversations/run-1/").content.decode()
    timeline = page.split('id="timeline"')[1].split("</section>")[0]
    rows = _rows(timeline)
    assert len(rows) == 9
    assert re.findall(r"<td>(system|user|assistant|tool)</td>", timeline) == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert '<td class="num">26 tok</td>' in rows[3]
    assert '<span class="badge clear">cleared</span>' in rows[3]
    assert (
        '<a href="/files/view/?path=/tmp/trunc/call_1&amp;conversation=run-1">'
        "<code>/tmp/trunc/call_1</code></a>" in (rows[3])
    )
    assert "<td>grep</td>" in rows[3]
    assert "badge" not in rows[7]
    assert "a b c" in rows[7]


def test_conversation_page_truncated_badge() -> None:
    client, ws = member_client()
    notice = (
        "<persisted-output>\nOutput too large (60000). Full output saved to: /tmp/trunc/c1\n"
        "Preview (first 10):\nyyyyyyyyyy\n\nPreview (last 10):\nyyyyyyyyyy\n\n"
        "Use read_file to view\n</persisted-output>"
    )
    conversation_upsert(
        workspace=ws,
        client_id="t",
        message_format="openai_chat",
        transcript=_tool_transcript(notice),
    )
    page = client.get("/conversations/t/").content.decode()
    assert (
        '<span class="badge truncation">truncated</span> '
        '<a href="/files/view/?path=/tmp/trunc/c1&amp;conversation=t">'
        "<code>/tmp/trunc/c1</code></a>"
    ) in page


def test_conversation_made_by_truncate_alone_says_where_its_messages_would_come_from() -> None:
    client, ws = member_client()
    key, raw = api_key_create(workspace=ws, name="agent")
    api = ApiClient(Client(), raw, key, ws)
    for n in range(2):
        assert truncate_over_20(api, "x" * 100, f"call_{n}", "only-truncations").status_code == 200
    response = client.get("/conversations/only-truncations/")
    (note,) = elements(parsed(response), "p", class_="no-transcript")
    said = text(note)
    assert said.startswith("No messages are recorded for this conversation: its 2 events came")
    assert "POST /clear sends its messages" in said
    assert "no model call to chart" not in response.content.decode()


def test_conversation_without_clear_events_is_replayed() -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="imported",
        message_format="openai_chat",
        transcript=_tool_transcript("y" * 60_000),
    )
    page = client.get("/conversations/imported/").content.decode()
    assert "this is a <strong>replay</strong>" in page
    assert "the engine's defaults" in page
    chart = chart_config(page, "context-chart")
    sent, _, threshold, truncations, clears = chart["data"]["datasets"]
    assert len(sent["data"]) == 2
    assert threshold["data"] == [160_000, 160_000]
    assert truncations["data"][0] is None
    assert truncations["data"][1] is not None  # the 60,000-character output, cut
    assert clears["data"] == [None, None]


def test_conversation_replay_under_a_chosen_config() -> None:
    client, ws = member_client()
    two_rounds = _tool_transcript("y" * 2_000)[:4] + _tool_transcript("w" * 2_000)[2:]
    two_rounds[4]["tool_calls"] = [{**two_rounds[4]["tool_calls"][0], "id": "c2"}]
    two_rounds[5]["tool_call_id"] = "c2"
    conversation_upsert(
        workspace=ws, client_id="imported", message_format="openai_chat", transcript=two_rounds
    )
    version = config_create(workspace=ws, name="tight", data={"max_tokens_for_clear": 100})
    page = client.get("/conversations/imported/", {"config": version.profile_id}).content.decode()
    assert "under\n    config <strong>tight</strong>" in page
    assert f'<option value="{version.profile_id}" selected>tight</option>' in page
    chart = chart_config(page, "context-chart")
    sent, before, threshold, _, clears = chart["data"]["datasets"]
    assert threshold["data"] == [100, 100, 100]
    assert clears["data"][:2] == [None, None]
    assert clears["data"][2] == before["data"][2]  # the first result cleared before call 3
    assert sent["data"][2] < before["data"][2]


def test_conversation_replay_counts_in_the_thresholds_unit() -> None:
    """Under skip_clear no pass reports its counts, so the replay's own are charted: they
    are the clear phase's (engine) counts, as in a replay whose pass ran, not the
    provider's."""
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="imported",
        message_format="openai_chat",
        transcript=_tool_transcript("y" * 400),
    )
    skip = config_create(workspace=ws, name="skip", data={"skip_clear": True})
    series = []
    for params in ({}, {"config": skip.profile_id}):
        page = client.get("/conversations/imported/", params).content.decode()
        series.append(chart_config(page, "context-chart")["data"]["datasets"][0]["data"])
    assert series[0] == series[1]
    assert len(series[0]) == 2


def test_conversation_replay_partial_for_the_config_select() -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws, client_id="i", message_format="openai_chat", transcript=_tool_transcript("z")
    )
    page = client.get(
        "/conversations/i/", headers={**HX, "HX-Target": "context-window"}
    ).content.decode()
    assert "<html" not in page
    assert page.lstrip().startswith('<section id="context-window"')
    assert 'id="timeline"' not in page


def test_conversation_timeline_pages() -> None:
    client, ws = member_client()
    transcript = [{"role": "user", "content": f"message {i + 1}"} for i in range(120)]
    conversation_upsert(
        workspace=ws, client_id="long", message_format="openai_chat", transcript=transcript
    )
    page = client.get("/conversations/long/").content.decode()
    timeline = page.split('id="timeline"')[1].split("</section>")[0]
    assert len(_rows(timeline)) == 50
    assert "Page 1 of 3" in timeline
    assert 'href="/conversations/long/?messages=2" hx-get="/conversations/long/?messages=2"' in (
        timeline
    )
    part = client.get(
        "/conversations/long/", {"messages": 3}, headers={**HX, "HX-Target": "timeline"}
    ).content.decode()
    assert "<html" not in part
    assert part.lstrip().startswith('<section id="timeline"')
    rows = _rows(part)
    assert len(rows) == 20
    assert '<a href="/conversations/long/messages/101/"' in rows[0]
    assert "message 120" in rows[-1]


def test_conversation_events_partial_pages() -> None:
    client, ws = member_client()
    conv = conversation_upsert(workspace=ws, client_id="e", message_format="openai_chat")
    for i in range(30):
        event_row(ws, conversation=conv, call_id=f"call_{i}")
    page = client.get("/conversations/e/").content.decode()
    events = page.split('id="conversation-events"')[1].split("</section>")[0]
    assert len(_rows(events)) == 25
    part = client.get(
        "/conversations/e/", {"events": 2}, headers={**HX, "HX-Target": "conversation-events"}
    ).content.decode()
    assert "<html" not in part
    assert part.lstrip().startswith('<section id="conversation-events"')
    assert len(_rows(part)) == 5
    assert "<code><bdi>call_0</bdi></code>" in part


def test_conversation_of_another_workspace_is_404() -> None:
    client, _ = member_client()
    _, other = member_client("bob", "Other")
    conversation_upsert(workspace=other, client_id="secret", message_format="openai_chat")
    assert client.get("/conversations/secret/").status_code == HTTPStatus.NOT_FOUND
    assert client.get("/conversations/nope/").status_code == HTTPStatus.NOT_FOUND


def test_conversation_page_escapes_title_and_tool_output() -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="xss",
        message_format="openai_chat",
        title="<script>alert(1)</script>",
        transcript=_tool_transcript("<script>alert(2)</script>", tool="<b>tool</b>"),
    )
    page = client.get("/conversations/xss/").content.decode()
    assert "<script>alert" not in page
    assert "<b>tool" not in page
    assert "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>" in page
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert "&lt;b&gt;tool&lt;/b&gt;" in page


def test_conversation_page_shows_the_cost_of_its_recorded_calls() -> None:
    client, ws = member_client()
    run = agent_run(ws, "run-1", OUTPUTS * 2)
    _, sent, kept = expected_tokens(ws)[run.pk]
    tree = parsed(client.get("/conversations/run-1/"))
    (section,) = elements(tree, "section", id="conversation-money")
    assert [_text(s) for s in elements(section, "span", id="money-cost")] == [
        _usd(sent * 2.5 / 1e6)
    ]
    assert [_text(s) for s in elements(section, "span", id="money-saved")] == [
        _usd(kept * 2.5 / 1e6)
    ]
    other = parsed(client.get("/conversations/run-1/", {"pricing": "gpt-4.1"}))
    (cost,) = elements(other, "span", id="money-cost")
    assert _text(cost) == _usd(sent * 2.0 / 1e6)  # gpt-4.1: $2.00 per million


def test_conversation_page_prices_each_call_the_provider_reported() -> None:
    client, ws = member_client()
    transcript = _tool_transcript("x" * 50)
    conversation_create(
        workspace=ws,
        client_id="imported",
        message_format="openai_chat",
        transcript=transcript,
        tools=[],
        source="tau2",
        provider_usage={
            "prompt_tokens": {"2": 1_000, "4": 250_000},
            "cached_prompt_tokens": {"4": 200_000},
            "completion_tokens": {"2": 10},
            "cost": 0.5,
        },
    )
    page = client.get("/conversations/imported/", {"pricing": "claude-sonnet-4.5"})
    (table,) = elements(parsed(page), "table", class_="usage")
    rows = elements(elements(table, "tbody")[0], "tr")
    costs = [_text(elements(row, "td", class_="money")[0]) for row in rows]
    # Sonnet 4.5: $3 per million input, cache reads $0.30; a prompt past 200k tokens at
    # the long-context $6 and $0.60.
    first = 1_000 * 3.0 / 1e6
    second = (50_000 * 6.0 + 200_000 * 0.6) / 1e6
    assert costs == [_usd(first), _usd(second)]
    (total,) = elements(table, "td", id="usage-cost")
    assert _text(total) == _usd(first + second)
    assert "the run's own count of its cost: $0.5000" in _text(table)


def test_conversation_page_query_count_is_constant(django_assert_num_queries: Any) -> None:
    client, ws = member_client()
    client.get("/")
    agent_run(ws, "small", OUTPUTS * 2)
    # Session, user, workspace twice, the conversation, its messages, its counts, the
    # price choices, its calls' cost, the chart's events, the events' count and page.
    with django_assert_num_queries(12):
        client.get("/conversations/small/")
    agent_run(ws, "big", OUTPUTS * 6)
    with django_assert_num_queries(12):
        client.get("/conversations/big/")


def test_conversation_page_reads_anthropic_transcripts() -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="claude",
        message_format="anthropic",
        system="Be brief.",
        transcript=[
            {"role": "user", "content": "List the files."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "[Old tool result content cleared]",
                    }
                ],
            },
            {"role": "assistant", "content": "Nothing left."},
        ],
    )
    page = client.get("/conversations/claude/").content.decode()
    timeline = page.split('id="timeline"')[1].split("</section>")[0]
    assert re.findall(r"<td>(system|user|assistant|tool)</td>", timeline) == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    badge = '<span class="badge clear">cleared</span> <span class="muted">(not offloaded)</span>'
    assert badge in timeline
    assert timeline.count("<td>ls</td>") == 2
    assert "this is a <strong>replay</strong>" in page


def test_conversation_page_does_not_replay_a_big_conversation_inline(monkeypatch: Any) -> None:
    from reduction_app.conversations import selectors

    client, ws = member_client()
    messages = [{"role": "user", "content": f"m{i}"} for i in range(30)]
    conversation_upsert(
        workspace=ws, client_id="big", message_format="openai_chat", transcript=messages
    )
    monkeypatch.setattr(selectors, "INLINE_LIMIT", 10)
    page = client.get("/conversations/big/").content.decode()
    assert "It has 30 messages and no recorded clear passes; replay it on the Compare page" in page


# One message -------------------------------------------------------------------------------

EVIL = "<script>alert(1)</script>"


def _message_page(client: Any, client_id: str, number: int, **headers: str) -> Any:
    return client.get(f"/conversations/{client_id}/messages/{number}/", headers=headers)


def test_message_page_shows_the_message_whole_with_pretty_arguments() -> None:
    client, ws = member_client()
    transcript = _tool_transcript("y" * 1_000, tool="execute_bash")
    transcript[2]["content"] = EVIL
    transcript[2]["tool_calls"][0]["function"]["arguments"] = '{"command": "ls -l", "n": [1]}'
    conversation_upsert(
        workspace=ws, client_id="a/b", message_format="openai_chat", transcript=transcript
    )
    page = _message_page(client, "a/b", 3).content.decode()
    assert "<h1>Message 3 of 5</h1>" in page
    assert "<pre>&lt;script&gt;alert(1)&lt;/script&gt;</pre>" in page
    assert (
        "<pre>{\n  &quot;command&quot;: &quot;ls -l&quot;,\n  &quot;n&quot;: [\n    1\n  ]\n}</pre>"
        in page
    )
    assert '<a rel="prev" href="/conversations/a/b/messages/2/">' in page
    assert '<a rel="next" href="/conversations/a/b/messages/4/">' in page
    result = _message_page(client, "a/b", 4).content.decode()
    assert f"<pre>{'y' * 1_000}</pre>" in result
    assert "tool result <code>execute_bash</code>" in result


def test_message_page_partial_for_htmx() -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="run",
        message_format="openai_chat",
        transcript=_tool_transcript("z" * 900),
    )
    part = _message_page(client, "run", 4, **HX).content.decode()
    assert "<html" not in part
    assert part.lstrip().startswith('<div class="message-body">')
    assert f"<pre>{'z' * 900}</pre>" in part
    timeline = client.get("/conversations/run/").content.decode()
    assert (
        '<a class="show-all" href="/conversations/run/messages/4/" '
        'hx-get="/conversations/run/messages/4/" hx-target="#message-4-body" '
        'hx-swap="innerHTML">Show all 900 chars</a>'
    ) in timeline


def test_message_page_of_anthropic_blocks() -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="claude",
        message_format="anthropic",
        transcript=[
            {"role": "user", "content": "Look."},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Listing."},
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"}],
            },
        ],
    )
    call = _message_page(client, "claude", 2).content.decode()
    assert re.findall(r'<p class="part-head">(.*?)</p>', call) == [
        "text",
        'tool call <code>bash</code> <span class="muted">· id <code>toolu_1</code></span>',
    ]
    assert "<pre>{\n  &quot;cmd&quot;: &quot;ls&quot;\n}</pre>" in call
    result = _message_page(client, "claude", 3).content.decode()
    assert re.findall(r'<p class="part-head">(.*?)</p>', result) == [
        'tool result <code>bash</code> <span class="muted">· id <code>toolu_1</code></span>'
    ]
    assert "<pre>a b</pre>" in result


@pytest.mark.parametrize("number", [0, 6, 99])
def test_message_page_out_of_range_is_404(number: int) -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="run",
        message_format="openai_chat",
        transcript=_tool_transcript("x"),
    )
    assert _message_page(client, "run", number).status_code == HTTPStatus.NOT_FOUND


def test_message_page_of_another_workspace_is_404() -> None:
    client, _ = member_client()
    _, other = member_client("bob", "Other")
    conversation_upsert(
        workspace=other, client_id="run", message_format="openai_chat", transcript=[]
    )
    assert _message_page(client, "run", 1).status_code == HTTPStatus.NOT_FOUND


# What an imported recording left out ------------------------------------------------------


@needs_recordings
def test_conversation_page_says_what_a_claude_code_log_left_out_and_how_much() -> None:
    client, ws = member_client()
    path = CONVERSATIONS / CLAUDE_CODE
    [result] = recordings_import(workspace=ws, files=[(path.name, path.read_bytes())])
    [made] = result["conversations"]
    [recorded] = load_conversations(path)
    size = omitted_tokens(recorded, ENGINE_MEASURE)
    assert size is not None and size > 10_000  # Claude Code's own prompt and tools
    page = parsed(client.get(f"/conversations/{made['conversation_id']}/"))
    [note] = elements(page, "p", id="omits-note")
    assert text(note) == (
        "This Claude Code log leaves out part of what the model was sent: the system prompt, "
        "the tool schemas and the CLAUDE.md files . By the provider's token counts of its "
        "first calls, less the engine's own count of what the recording holds, that is about "
        f"{size:,} tok a request. Token counts here are of what the recording holds, except "
        "where they say they add what it left out."
    )
    # The replays' prefix is the same figure, and names the same parts.
    [prefix] = elements(page, "p", id="prefix-note")
    assert text(prefix).startswith(
        f"This log leaves out {size:,} tok that every request sent before its messages (the "
        "system prompt, the tool schemas and the CLAUDE.md files), inferred"
    )


@needs_recordings
def test_conversation_page_of_a_recording_that_kept_everything_says_nothing_left_out() -> None:
    client, ws = member_client()
    path = CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl"
    [result] = recordings_import(workspace=ws, files=[(path.name, path.read_bytes())])
    first = result["conversations"][0]["conversation_id"]
    page = parsed(client.get(f"/conversations/{first}/"))
    assert elements(page, "p", id="omits-note") == []
    assert len(elements(page, "span", class_="badge")) >= 1


def test_conversation_page_of_a_client_recording_says_nothing_left_out() -> None:
    client, ws = member_client()
    conversation_upsert(
        workspace=ws,
        client_id="mine",
        message_format="openai_chat",
        transcript=[{"role": "user", "content": "hi"}],
    )
    page = parsed(client.get("/conversations/mine/"))
    assert elements(page, "p", id="omits-note") == []
