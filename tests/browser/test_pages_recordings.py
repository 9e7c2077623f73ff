"""Every page of ours that shows an imported recording says it is one: the
conversation's page, one of its messages, its events and its files; and what a
recording left out of what the model was sent."""

from __future__ import annotations

from typing import Any

from reduction_app.conversations.services import conversation_upsert
from reduction_app.conversations.timeline import ENGINE_MEASURE
from reduction_app.models import Conversation, Workspace
from simulator.importers import load_conversations
from simulator.prefix import omitted_tokens
from tests.app.conversations.recordings import CLAUDE_CODE
from tests.app.dashboard_data import event_row, stored_file
from tests.conftest import CONVERSATIONS, skip_without_recordings

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


def test_a_claude_code_log_says_what_it_left_out(signed_in: Any, shoot: Any) -> None:
    """Imported on the Import page, a Claude Code log's result and its own page say what
    the log leaves out of what the model was sent, and about how much."""
    skip_without_recordings()
    page = signed_in
    path = CONVERSATIONS / CLAUDE_CODE
    [recorded] = load_conversations(path)
    size = omitted_tokens(recorded, ENGINE_MEASURE)
    assert size is not None
    parts = "the system prompt, the tool schemas and the CLAUDE.md files"
    page.goto(f"{page.base}/imports/")
    page.set_input_files("#id_file", str(path))
    page.get_by_role("button", name="Import").click()
    made = page.locator(".import-files li")
    assert (
        made.locator("a").inner_text() == "claude-code--session-1af7fc5e--claude-sonnet-4-20250514"
    )
    assert made.locator(".omits").inner_text() == (
        f"Leaves out {parts}: about {size:,} tok a request, by the provider's counts."
    )
    made.locator("a").click()
    page.wait_for_url("**/conversations/claude-code--session-1af7fc5e--claude-sonnet-4-20250514/")
    assert page.locator("h1").inner_text() == (
        "session 1af7fc5e: /init · Claude Code · claude-sonnet-4-20250514 recording: claude_code"
    )
    note = page.get_by_role("note").filter(has_text="leaves out part of what the model was sent")
    assert note.inner_text() == (
        f"This Claude Code log leaves out part of what the model was sent: {parts}. By the "
        "provider's token counts of its first calls, less the engine's own count of what the "
        f"recording holds, that is about {size:,} tok a request. Token counts here are of "
        "what the recording holds, except where they say they add what it left out."
    )
    assert note.is_visible()
    shoot(page, "recording-omits")
