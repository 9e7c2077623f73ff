"""The pages that replay or sweep conversations say which of them are imported recordings:
Compare, Tune, a simulation's page, a point's page and the Sweep page's picker; a
conversation recorded through the REST API gets no note. The conversation list's "Sweep
these" opens the Sweep page with the conversations it shows ticked."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from reduction_app.conversations.imports import recordings_import
from reduction_app.models import Conversation, Simulation, Workspace
from reduction_app.simulations.corpus import corpus_simulation_create
from reduction_app.simulations.services import simulation_create, simulation_enqueue
from tests.app.simulations.sweep_support import drain_worker
from tests.app.support import grep_rounds, make_api

OTEL = Path(__file__).parents[1] / "simulator" / "data" / "otel" / "genai-current.jsonl"
GRID = {"max_tokens_for_clear": [4000, 8000]}


def _import_recording(workspace: Workspace) -> Conversation:
    """The OpenTelemetry trace of the simulator's tests, through the importer."""
    recordings_import(workspace=workspace, files=[(OTEL.name, OTEL.read_bytes())])
    return Conversation.objects.get(workspace=workspace, imported_from=OTEL.name)


def _record_live(client_id: str, title: str = "") -> Conversation:
    """A conversation a client recorded through ``POST /api/v1/conversations``."""
    api = make_api("Demo")
    body = {
        "conversation_id": client_id,
        "title": title,
        "messages": grep_rounds(2, lambda n: f"match {n} " * 20),
    }
    assert api.post("/conversations", body).status_code == HTTPStatus.CREATED
    return Conversation.objects.get(workspace=api.workspace, client_id=client_id)


def _finished(simulation: Simulation) -> Simulation:
    simulation_enqueue(simulation=simulation)
    drain_worker()
    simulation.refresh_from_db()
    assert simulation.status == "done", simulation.error
    return simulation


def _note(conversation: Conversation) -> str:
    return (
        f"recording: {conversation.source} {conversation} is a recording of a real agent run, "
        f"imported from {conversation.imported_from}: its messages are as the agent exchanged "
        "them, not sent by a client of this engine."
    )


@pytest.fixture
def recording(demo_user: Any) -> Conversation:
    return _import_recording(Workspace.objects.get(slug="demo"))


@pytest.fixture
def live(demo_user: Any) -> Conversation:
    return _record_live("live-run", "Live run")


def _single_note(page: Any, url: str, expected: str) -> None:
    page.goto(url)
    note = page.locator(".recording-note")
    assert note.count() == 1, url
    assert note.is_visible(), url
    assert note.inner_text() == expected, url


def test_pages_over_a_recording_say_it_is_one(
    signed_in: Any, recording: Conversation, live: Conversation, shoot: Any
) -> None:
    page = signed_in
    workspace = recording.workspace
    replay = _finished(
        simulation_create(
            workspace=workspace, conversation=recording, configs=[{"name": "d", "config": {}}]
        )
    )
    sweep = _finished(
        simulation_create(workspace=workspace, conversation=recording, configs=[], grid=GRID)
    )
    corpus = _finished(
        corpus_simulation_create(
            workspace=workspace, conversations=[recording], kind="sweep", grid=GRID
        )
    )
    recommend = _finished(
        corpus_simulation_create(
            workspace=workspace, conversations=[recording], kind="recommend", grid=GRID
        )
    )
    note = _note(recording)
    base = page.base
    urls = [
        f"{base}/compare/?conversation={recording.pk}&config=none",
        f"{base}/tune/?conversation={recording.pk}&start=defaults",
        f"{base}/simulations/{replay.pk}/",
        f"{base}/simulations/{sweep.pk}/",
        f"{base}/simulations/{sweep.pk}/points/1/",
        f"{base}/simulations/{corpus.pk}/",
        f"{base}/simulations/{corpus.pk}/points/2/",
        # Nothing saves on this short trace (its ceiling is 0%), so the recommendation
        # has no config and no front: its page alone.
        f"{base}/simulations/{recommend.pk}/",
    ]
    assert recommend.results is not None and recommend.results["front"] == []
    for url in urls:
        _single_note(page, url, note)
        link = page.locator(".recording-note a")
        assert link.get_attribute("href") == f"/conversations/{recording.client_id}/"
    shoot(page, "recording-note-point")
    # The Sweep page's picker marks the recording's row, not the live one's.
    page.goto(f"{base}/sweep/")
    assert page.locator(f"tr:has(#pick-{recording.pk}) .badge.recording").inner_text() == (
        recording.source
    )
    assert page.locator(f"tr:has(#pick-{live.pk}) .badge.recording").count() == 0
    # A conversation recorded through the REST API gets no note anywhere.
    live_sweep = _finished(
        simulation_create(workspace=workspace, conversation=live, configs=[], grid=GRID)
    )
    for url in [
        f"{base}/compare/?conversation={live.pk}&config=none",
        f"{base}/tune/?conversation={live.pk}&start=defaults",
        f"{base}/simulations/{live_sweep.pk}/",
        f"{base}/simulations/{live_sweep.pk}/points/1/",
    ]:
        page.goto(url)
        page.wait_for_selector("h1")
        assert page.locator(".recording-note").count() == 0, url


