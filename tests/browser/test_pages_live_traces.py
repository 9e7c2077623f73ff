"""A conversation read from an agent's live traces, in a real browser: its page reloads
by itself when the next call's spans arrive, and shows the provider's figures per call."""

from __future__ import annotations

from typing import Any

from reduction_app.models import Workspace
from reduction_app.telemetry.services import telemetry_process, telemetry_store
from tests.app.telemetry.support import stored_records
from tests.app.telemetry.test_otlp_endpoint import agent_run


def test_the_page_of_a_live_conversation_follows_the_agent(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    spans = agent_run(session=None)
    telemetry_store(workspace=workspace, signal="traces", records=stored_records([spans[0]]))
    telemetry_process(workspace=workspace)
    [conversation] = workspace.conversations.all()
    page.goto(f"{page.base}/conversations/{conversation.client_id}/")
    assert page.locator("#live").is_visible()
    assert page.locator("#timeline tbody tr").count() == 3
    # The next call's spans arrive while the page is open.
    telemetry_store(workspace=workspace, signal="traces", records=stored_records(spans[1:]))
    telemetry_process(workspace=workspace)
    page.locator("#timeline tbody tr").nth(4).wait_for()
    assert page.locator("#timeline tbody tr").count() == 5
    assert (
        page.locator("#timeline tbody tr")
        .nth(4)
        .inner_text()
        .endswith("It is 18°C and sunny in Paris.")
    )
    shoot(page, "live-conversation")
