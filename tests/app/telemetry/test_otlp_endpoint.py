"""The OTLP/HTTP endpoint through the SDK's own exporters against a live server: spans
sent over many requests, out of order and twice, make the conversation the whole trace
would, in the key's workspace only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JsonSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as ProtobufSpanExporter,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from benchmarks.otlp import genai_parts
from reduction_app.models import Conversation, TelemetryRecord
from reduction_app.telemetry.services import telemetry_process
from tests.app.support import ApiClient, make_api

pytestmark = pytest.mark.slow

SYSTEM = "You answer weather questions."
USER = "What is the weather in Paris?"
RESULT = "18°C, sunny — “clear skies”"
ANSWER = "It is 18°C and sunny in Paris."
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
}
CONVERSATION = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": USER},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": RESULT},
    {"role": "assistant", "content": ANSWER},
]


def chat_attributes(
    sent: list[dict[str, Any]], answer: dict[str, Any], **extra: Any
) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": sent[0]["content"]}]),
        "gen_ai.input.messages": json.dumps([genai_parts(m) for m in sent[1:]], ensure_ascii=False),
        "gen_ai.output.messages": json.dumps([genai_parts(answer)], ensure_ascii=False),
        "gen_ai.usage.input_tokens": 10 * len(sent),
        "gen_ai.usage.output_tokens": 7,
        **extra,
    }


def agent_run(session: str | None = "run-42") -> list[ReadableSpan]:
    """The spans of one agent run: an enclosing span naming the session, and two chat
    calls under it; in the order they end (the calls first)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.app.telemetry")
    root_attributes = {"session.id": session} if session else {}
    with tracer.start_as_current_span("invoke_agent", attributes=root_attributes):
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attributes(chat_attributes(CONVERSATION[:2], CONVERSATION[2]))
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attributes(chat_attributes(CONVERSATION[:4], CONVERSATION[4]))
    return list(memory.get_finished_spans())


@pytest.fixture
def lab(live_server: Any, transactional_db: None) -> Iterator[tuple[str, ApiClient]]:
    yield live_server.url, make_api("alpha")


def _exporter(kind: str, url: str, key: str) -> Any:
    cls = ProtobufSpanExporter if kind == "protobuf" else JsonSpanExporter
    return cls(endpoint=f"{url}/api/v1/otel/v1/traces", headers={"Authorization": f"Bearer {key}"})


@pytest.mark.parametrize("kind", ["protobuf", "json"])
def test_spans_over_many_requests_make_the_conversation(
    kind: str, lab: tuple[str, ApiClient]
) -> None:
    url, api = lab
    spans = agent_run()
    exporter = _exporter(kind, url, api.raw_key)
    # One request per span, the last call first, and the first call twice (a retry).
    for batch in ([spans[1]], [spans[0]], [spans[2]], [spans[0]]):
        assert exporter.export(batch) == SpanExportResult.SUCCESS
    assert TelemetryRecord.objects.filter(workspace=api.workspace).count() == 3
    telemetry_process(workspace=api.workspace)
    detail = api.get("/conversations/run-42").json()
    assert detail["messages"] == CONVERSATION
    assert detail["source"] == "otel"


def test_a_conversation_grows_call_by_call(lab: tuple[str, ApiClient]) -> None:
    url, api = lab
    spans = agent_run(session=None)
    exporter = _exporter("protobuf", url, api.raw_key)
    exporter.export([spans[0]])
    telemetry_process(workspace=api.workspace)
    [first] = Conversation.objects.filter(workspace=api.workspace)
    assert first.message_count == 3
    exporter.export([spans[1], spans[2]])
    telemetry_process(workspace=api.workspace)
    [grown] = Conversation.objects.filter(workspace=api.workspace)
    assert grown.message_count == 5


def test_another_workspace_sees_nothing(lab: tuple[str, ApiClient]) -> None:
    url, api = lab
    other = make_api("beta")
    assert _exporter("protobuf", url, api.raw_key).export(agent_run()) == SpanExportResult.SUCCESS
    telemetry_process(workspace=api.workspace)
    telemetry_process(workspace=other.workspace)
    assert other.get("/conversations/run-42").status_code == 404
    assert api.get("/conversations/run-42").status_code == 200


