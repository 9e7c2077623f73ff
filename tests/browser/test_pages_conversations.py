"""The overview, conversations and events pages in a real browser: the context-window
chart is drawn, the events filter swaps the table in place, tool output stays text."""

from __future__ import annotations

from typing import Any

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Workspace
from tests.app.dashboard_data import agent_run, event_row

OUTPUTS = [("grep", "x" * 500), ("read_file", "line\n" * 100), ("ls", "a b c")] * 2


def _demo() -> Workspace:
    return Workspace.objects.get(slug="demo")


def test_open_a_conversation_and_see_its_chart(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    agent_run(_demo(), "run-1", OUTPUTS, title="Bug hunt")
    page.goto(f"{page.base}/")
    page.wait_for_selector("canvas[data-rendered=true]")
    assert page.locator("#saved-all").inner_text() == "381 tok"
    shoot(page, "overview-data")

    page.click("nav >> text=Conversations")
    page.wait_for_url(f"{page.base}/conversations/")
    shoot(page, "conversations")
    page.click("text=Bug hunt")
    page.wait_for_url(f"{page.base}/conversations/run-1/")
    page.wait_for_selector("canvas[data-rendered=true]")
    points = page.evaluate(
        "document.querySelector('canvas[data-chart=context-chart]').chart.data.datasets[0].data"
    )
    assert len(points) == 7  # one per model call: six tool rounds and the answer
    assert all(isinstance(p, int) and p > 0 for p in points)
    assert page.locator("#timeline tbody tr").count() == 15
    assert page.locator("#timeline .badge.clear").count() >= 1
    shoot(page, "conversation")


def test_filter_events_updates_the_table_in_place(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    agent_run(_demo(), "run-1", OUTPUTS)
    page.goto(f"{page.base}/events/")
    everything = page.locator("#event-table tbody tr").count()
    page.evaluate("window.notReloaded = true")
    page.select_option("#id_phase", "truncation")
    page.wait_for_url(f"{page.base}/events/?**phase=truncation**")
    page.wait_for_function(
        "n => document.querySelectorAll('#event-table tbody tr').length < n", arg=everything
    )
    rows = page.locator("#event-table tbody tr")
    assert rows.count() == 4  # the four outputs over 200 characters
    assert page.evaluate("window.notReloaded") is True
    assert all("truncation" in rows.nth(i).inner_text() for i in range(rows.count()))
    shoot(page, "events")


def test_tool_output_with_a_script_is_shown_as_text(signed_in: Any) -> None:
    page = signed_in
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    evil = "<script>alert('xss')</script><img src=x onerror=alert('img')>"
    conversation_upsert(
        workspace=_demo(),
        client_id="evil",
        message_format="openai_chat",
        title=evil,
        transcript=[
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "sh", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": evil},
            {"role": "assistant", "content": "ok"},
        ],
    )
    page.goto(f"{page.base}/conversations/evil/")
    page.wait_for_selector("canvas[data-rendered=true]")
    assert page.locator("h1").inner_text() == evil
    assert evil in page.locator("#timeline").inner_text()
    assert page.locator("#timeline img").count() == 0
    page.goto(f"{page.base}/conversations/")
    assert evil in page.locator("#conversation-table").inner_text()
    assert dialogs == []


def _headers(page: Any, table: str) -> list[str]:
    return [h.strip() for h in page.locator(f"{table} thead th").all_inner_texts()]


def test_a_conversations_events_leave_out_the_conversation_column(signed_in: Any) -> None:
    page = signed_in
    agent_run(_demo(), "run-1", OUTPUTS, title="Bug hunt")
    page.goto(f"{page.base}/conversations/run-1/")
    headers = _headers(page, "#conversation-events")
    assert headers[:3] == ["#", "when (UTC)", "phase"]
    assert "conversation" not in headers
    assert page.locator("#conversation-events tbody tr").first.locator("td").count() == 9
    page.goto(f"{page.base}/events/")
    assert _headers(page, "#event-table")[:3] == ["#", "when (UTC)", "conversation"]


LONG_CALL_ID = "call_" + "reduction-lab_demo-orm-long-session_" * 3 + "00065"
LONG_PATH = f"/tmp/trunc/{LONG_CALL_ID}"


def _one_line(page: Any, selector: str) -> None:
    """The element is drawn on one line: one box, no taller than its line-height."""
    lines, height, line_height = page.evaluate(
        """s => { const e = document.querySelector(s);
                  return [e.getClientRects().length, e.getBoundingClientRect().height,
                          parseFloat(getComputedStyle(e).lineHeight)] }""",
        selector,
    )
    assert lines == 1, selector
    assert height <= line_height + 1, selector


def test_event_ids_and_paths_stay_on_one_line(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    event_row(_demo(), call_id=LONG_CALL_ID, offload_path=LONG_PATH, tokens_saved=5)
    page.goto(f"{page.base}/events/")
    cells = page.locator("#event-table tbody td.token")
    _one_line(page, "#event-table tbody td.token code")
    _one_line(page, "#event-table tbody td.token a code")
    assert [cells.nth(i).get_attribute("title") for i in range(2)] == [LONG_CALL_ID, LONG_PATH]
    shoot(page, "events-long-ids")


def test_an_event_that_added_tokens_says_why(signed_in: Any) -> None:
    page = signed_in
    ws = _demo()
    # As in the demo: a 4,051-character output whose notice (4,190 characters) is longer.
    event_row(
        ws,
        tool_name="read_file",
        call_id="call_1",
        offload_path="/tmp/trunc/call_1",
        tokens_before=1_012,
        tokens_after=1_047,
        tokens_saved=-35,
        chars_before=4_051,
        chars_after=4_190,
    )
    event_row(
        ws,
        phase="clear",
        tool_name="read_file",
        call_id="call_2",
        offload_path="/tmp/clear/call_2",
        tokens_before=1,
        tokens_after=30,
        tokens_saved=-29,
        chars_after=115,
    )
    event_row(ws, call_id="call_3", tokens_before=2_000, tokens_after=1_000, tokens_saved=1_000)
    page.goto(f"{page.base}/events/")
    notes = page.locator("#event-table tbody tr .added-tokens")
    assert notes.all_inner_texts() == [
        "Added tokens: the placeholder is longer than the result it replaced, which was empty.",
        "Added tokens: the truncation notice (previews, path and all) is longer than the output "
        "it replaced. trunc_only_when_shorter keeps such outputs whole.",
    ]
