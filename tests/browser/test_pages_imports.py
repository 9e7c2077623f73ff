"""The Import page in a real browser: a real recording is uploaded, its conversation
carries the recording badge in the list, and its page charts no reduction against the
engine's defaults."""

from __future__ import annotations

from typing import Any

from tests.app.conversations.recordings import SWE_AGENT
from tests.conftest import CONVERSATIONS, needs_recordings


@needs_recordings
def test_import_a_real_recording_and_open_its_conversation(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    page.click("nav >> text=Import")
    page.wait_for_url(f"{page.base}/imports/")
    page.set_input_files("#id_file", str(CONVERSATIONS / SWE_AGENT))
    page.click("button:has-text('Import')")
    page.wait_for_selector("#import-result-title")
    assert page.locator("#import-result-title").inner_text() == "Imported"
    assert page.locator(".import-files .badge.recording").inner_text() == "swe_agent"
    shoot(page, "imports")

    page.click("nav >> text=Conversations")
    page.wait_for_url(f"{page.base}/conversations/")
    row = page.locator("#conversation-table tbody tr", has_text="gpt-4o-test-repo-1c2844")
    assert row.locator(".badge.recording").inner_text() == "recording: swe_agent"
    row.locator("a", has_text="gpt-4o-test-repo-1c2844 · SWE-agent · gpt-4o").click()
    page.wait_for_url(f"{page.base}/conversations/swe-agent--gpt-4o-test-repo-1c2844--gpt-4o/")
    assert page.locator("h1 .badge.recording").inner_text() == "recording: swe_agent"
    page.wait_for_selector("canvas[data-rendered=true]")
    labels = page.evaluate(
        "document.querySelector('canvas[data-chart=context-chart]')"
        ".chart.data.datasets.map(d => d.label)"
    )
    assert labels[:2] == ["no reduction", "engine defaults"]
    # 11 messages: the system prompt, the task, then 5 model calls and 4 results.
    points = page.evaluate(
        "document.querySelector('canvas[data-chart=context-chart]').chart.data.datasets[0].data"
    )
    assert len(points) == 5
    # Its context stays under 2,000 tokens: the defaults change nothing, and the page says so.
    assert page.locator("p.unchanged").count() == 1
    assert page.locator("#timeline tbody tr").count() == 11
    shoot(page, "imported-conversation")
