"""A conversation's messages read whole in a real browser: a clipped message opens in
place on the conversation page, a very long one on its own page, with every tool call's
arguments pretty-printed."""

from __future__ import annotations

import json
from typing import Any

from reduction_app.conversations.imports import recordings_import
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.conversations.services import conversation_upsert
from reduction_app.conversations.timeline import INLINE_CHARS, PREVIEW_CHARS
from reduction_app.models import Conversation, Workspace
from tests.conftest import CONVERSATIONS, needs_recordings

COMMAND = "cd /workspace/repo && " + " && ".join(f"grep -rn needle_{i} src/" for i in range(40))
LONG_OUTPUT = "".join(f"line {i}: {'x' * 60}\n" for i in range(INLINE_CHARS // 60 + 10))


def _conversation(client_id: str = "openhands-run") -> None:
    call = {"command": COMMAND, "timeout": 120}
    conversation_upsert(
        workspace=Workspace.objects.get(slug="demo"),
        client_id=client_id,
        message_format="openai_chat",
        title="OpenHands run",
        transcript=[
            {"role": "user", "content": "Find the needles."},
            {
                "role": "assistant",
                "content": "I will search the sources.",
                "tool_calls": [
                    {
                        "id": "toolu_01",
                        "type": "function",
                        "function": {"name": "execute_bash", "arguments": json.dumps(call)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "toolu_01", "content": LONG_OUTPUT},
            {"role": "assistant", "content": "Done."},
        ],
    )


def test_a_clipped_tool_call_opens_in_place(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    _conversation()
    page.goto(f"{page.base}/conversations/openhands-run/")
    call_row = page.locator("#message-2")
    preview = call_row.locator("pre.msg").inner_text()
    assert len(preview) == PREVIEW_CHARS + 1  # and the ellipsis
    assert COMMAND not in preview
    page.evaluate("window.notReloaded = true")
    call_row.get_by_role("link", name="Show all").click()
    page.wait_for_selector("#message-2 .message-part")
    body = call_row.locator(".message-body")
    assert body.locator(".part-head").all_inner_texts() == [
        "text",
        "tool call execute_bash · id toolu_01",
    ]
    arguments = body.locator("pre").nth(1).inner_text()
    assert arguments == json.dumps({"command": COMMAND, "timeout": 120}, indent=2)
    assert call_row.get_by_role("link", name="Show all").count() == 0
    assert page.evaluate("window.notReloaded") is True
    assert page.url == f"{page.base}/conversations/openhands-run/"
    shoot(page, "message-in-place")


def test_a_long_message_opens_on_its_own_page(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    _conversation("team/openhands-run")  # a client id with a slash in it
    page.goto(f"{page.base}/conversations/team/openhands-run/")
    link = page.locator("#message-3 a.show-all")
    assert (
        link.inner_text() == f"Open the whole message ({len(LONG_OUTPUT):,} chars) on its own page"
    )
    assert link.get_attribute("hx-get") is None
    link.click()
    page.wait_for_url(f"{page.base}/conversations/team/openhands-run/messages/3/")
    assert page.locator("h1").inner_text() == "Message 3 of 4"
    assert page.locator("#message-facts").inner_text().startswith("tool · execute_bash · ")
    assert page.locator(".message-part .part-head").inner_text() == (
        "tool result execute_bash · id toolu_01"
    )
    assert page.locator(".message-part pre").inner_text() == LONG_OUTPUT
    shoot(page, "message-page")
    page.click("a[rel=prev]")
    page.wait_for_url("**/messages/2/")
    assert page.locator(".message-part pre").nth(1).inner_text() == json.dumps(
        {"command": COMMAND, "timeout": 120}, indent=2
    )


OPENHANDS = "openhands/fastjson2-2775-gpt-5.jsonl"


@needs_recordings
def test_a_real_openhands_tool_call_opens_in_place(signed_in: Any, shoot: Any) -> None:
    """An OpenHands ``str_replace_editor`` call inserting a method is cut at 400
    characters; "Show all" shows its arguments whole, and the recording says it is one."""
    page = signed_in
    source = CONVERSATIONS / OPENHANDS
    recordings_import(
        workspace=Workspace.objects.get(slug="demo"),
        files=[(source.name, source.read_bytes())],
    )
    conversation = Conversation.objects.get(source="openhands")
    messages = recorded_conversation(conversation, restore=False).messages
    number, call = next(
        (i + 1, m.tool_calls[0])
        for i, m in enumerate(messages)
        if m.tool_calls and len(m.tool_calls[0].arguments) > PREVIEW_CHARS
    )
    page.goto(f"{page.base}/conversations/{conversation.client_id}/")
    assert page.locator(".recording-note .badge").inner_text() == "recording: openhands"
    row = page.locator(f"#message-{number}")
    assert row.locator("pre.msg").inner_text().endswith("…")
    row.get_by_role("link", name="Show all").click()
    page.wait_for_selector(f"#message-{number} .message-part")
    assert row.locator(".part-head").inner_text() == (f"tool call {call.name} · id {call.id}")
    assert row.locator(".message-part pre").inner_text() == json.dumps(
        json.loads(call.arguments), indent=2, ensure_ascii=False
    )
    shoot(page, "message-openhands")
