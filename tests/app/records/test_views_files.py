"""The files list, a file's page (lines, search, paging, provenance) and its raw content;
the tests that read stored content run on the local folder and on S3."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import pytest

from reduction_app.conversations.services import conversation_upsert
from reduction_app.records.views.files import highlighted
from tests.app.dashboard_data import HX, event_row, member_client, stored_file
from tests.offload_stores import OffloadStore

pytestmark = pytest.mark.django_db

BIG_LINES = 50_000


def _paths(page: str) -> list[str]:
    """The paths the list links to (each link names the file's conversation too)."""
    return re.findall(r'<a href="/files/view/\?path=([^"&]+)[^"]*"><code>', page)


def _line_numbers(page: str) -> list[int]:
    return [int(n) for n in re.findall(r'<tr id="L(\d+)"', page)]


def _big(ws: Any) -> Any:
    content = "".join(
        f"line {i + 1}: {'needle' if (i + 1) % 10_000 == 0 else 'hay'}\n" for i in range(BIG_LINES)
    )
    return stored_file(ws, "/tmp/trunc/big", content, tool_name="grep")


# The list ----------------------------------------------------------------------------------


def test_file_list_shows_each_file() -> None:
    client, ws = member_client()
    conv = conversation_upsert(
        workspace=ws, client_id="run-1", message_format="openai_chat", title="Run one"
    )
    stored_file(ws, "/tmp/trunc/call_1", "x" * 12_345, conversation=conv, tool_name="grep")
    page = client.get("/files/").content.decode()
    assert _paths(page) == ["/tmp/trunc/call_1"]
    assert '<a href="/files/view/?path=/tmp/trunc/call_1&amp;conversation=run-1">' in page
    assert '<a href="/conversations/run-1/">Run one</a>' in page
    assert '<td class="num">12,345 chars</td>' in page
    assert '<td class="num">3,086 tok</td>' in page
    assert "<td>grep</td>" in page
    assert "1 file." in page


def test_file_list_filters() -> None:
    client, ws = member_client()
    a = conversation_upsert(workspace=ws, client_id="a", message_format="openai_chat")
    stored_file(ws, "/f/1", "1" * 100, conversation=a, tool_name="grep")
    stored_file(ws, "/f/2", "2" * 1_000, conversation=a, tool_name="ls", phase="clear")
    stored_file(ws, "/f/3", "3" * 10_000, tool_name="grep", phase="clear")

    def paths(**params: Any) -> list[str]:
        return _paths(client.get("/files/", params).content.decode())

    assert paths() == ["/f/3", "/f/2", "/f/1"]
    assert paths(conversation="a") == ["/f/2", "/f/1"]
    assert paths(tool="grep") == ["/f/3", "/f/1"]
    assert paths(phase="clear") == ["/f/3", "/f/2"]
    assert paths(min_chars=1_000) == ["/f/3", "/f/2"]
    assert paths(max_chars=1_000) == ["/f/2", "/f/1"]
    assert paths(min_chars=500, max_chars=5_000, tool="ls") == ["/f/2"]
    page = client.get("/files/", {"min_chars": "big"}).content.decode()
    assert _paths(page) == ["/f/3", "/f/2", "/f/1"]
    assert '<span class="error">Enter a whole number.</span>' in page
    stored_file(ws, "/f/4", "4" * 10, conversation=a, tool_name="grep")
    assert paths(order="largest") == ["/f/3", "/f/2", "/f/1", "/f/4"]
    assert paths(order="largest", conversation="a", phase="truncation") == ["/f/1", "/f/4"]


def test_file_list_sorts_by_each_column_and_pages_keep_it() -> None:
    client, ws = member_client()
    sizes = [30, 10, 20]
    for i, size in enumerate(sizes):
        stored_file(ws, f"/f/{i}", "x" * size, tool_name=f"tool{2 - i}")

    def paths(**params: Any) -> list[str]:
        response = client.get("/files/", params)
        assert response.status_code == HTTPStatus.OK
        return _paths(response.content.decode())

    assert paths(sort="-size") == ["/f/0", "/f/2", "/f/1"]
    assert paths(sort="size") == ["/f/1", "/f/2", "/f/0"]
    assert paths(sort="path") == ["/f/0", "/f/1", "/f/2"]
    assert paths(sort="tool") == ["/f/2", "/f/1", "/f/0"]
    assert paths(sort="-created") == paths() == ["/f/2", "/f/1", "/f/0"]
    for unknown in ("size_chars", "-storage_name", "nonsense"):
        assert paths(sort=unknown) == paths()
    for i in range(3, 60):
        stored_file(ws, f"/f/{i:02d}", "y" * i)
    page = client.get("/files/", {"sort": "-size"}).content.decode()
    assert 'rel="next" href="/files/?page=2&amp;sort=-size"' in page
    assert paths(sort="-size", page=2)[-1] == "/f/03"  # the smallest (3 characters), last


def test_file_list_pages() -> None:
    client, ws = member_client()
    for i in range(60):
        stored_file(ws, f"/f/{i:02d}", f"content {i}")
    page = client.get("/files/").content.decode()
    assert len(_paths(page)) == 50
    assert 'href="/files/?page=2" hx-get="/files/?page=2" hx-target="#file-table"' in page
    assert _paths(client.get("/files/", {"page": 2}).content.decode()) == [
        f"/f/{i:02d}" for i in range(9, -1, -1)
    ]


def test_file_list_partial_for_htmx() -> None:
    client, ws = member_client()
    stored_file(ws, "/f/1", "one")
    page = client.get("/files/", {"tool": "read_file"}, headers=HX).content.decode()
    assert "<html" not in page
    assert page.lstrip().startswith('<div id="file-table">')
    assert _paths(page) == ["/f/1"]


def test_file_list_query_count_is_constant(django_assert_num_queries: Any) -> None:
    client, ws = member_client()
    client.get("/files/")

    def fill(start: int, n: int) -> None:
        for i in range(start, start + n):
            conv = conversation_upsert(
                workspace=ws, client_id=f"c{i}", message_format="openai_chat"
            )
            stored_file(ws, f"/f/{i}", f"content {i}", conversation=conv, tool_name=f"t{i}")

    fill(0, 20)
    # Session, user, workspace twice, tool names, the count, the page.
    with django_assert_num_queries(7):
        client.get("/files/")
    fill(20, 40)
    with django_assert_num_queries(7):
        client.get("/files/")


# A file's page ---------------------------------------------------------------------------


@pytest.mark.usefixtures("offloads")
def test_file_page_numbers_lines_and_shows_where_it_came_from() -> None:
    client, ws = member_client()
    conv = conversation_upsert(
        workspace=ws, client_id="run-1", message_format="openai_chat", title="Run one"
    )
    stored_file(
        ws,
        "/tmp/trunc/call_3",
        "first\r\nsecond\n\nfourth",
        conversation=conv,
        tool_name="grep",
        call_id="call_3",
        read_count=2,
    )
    event_row(ws, offload_path="/tmp/trunc/call_3")  # of no conversation: not this file's
    event = event_row(ws, conversation=conv, offload_path="/tmp/trunc/call_3", tokens_saved=1_234)
    page = client.get("/files/view/", {"path": "/tmp/trunc/call_3"}).content.decode()
    assert re.findall(
        r'<tr id="L(\d+)"><td class="n"><a href="#L\d+">\d+</a></td><td>(.*?)</td>', page
    ) == [("1", "first"), ("2", "second"), ("3", ""), ("4", "fourth")]
    assert "Lines 1–4 of 4 · page 1 of 1" in page
    assert '<dd><a href="/conversations/run-1/">Run one</a></dd>' in page
    assert "<dd><code>call_3</code></dd>" in page
    assert f'<a href="/events/?before={event.pk + 1}">event #{event.pk}</a>' in page
    assert "(truncation, 1,234 tok saved)" in page
    assert "<dd>2 times</dd>" in page
    assert (
        '<a href="/files/raw/?path=/tmp/trunc/call_3&amp;conversation=run-1" download>'
        "Download raw</a>"
    ) in page


@pytest.mark.usefixtures("offloads")
def test_file_page_pages_a_large_file() -> None:
    client, ws = member_client()
    _big(ws)
    page = client.get("/files/view/", {"path": "/tmp/trunc/big"}).content.decode()
    assert _line_numbers(page) == list(range(1, 501))
    assert "Lines 1–500 of 50,000 · page 1 of 100" in page
    assert (
        'href="/files/view/?page=2&amp;path=%2Ftmp%2Ftrunc%2Fbig" '
        'hx-get="/files/view/?page=2&amp;path=%2Ftmp%2Ftrunc%2Fbig" hx-target="#file-lines"'
    ) in page
    last = client.get("/files/view/", {"path": "/tmp/trunc/big", "page": 100}).content.decode()
    assert _line_numbers(last) == list(range(49_501, 50_001))
    assert "<td>line 50000: needle</td>" in last
    # Past the end: the last page.
    assert _line_numbers(
        client.get("/files/view/", {"path": "/tmp/trunc/big", "page": 999}).content.decode()
    ) == list(range(49_501, 50_001))
    part = client.get(
        "/files/view/", {"path": "/tmp/trunc/big", "page": 37}, headers=HX
    ).content.decode()
    assert "<html" not in part
    assert part.lstrip().startswith('<section id="file-lines">')
    assert _line_numbers(part) == list(range(18_001, 18_501))


@pytest.mark.usefixtures("offloads")
def test_file_page_search_lists_and_highlights_matches() -> None:
    client, ws = member_client()
    _big(ws)
    page = client.get("/files/view/", {"path": "/tmp/trunc/big", "q": "NEEDLE"}).content.decode()
    assert "<strong>5</strong> lines match “NEEDLE”" in page
    hits = re.findall(
        r'<a href="/files/view/\?page=(\d+)&amp;path=[^&]+&amp;q=NEEDLE#L(\d+)">', page
    )
    assert hits == [
        ("20", "10000"),
        ("40", "20000"),
        ("60", "30000"),
        ("80", "40000"),
        ("100", "50000"),
    ]
    # With no page asked for, the page of the first match is shown, that line marked.
    assert _line_numbers(page) == list(range(9_501, 10_001))
    assert '<tr id="L10000" class="hit">' in page
    assert page.count('class="hit"') == 1
    # The first match on the page is the search's landing place, its text highlighted.
    assert (
        '<a href="#L10000" id="hit-1">10000</a></td><td>line 10000: <mark>needle</mark></td>'
        in (page)
    )
    assert 'action="/files/view/#hit-1"' in page
    none = client.get("/files/view/", {"path": "/tmp/trunc/big", "q": "absent"}).content.decode()
    assert "No line matches “absent”." in none
    assert _line_numbers(none) == list(range(1, 501))


def test_file_page_escapes_the_content() -> None:
    client, ws = member_client()
    stored_file(ws, "/f/x", "<script>alert(1)</script>\nfine")
    page = client.get("/files/view/", {"path": "/f/x", "q": "<script>"}).content.decode()
    assert "<script>alert" not in page
    assert "<td><mark>&lt;script&gt;</mark>alert(1)&lt;/script&gt;</td>" in page
    assert "match “&lt;script&gt;”" in page


@pytest.mark.usefixtures("offloads")
def test_file_of_another_workspace_is_404() -> None:
    client, _ = member_client()
    _, other = member_client("bob", "Other")
    stored_file(other, "/f/secret", "secret")
    for url in ("/files/view/", "/files/raw/"):
        assert client.get(url, {"path": "/f/secret"}).status_code == HTTPStatus.NOT_FOUND
        assert client.get(url, {"path": "/f/nope"}).status_code == HTTPStatus.NOT_FOUND
        assert client.get(url).status_code == HTTPStatus.NOT_FOUND


@pytest.mark.usefixtures("offloads")
def test_file_raw_is_the_exact_content_as_an_attachment() -> None:
    client, ws = member_client()
    content = "ünïcode ✓\r\nline two\n\n"
    stored_file(ws, "/tmp/trunc/call_9", content)
    response = client.get("/files/raw/", {"path": "/tmp/trunc/call_9"})
    assert response.status_code == HTTPStatus.OK
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="call_9.txt"'
    assert b"".join(response.streaming_content) == content.encode("utf-8")


def test_file_pages_of_lost_content_are_404(offloads: OffloadStore) -> None:
    """The row is there, its stored content is not (removed behind the app's back)."""
    client, ws = member_client()
    row = stored_file(ws, "/f/lost", "gone")
    offloads.remove(row.storage_name)
    for url in ("/files/view/", "/files/raw/"):
        assert client.get(url, {"path": "/f/lost"}).status_code == HTTPStatus.NOT_FOUND


@pytest.mark.parametrize("damage", [b"", b"gon", b"GONE"])
def test_file_pages_of_damaged_content_are_503_and_show_none_of_it(
    offloads: OffloadStore, damage: bytes
) -> None:
    """Empty, truncated, or of the right size with other bytes: the page says the content
    is damaged and shows none of it, and the download serves none of it."""
    client, ws = member_client()
    row = stored_file(ws, "/f/damaged", "gone")
    offloads.put(row.storage_name, damage)
    page = client.get("/files/view/", {"path": "/f/damaged"})
    assert page.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    html = page.content.decode()
    assert "The stored content of this file is damaged" in html
    assert row.sha256 in html
    assert 'id="file-lines"' not in html
    raw = client.get("/files/raw/", {"path": "/f/damaged"})
    assert raw.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert raw["Content-Type"] == "text/plain; charset=utf-8"
    assert raw.content.startswith(b"The stored content of this file is damaged")


def test_file_page_query_count_is_constant(django_assert_num_queries: Any) -> None:
    client, ws = member_client()
    client.get("/")
    stored_file(ws, "/f/small", "a\n" * 10)
    big = _big(ws)
    for _ in range(30):
        event_row(ws, offload_path=big.path)
    # Session, user, workspace twice, the file, the event that wrote it.
    with django_assert_num_queries(6):
        client.get("/files/view/", {"path": "/f/small"})
    with django_assert_num_queries(6):
        client.get("/files/view/", {"path": big.path, "q": "needle"})


def test_highlighted_splits_a_line_at_its_matches() -> None:
    assert highlighted("a_b A_B c", "a_b") == [
        ("a_b", True),
        (" ", False),
        ("A_B", True),
        (" c", False),
    ]
    assert highlighted("none here", "x") == [("none here", False)]
    # A casefold that changes the length would shift the offsets: the line stays whole.
    assert highlighted("Straße ss", "ss") == [("Straße ss", False)]