def test_pages_over_several_conversations_name_the_recordings(
    signed_in: Any, recording: Conversation, live: Conversation, shoot: Any
) -> None:
    page = signed_in
    other = _record_live("other-run")
    sweep = _finished(
        corpus_simulation_create(
            workspace=recording.workspace,
            conversations=[live, recording, other],
            kind="sweep",
            grid=GRID,
        )
    )
    expected = (
        "recordings Recordings of real agent runs, imported, among these 3 conversations: "
        f"{recording} ({recording.source}). Their messages are as the agents exchanged them, "
        "not sent by a client of this engine."
    )
    for url in [f"/simulations/{sweep.pk}/", f"/simulations/{sweep.pk}/points/1/"]:
        _single_note(page, f"{page.base}{url}", expected)
        links = page.locator(".recording-note a")
        assert [links.nth(i).get_attribute("href") for i in range(links.count())] == [
            f"/conversations/{recording.client_id}/"
        ]
    page.goto(f"{page.base}/simulations/{sweep.pk}/")
    page.click("details.selection summary")
    badges = page.locator("details.selection li .badge.recording")
    assert badges.all_inner_texts() == [f"recording: {recording.source}"]
    shoot(page, "recording-note-several")
    # Only live conversations: no note.
    live_only = _finished(
        corpus_simulation_create(
            workspace=recording.workspace, conversations=[live, other], kind="sweep", grid=GRID
        )
    )
    page.goto(f"{page.base}/simulations/{live_only.pk}/")
    page.wait_for_selector("h1")
    assert page.locator(".recording-note").count() == 0


def test_sweep_these_ticks_the_conversations_the_list_shows(
    signed_in: Any, recording: Conversation, shoot: Any
) -> None:
    page = signed_in
    airline = [_record_live("airline-1"), _record_live("airline-2")]
    _record_live("retail-1")
    page.goto(f"{page.base}/conversations/")
    page.locator("#id_q").press_sequentially("airline")
    page.wait_for_selector("#conversation-table:has-text('2 conversations match.')")
    page.select_option("#id_format", "openai_chat")
    page.wait_for_url("**format=openai_chat**")
    page.wait_for_selector("#conversation-table:has-text('2 conversations match.')")
    page.click("#sweep-these")
    page.wait_for_url(f"{page.base}/sweep/?**")
    assert page.input_value("#sweep-filter input[name=q]") == "airline"
    assert page.input_value("#sweep-filter select[name=format]") == "openai_chat"
    ticked = page.locator("#sweep-conversations input[name=conversation]:checked")
    values = [ticked.nth(i).get_attribute("value") for i in range(ticked.count())]
    assert values == [str(c.pk) for c in airline]
    assert page.locator("#sweep-conversations input[name=conversation]").count() == 2
    shoot(page, "sweep-these")
    # Unfiltered, it ticks every conversation.
    page.goto(f"{page.base}/conversations/")
    page.click("#sweep-these")
    page.wait_for_url(f"{page.base}/sweep/?**")
    ticked = page.locator("#sweep-conversations input[name=conversation]:checked")
    assert ticked.count() == Conversation.objects.filter(workspace=recording.workspace).count()
    assert ticked.count() == 4
