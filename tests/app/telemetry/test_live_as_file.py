"""Spans of real instrumentations sent one per request, the last first and some twice,
make exactly the conversations the whole trace makes as a file: with a side call, and
with a plain loop of one trace per call."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import openai
import pytest

from reduction_app.engine import formats
from reduction_app.models import Conversation
from reduction_app.telemetry.services import telemetry_process, telemetry_store
from simulator.importers import load_conversations
from tests.app.support import make_api
from tests.app.telemetry.support import stored_records
from tests.openai_server import OpenAIServer, Reply
from tests.simulator.test_otel_instrumentations import (
    QUESTION,
    ROUNDS,
    Recorder,
    agent_loop,
    instrumented,
    replies,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def _one_by_one(recorder: Recorder, workspace: Any, seed: int) -> None:
    """Each span in its own request, shuffled, every other one sent twice, the workers
    reading after each."""
    spans = list(recorder.spans.get_finished_spans())
    order = spans + spans[::2]
    random.Random(seed).shuffle(order)
    for span in order:
        records = stored_records([span])
        telemetry_store(workspace=workspace, signal="traces", records=records)
        telemetry_process(workspace=workspace)


def _as_file(recorder: Recorder, tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    """The conversations of the whole trace as a file, by the key of their label."""
    return {
        c.name.partition("#")[2]: formats.dump("openai_chat", c.messages)[1]
        for c in load_conversations(recorder.write(tmp_path / "t.jsonl"))
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_a_trace_with_a_side_call(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    title = [
        {"role": "system", "content": "Give the conversation a title."},
        {"role": "user", "content": QUESTION},
    ]
    with (
        OpenAIServer([*replies(ROUNDS), Reply(content="Wetter")]) as server,
        instrumented("openinference", recorder, monkeypatch),
        recorder.tracer.start_as_current_span("invoke_agent"),
    ):
        agent_loop(server.url, ROUNDS)
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        client.chat.completions.create(model="gpt-4o-mini", messages=title)  # type: ignore[arg-type]
    api = make_api("alpha")
    _one_by_one(recorder, api.workspace, seed)
    expected = _as_file(recorder, tmp_path)
    assert len(expected) == 2
    assert _lab(api) == expected


@pytest.mark.parametrize("seed", [1, 2])
def test_a_plain_loop_of_one_trace_per_call(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    with OpenAIServer(replies(ROUNDS)) as server, instrumented("otel-span", recorder, monkeypatch):
        agent_loop(server.url, ROUNDS)
    api = make_api("alpha")
    _one_by_one(recorder, api.workspace, seed)
    expected = _as_file(recorder, tmp_path)
    assert len(expected) == 1
    assert _lab(api) == expected


def _lab(api: Any) -> dict[str, list[dict[str, Any]]]:
    return {
        c.client_id: api.get(f"/conversations/{c.client_id}").json()["messages"]
        for c in Conversation.objects.filter(workspace=api.workspace)
    }