def test_a_bad_key_is_refused(lab: tuple[str, ApiClient]) -> None:
    url, _ = lab
    assert _exporter("protobuf", url, "rl_nope").export(agent_run()) == SpanExportResult.FAILURE
    assert not TelemetryRecord.objects.exists()


def test_configured_by_the_sdks_own_environment_variables(
    lab: tuple[str, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OTEL_EXPORTER_OTLP_ENDPOINT`` and ``OTEL_EXPORTER_OTLP_HEADERS`` as the docs give
    them, and the task worker reading what arrived."""
    url, api = lab
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{url}/api/v1/otel")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{api.raw_key}")
    exporter = ProtobufSpanExporter()
    assert exporter.export(agent_run()) == SpanExportResult.SUCCESS
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())
    assert api.get("/conversations/run-42").json()["messages"] == CONVERSATION


def test_reduction_events_on_spans_are_recorded_once(lab: tuple[str, ApiClient]) -> None:
    url, api = lab
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.app.telemetry")
    with tracer.start_as_current_span("invoke_agent", attributes={"session.id": "run-7"}):
        with tracer.start_as_current_span("chat gpt-4o") as span:
            span.set_attributes(chat_attributes(CONVERSATION[:2], CONVERSATION[2]))
        with tracer.start_as_current_span("execute_tool get_weather") as span:
            span.add_event(
                "reduction.truncation",
                {
                    "reduction.phase": "truncation",
                    "reduction.kind": "tool",
                    "reduction.tool_name": "get_weather",
                    "reduction.call_id": "call_1",
                    "reduction.tokens_before": 5000,
                    "reduction.tokens_after": 300,
                    "reduction.tokens_saved": 4700,
                    "reduction.offload_path": "/tmp/trunc/call_1",
                    "reduction.streamed": False,
                },
            )
    exporter = _exporter("protobuf", url, api.raw_key)
    spans = list(memory.get_finished_spans())
    exporter.export(spans)
    telemetry_process(workspace=api.workspace)
    exporter.export(spans)  # sent again: recorded once
    telemetry_process(workspace=api.workspace)
    [event] = api.get("/events", {"conversation_id": "run-7"}).json()["results"]
    assert {k: event[k] for k in ("phase", "kind", "tool_name", "call_id")} == {
        "phase": "truncation",
        "kind": "tool",
        "tool_name": "get_weather",
        "call_id": "call_1",
    }
    assert (event["tokens_saved"], event["offload_path"]) == (4700, "/tmp/trunc/call_1")


def test_a_trace_that_learns_its_session_moves_to_it(lab: tuple[str, ApiClient]) -> None:
    """The calls end before the span naming the session: read first as a conversation of
    their own, they move to the session's once it arrives, leaving nothing behind."""
    url, api = lab
    spans = agent_run()
    exporter = _exporter("protobuf", url, api.raw_key)
    exporter.export(spans[:2])
    telemetry_process(workspace=api.workspace)
    [early] = Conversation.objects.filter(workspace=api.workspace)
    assert early.client_id != "run-42" and early.message_count == 5
    exporter.export(spans[2:])
    telemetry_process(workspace=api.workspace)
    [moved] = Conversation.objects.filter(workspace=api.workspace)
    assert moved.client_id == "run-42" and moved.message_count == 5
    [session] = api.get("/otel/sessions").json()["results"]
    assert (session["session"], session["conversations"]) == ("session:run-42", ["run-42"])


def test_a_session_id_too_long_for_an_id_still_makes_one_conversation(
    lab: tuple[str, ApiClient],
) -> None:
    url, api = lab
    session = "s" * 400
    _exporter("protobuf", url, api.raw_key).export(agent_run(session=session))
    telemetry_process(workspace=api.workspace)
    [conversation] = Conversation.objects.filter(workspace=api.workspace)
    assert conversation.message_count == 5
    assert len(conversation.client_id) <= 200
    [group] = api.get("/otel/sessions").json()["results"]
    assert group["session"].startswith("session-sha256:")
    assert group["conversations"] == [conversation.client_id]
