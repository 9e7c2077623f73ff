"""Every page of ours that shows an imported recording says it is one: the
conversation's page, one of its messages, its events and its files."""

from __future__ import annotations

from typing import Any

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation, Workspace
from tests.app.dashboard_data import event_row, stored_file

NOTE = (
    "recording: openhands OpenHands on ponyc-4588 is a recording of a real agent run, "
    "imported from openhands/ponyc-4588.json: its messages are as the agent exchanged "
    "them, not sent by a client of this engine."
)


def _recording(workspace: Workspace) -> Conversation:
    conversation_upsert(
        workspace=workspace,
        client_id="openhands-ponyc-4588",
        message_format="openai_chat",
        title="OpenHands on ponyc-4588",
        transcript=[{"role": "user", "content": "Fix the bug."}],
    )
    Conversation.objects.filter(client_id="openhands-ponyc-4588").update(
        source="openhands", imported_from="openhands/ponyc-4588.json"
    )
    return Conversation.objects.get(client_id="openhands-ponyc-4588")


def test_pages_of_a_recording_say_it_is_one(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    recording = _recording(workspace)
    stored_file(workspace, "/tmp/clear/call_1", "output\n", conversation=recording)
    event_row(workspace, conversation=recording, offload_path="/tmp/clear/call_1")
    conversation_upsert(
        workspace=workspace, client_id="live", message_format="openai_chat", transcript=[]
    )
    pages = [
        "/conversations/openhands-ponyc-4588/",
        "/conversations/openhands-ponyc-4588/messages/1/",
        "/events/?conversation=openhands-ponyc-4588",
        "/files/?conversation=openhands-ponyc-4588",
        "/files/view/?path=/tmp/clear/call_1&conversation=openhands-ponyc-4588",
    ]
    for url in pages:
        page.goto(f"{page.base}{url}")
        note = page.locator(".recording-note")
        assert note.count() == 1, url
        assert note.inner_text() == NOTE, url
        assert note.locator("a").get_attribute("href") == "/conversations/openhands-ponyc-4588/"
    shoot(page, "recording-file")
    # Unfiltered lists name the recording on its rows; a live conversation has no note.
    page.goto(f"{page.base}/events/")
    assert page.locator("#event-table .recording-note").count() == 0
    assert page.locator("#event-table tbody .badge.recording").all_inner_texts() == ["recording"]
    page.goto(f"{page.base}/files/")
    assert page.locator("#file-table tbody .badge.recording").all_inner_texts() == ["recording"]
    page.goto(f"{page.base}/conversations/live/")
    assert page.locator(".recording-note").count() == 0
