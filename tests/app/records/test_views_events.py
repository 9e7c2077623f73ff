"""The events page: filters (conversation, phase, tool, time), cursor pages, htmx swaps."""

from __future__ import annotations

import re
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.utils import timezone

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import EventRecord
from tests.app.dashboard_data import HX, event_row, member_client
from tests.app.pages_support import elements, parsed

pytestmark = pytest.mark.django_db


def _ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'<tr>\s*<td class="num">(\d+)</td>', page)]


def test_events_table_shows_each_event_with_its_links() -> None:
    client, ws = member_client()
    conv = conversation_upsert(
        workspace=ws, client_id="run-1", message_format="openai_chat", title="Run one"
    )
    event = event_row(
        ws,
        conversation=conv,
        tool_name="grep",
        call_id="call_7",
        tokens_before=12_345,
        tokens_after=1_111,
        tokens_saved=11_234,
        chars_before=49_380,
        chars_after=4_444,
        offload_path="/tmp/trunc/call_7",
    )
    page = client.get("/events/").content.decode()
    assert _ids(page) == [event.pk]
    assert '<a href="/conversations/run-1/">Run one</a>' in page
    assert '<td class="num">12,345 → 1,111 tok</td>' in page
    assert '<td class="num">11,234 tok</td>' in page
    assert (
        '<a href="/files/view/?path=/tmp/trunc/call_7&amp;conversation=run-1">'
        "<code><bdi>/tmp/trunc/call_7</bdi></code></a>"
    ) in page
    assert "49,380 chars → 4,444" in page
    assert "<code><bdi>call_7</bdi></code>" in page


