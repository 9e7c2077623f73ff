"""A conversation read from live traces watches for more on its page: the page polls, and
reloads once the conversation grew."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reduction_app.models import Conversation
from reduction_app.telemetry.services import telemetry_process, telemetry_store
from tests.app.pages_support import elements, member_client, parsed
from tests.app.telemetry.support import stored_records
from tests.app.telemetry.test_otlp_endpoint import agent_run

HX = {"HX-Request": "true", "HX-Target": "live"}


@pytest.mark.django_db
def test_the_page_of_a_live_conversation_reloads_when_it_grows() -> None:
    client, workspace = member_client()
    spans = agent_run(session=None)
    telemetry_store(workspace=workspace, signal="traces", records=stored_records([spans[0]]))
    telemetry_process(workspace=workspace)
    [conversation] = Conversation.objects.filter(workspace=workspace)
    assert conversation.message_count == 3
    page = parsed(client.get(f"/conversations/{conversation.client_id}/"))
    [live] = elements(page, "p", id="live")
    attributes = dict(live.attributes)
    poll = attributes["hx-get"]
    assert attributes["hx-trigger"] == "every 3s"
    # Nothing new: nothing to swap.
    assert client.get(poll, headers=HX).status_code == 204
    telemetry_store(workspace=workspace, signal="traces", records=stored_records(spans[1:]))
    telemetry_process(workspace=workspace)
    response = client.get(poll, headers=HX)
    assert response.status_code == 200
    assert response["HX-Refresh"] == "true"
    conversation.refresh_from_db()
    assert conversation.message_count == 5


@pytest.mark.django_db
def test_no_watch_on_a_quiet_or_recorded_conversation() -> None:
    client, workspace = member_client()
    telemetry_store(workspace=workspace, signal="traces", records=stored_records(agent_run()))
    telemetry_process(workspace=workspace)
    Conversation.objects.filter(client_id="run-42").update(
        updated_at=timezone.now() - timedelta(hours=1)
    )
    assert elements(parsed(client.get("/conversations/run-42/")), "p", id="live") == []
    Conversation.objects.create(workspace=workspace, client_id="sent", message_format="openai_chat")
    assert elements(parsed(client.get("/conversations/sent/")), "p", id="live") == []
