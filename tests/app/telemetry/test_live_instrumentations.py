"""An agent instrumented by each of the three OpenAI instrumentations, exporting live to
the Lab through the SDK's own OTLP/HTTP exporters: its conversation appears with every
message as sent, every tool result byte for byte, and the provider's usage per call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from io import StringIO
from typing import Any

import openai
import pytest
from django.core.management import call_command
from openinference.instrumentation import using_session
from opentelemetry.exporter.otlp.json.http._log_exporter import (
    OTLPLogExporter as JsonLogExporter,
)
from opentelemetry.exporter.otlp.json.http.trace_exporter import (
    OTLPSpanExporter as JsonSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from reduction_app.client import LabBackend, ReductionClient
from reduction_app.engine import ReductionConfig, ToolContext, new, truncate_output
from tests.app.support import ApiClient, make_api
from tests.openai_server import OpenAIServer
from tests.simulator.test_otel_instrumentations import (
    KINDS,
    QUESTION,
    RESULTS,
    ROUNDS,
    SYSTEM,
    TOOLS,
    _long_run,
    agent_loop,
    instrumented,
    replies,
)

pytestmark = pytest.mark.slow


class LiveRecorder:
    """The SDK's providers exporting to the Lab over OTLP/HTTP, in batches as an agent's
    would, protobuf or JSON."""

    def __init__(self, url: str, key: str, encoding: str) -> None:
        headers = {"Authorization": f"Bearer {key}"}
        span_cls, log_cls = (
            (OTLPSpanExporter, OTLPLogExporter)
            if encoding == "protobuf"
            else (JsonSpanExporter, JsonLogExporter)
        )
        self.tracer_provider = TracerProvider(resource=Resource.create({}))
        self.tracer_provider.add_span_processor(
            BatchSpanProcessor(span_cls(endpoint=f"{url}/api/v1/otel/v1/traces", headers=headers))
        )
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(
            BatchLogRecordProcessor(log_cls(endpoint=f"{url}/api/v1/otel/v1/logs", headers=headers))
        )
        self.tracer = self.tracer_provider.get_tracer("tests")

    def flush(self) -> None:
        assert self.tracer_provider.force_flush()
        assert self.logger_provider.force_flush()

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()


@pytest.fixture
def lab(live_server: Any, transactional_db: None) -> Iterator[tuple[str, ApiClient]]:
    yield live_server.url, make_api("alpha")


@contextmanager
def recorder(url: str, key: str, encoding: str) -> Iterator[LiveRecorder]:
    live = LiveRecorder(url, key, encoding)
    try:
        yield live
    finally:
        live.shutdown()


def _work() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_an_instrumented_agent_appears_live_with_exact_content(
    kind: str, encoding: str, lab: tuple[str, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, api = lab
    with recorder(url, api.raw_key, encoding) as live:
        with (
            OpenAIServer(replies(ROUNDS)) as server,
            instrumented(kind, live, monkeypatch),  # type: ignore[arg-type]
            live.tracer.start_as_current_span("invoke_agent", attributes={"session.id": "run-1"}),
        ):
            sent = agent_loop(server.url, ROUNDS)
        live.flush()
    _work()
    detail = api.get("/conversations/run-1").json()
    assert detail["messages"] == sent
    assert detail["source"] == "otel"
    # The assistant message call K produced sits after its input: 2, 4, 6 and 8.
    usage = detail["provider_usage"]
    indexes = ["2", "4", "6", "8"]
    assert usage["prompt_tokens"] == {i: 100 + k for k, i in enumerate(indexes, start=1)}
    assert usage["completion_tokens"] == {i: k for k, i in enumerate(indexes, start=1)}
    tools = [] if kind.startswith("otel") else TOOLS
    assert detail["tools"] == tools


def test_a_conversation_grows_while_the_agent_runs(
    lab: tuple[str, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exported and read after every call, as a worker beside a running agent would: one
    conversation, two messages longer each time, never a second one."""
    url, api = lab
    counts: list[int] = []
    with (
        recorder(url, api.raw_key, "protobuf") as live,
        OpenAIServer(replies(ROUNDS)) as server,
        instrumented("openinference", live, monkeypatch),  # type: ignore[arg-type]
    ):
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
        ]
        for _ in range(len(ROUNDS) + 1):
            reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
            live.flush()
            _work()
            rows = api.get("/conversations").json()["results"]
            assert len(rows) == 1
            counts.append(rows[0]["message_count"])
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(include={"role", "content", "tool_calls"}))
            for call in message.tool_calls:
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": RESULTS[call.id]}
                )
    assert counts == [3, 5, 7, 9]