def test_events_filters() -> None:
    client, ws = member_client()
    a = conversation_upsert(workspace=ws, client_id="a", message_format="openai_chat")
    b = conversation_upsert(workspace=ws, client_id="b", message_format="openai_chat")
    e1 = event_row(ws, conversation=a, tool_name="grep")
    e2 = event_row(ws, conversation=a, phase="clear", tool_name="read_file")
    e3 = event_row(ws, conversation=b, phase="clear", kind="summary", tool_name="")
    e4 = event_row(ws, conversation=b, tool_name="read_file")
    EventRecord.objects.filter(pk=e1.pk).update(created_at=timezone.now() - timedelta(days=3))

    def ids(**params: str) -> list[int]:
        response = client.get("/events/", params)
        assert response.status_code == HTTPStatus.OK
        return _ids(response.content.decode())

    assert ids() == [e4.pk, e3.pk, e2.pk, e1.pk]
    assert ids(conversation="a") == [e2.pk, e1.pk]
    assert ids(phase="clear") == [e3.pk, e2.pk]
    assert ids(tool="read_file") == [e4.pk, e2.pk]
    assert ids(tool="read_file", phase="truncation") == [e4.pk]
    since = (timezone.now() - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    assert ids(since=since) == [e4.pk, e3.pk, e2.pk]
    assert ids(until=since) == [e1.pk]
    # A bad value is shown on its field and that filter left out.
    page = client.get("/events/", {"since": "yesterday", "phase": "clear"}).content.decode()
    assert _ids(page) == [e3.pk, e2.pk]
    assert '<span class="error">Enter a valid date/time.</span>' in page
    # The tool select offers the tools seen, and keeps the choice.
    page = client.get("/events/", {"tool": "grep"}).content.decode()
    assert '<option value="grep" selected>grep</option>' in page
    assert '<option value="read_file">read_file</option>' in page


def test_events_form_works_with_and_without_htmx() -> None:
    client, _ = member_client()
    page = client.get("/events/").content.decode()
    assert '<form method="get" action="/events/" class="filters" id="event-filters"' in page
    assert 'hx-get="/events/" hx-target="#event-table" hx-swap="outerHTML"' in page
    assert 'hx-trigger="submit, change" hx-push-url="true"' in page


def test_events_cursor_pages() -> None:
    client, ws = member_client()
    events = [event_row(ws, call_id=f"c{i}") for i in range(120)]
    newest = [e.pk for e in reversed(events)]
    first = client.get("/events/", {"phase": "truncation"}).content.decode()
    assert _ids(first) == newest[:50]
    older = f"/events/?before={newest[49]}&amp;phase=truncation"
    assert f'<a rel="next" href="{older}" hx-get="{older}" hx-target="#event-table"' in first
    assert "Newer" not in first
    second = client.get("/events/", {"phase": "truncation", "before": newest[49]}).content.decode()
    assert _ids(second) == newest[50:100]
    third = client.get("/events/", {"before": newest[99]}).content.decode()
    assert _ids(third) == newest[100:]
    assert "Older" not in third
    # Back up: the page of newer events above the first shown.
    newer = f"/events/?after={newest[100]}"
    assert f'<a rel="prev" href="{newer}"' in third
    back = client.get("/events/", {"after": newest[100]}).content.decode()
    assert _ids(back) == newest[50:100]
    assert _ids(client.get("/events/", {"after": newest[50]}).content.decode()) == newest[:50]


def test_events_sort_by_a_column_pages_by_keyset_with_the_order_kept() -> None:
    client, ws = member_client()
    # Ties on tokens saved (ten values), so pages end inside runs of equal values.
    events = [event_row(ws, call_id=f"c{i}", tokens_saved=(i * 7) % 10) for i in range(120)]
    expected = [e.pk for e in sorted(events, key=lambda e: (e.tokens_saved, e.pk), reverse=True)]

    first = client.get("/events/", {"sort": "-saved"}).content.decode()
    assert _ids(first) == expected[:50]
    older = f"/events/?before={expected[49]}&amp;sort=-saved"
    assert f'<a rel="next" href="{older}" hx-get="{older}"' in first
    second = client.get("/events/", {"sort": "-saved", "before": expected[49]}).content.decode()
    assert _ids(second) == expected[50:100]
    third = client.get("/events/", {"sort": "-saved", "before": expected[99]}).content.decode()
    assert _ids(third) == expected[100:]
    assert 'rel="next"' not in third
    back = client.get("/events/", {"sort": "-saved", "after": expected[100]}).content.decode()
    assert _ids(back) == expected[50:100]
    # Ascending, and by a text column.
    ascending = client.get("/events/", {"sort": "saved"}).content.decode()
    assert _ids(ascending) == expected[::-1][:50]
    by_call = sorted(events, key=lambda e: (e.call_id, e.pk))
    assert _ids(client.get("/events/", {"sort": "call"}).content.decode()) == [
        e.pk for e in by_call[:50]
    ]


def test_events_unknown_sort_gives_the_newest_first() -> None:
    client, ws = member_client()
    events = [event_row(ws, tokens_saved=i) for i in range(5)]
    newest = [e.pk for e in reversed(events)]
    for unknown in ("nonsense", "tokens_saved", "-created_at", "-id,phase", "--saved", ""):
        response = client.get("/events/", {"sort": unknown})
        assert response.status_code == HTTPStatus.OK
        assert _ids(response.content.decode()) == newest


def test_events_headers_sort_and_the_filters_keep_the_order() -> None:
    client, ws = member_client()
    event_row(ws, tokens_saved=3)
    tree = parsed(client.get("/events/", {"phase": "truncation", "sort": "-saved"}))
    (saved,) = elements(tree, "th", data_sort="saved")
    assert dict(saved.attributes)["aria-sort"] == "descending"
    href = dict(elements(saved, "a")[0].attributes)["href"]
    assert href == "/events/?phase=truncation&sort=saved"
    (tool,) = elements(tree, "th", data_sort="tool")
    assert dict(elements(tool, "a")[0].attributes)["href"] == "/events/?phase=truncation&sort=tool"
    # The filter form sends the order shown along with its fields.
    (kept,) = elements(tree, "input", name="sort")
    assert dict(kept.attributes) == {
        "type": "hidden",
        "name": "sort",
        "value": "-saved",
        "form": "event-filters",
    }


def test_events_partial_for_htmx() -> None:
    client, ws = member_client()
    event_row(ws, tool_name="grep")
    response = client.get("/events/", {"tool": "grep"}, headers=HX)
    # A browser cache must never answer the page's address with the partial.
    assert "HX-Request" in response["Vary"]
    page = response.content.decode()
    assert "<html" not in page
    assert page.lstrip().startswith('<div id="event-table">')
    assert len(_ids(page)) == 1


def test_events_of_another_workspace_are_not_shown() -> None:
    client, _ = member_client()
    _, other = member_client("bob", "Other")
    event_row(other, tool_name="secret_tool")
    page = client.get("/events/").content.decode()
    assert "secret_tool" not in page
    assert "No events." in page


def test_events_escape_user_content() -> None:
    client, ws = member_client()
    conv = conversation_upsert(
        workspace=ws, client_id="x", message_format="openai_chat", title="<script>alert(1)</script>"
    )
    event_row(ws, conversation=conv, tool_name="<img src=x onerror=alert(2)>", call_id="<i>")
    page = client.get("/events/").content.decode()
    assert "<script>alert" not in page
    assert "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page


def test_events_query_count_is_constant(django_assert_num_queries: Any) -> None:
    client, ws = member_client()
    client.get("/events/")

    def fill(n: int) -> None:
        for i in range(n):
            conv = conversation_upsert(
                workspace=ws, client_id=f"c{i}", message_format="openai_chat"
            )
            event_row(ws, conversation=conv, tool_name=f"tool{i}")

    fill(40)
    # Session, user, workspace twice, the tool names, one page (keyset, no count).
    with django_assert_num_queries(6):
        client.get("/events/", {"phase": "truncation"})
    fill(120)
    with django_assert_num_queries(6):
        client.get("/events/", {"phase": "truncation"})
    last = EventRecord.objects.order_by("id")[60].pk
    with django_assert_num_queries(6):
        client.get("/events/", {"before": last})
    # Sorted by another column, a cursor reads its row's value first.
    with django_assert_num_queries(6):
        client.get("/events/", {"sort": "-saved"})
    with django_assert_num_queries(7):
        client.get("/events/", {"sort": "-saved", "before": last})
