"""The overview, conversations and events pages in a real browser: the context-window
chart is drawn, the events filter swaps the table in place, tool output stays text."""

from __future__ import annotations

from typing import Any

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Workspace
from tests.app.dashboard_data import agent_run

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