def test_a_run_over_the_attribute_limit_is_named_on_the_api(
    lab: tuple[str, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenInference past the SDK's 128 attributes per span: no conversation is made, and
    the traced session says why, naming the setting that fixes it."""
    url, api = lab
    with recorder(url, api.raw_key, "protobuf") as live:
        _long_run(live, monkeypatch)  # type: ignore[arg-type]
        live.flush()
    _work()
    [session] = api.get("/otel/sessions", {"failed": "true"}).json()["results"]
    assert session["session"].startswith("trace:")
    assert session["conversations"] == []
    assert "the OpenTelemetry SDK dropped" in session["error"]
    assert "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT" in session["error"]
    assert api.get("/conversations").json()["results"] == []
    assert api.get("/otel/sessions").json()["results"] == [session]


def test_openinference_sessions_name_the_conversation(
    lab: tuple[str, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``using_session``, as docs/integrations.md shows it, with no span of the agent's
    own: the calls make one conversation named by the session."""
    url, api = lab
    with recorder(url, api.raw_key, "protobuf") as live:
        with (
            OpenAIServer(replies(ROUNDS)) as server,
            instrumented("openinference", live, monkeypatch),  # type: ignore[arg-type]
            using_session("run-9"),
        ):
            sent = agent_loop(server.url, ROUNDS)
        live.flush()
    _work()
    assert api.get("/conversations/run-9").json()["messages"] == sent
    assert len(api.get("/conversations").json()["results"]) == 1


def test_an_agent_with_the_engine_in_process_shows_its_reductions_and_files(
    lab: tuple[str, ApiClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole picture of an agent that runs the engine itself: its conversation from
    its traces, the truncation as an event with the tokens it saved, and the offloaded
    output in the Lab's files under the same conversation, read back exactly."""
    url, api = lab
    lab_client = ReductionClient(url, api_key=api.raw_key)
    middleware = new(
        ReductionConfig(
            backend=LabBackend(lab_client, conversation_id="run-5"), max_length_for_trunc=2_000
        )
    )
    middleware.set_telemetry(config_name="tight", conversation_id="run-5")
    with recorder(url, api.raw_key, "protobuf") as live:
        with (
            OpenAIServer(replies(ROUNDS)) as server,
            instrumented("openinference", live, monkeypatch),  # type: ignore[arg-type]
            using_session("run-5"),
        ):
            client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": QUESTION},
            ]
            while True:
                reply = client.chat.completions.create(
                    model="gpt-4o", messages=messages, tools=TOOLS
                )
                message = reply.choices[0].message
                messages.append(message.model_dump(include={"role", "content", "tool_calls"}))
                if not message.tool_calls:
                    break
                for call in message.tool_calls:
                    with live.tracer.start_as_current_span(f"execute_tool {call.id}"):
                        seen = truncate_output(
                            middleware,
                            RESULTS[call.id],
                            ToolContext(name=call.function.name, call_id=call.id),
                        )
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": seen})
        live.flush()
    _work()
    detail = api.get("/conversations/run-5").json()
    assert detail["messages"] == [
        {k: v for k, v in m.items() if v is not None or k == "content"} for m in messages
    ]
    [truncated] = [
        m
        for m in detail["messages"]
        if m["role"] == "tool" and m["content"] != RESULTS.get(m["tool_call_id"])
    ]
    assert truncated["tool_call_id"] == "call_3"  # the 40 KB result
    [event] = api.get("/events", {"conversation_id": "run-5"}).json()["results"]
    assert (event["phase"], event["tool_name"], event["call_id"]) == (
        "truncation",
        "weather",
        "call_3",
    )
    assert event["tokens_saved"] > 0
    [stored] = api.get("/files", {"conversation_id": "run-5"}).json()["results"]
    assert stored["path"] == event["offload_path"]
    assert lab_client.raw_file(stored["path"]) == RESULTS["call_3"]
