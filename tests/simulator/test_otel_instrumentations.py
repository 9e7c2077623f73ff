"""OpenTelemetry traces recorded by the real OpenAI instrumentations around the real
``openai`` client, against the fake server of tests/openai_server.py, read back."""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai
import pytest
import wrapt
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reduction_app.engine import formats
from simulator.importers import ImportError_, RecordedConversation, load_conversations
from tests.openai_server import OpenAIServer, Reply, ToolCall

SYSTEM = "You answer questions about the weather."
QUESTION = "Wie ist das Wetter in Zürich und München?"
ANSWER = "In Zürich 18 °C und Sonne, in München Regen."
LARGE = "\n".join(f"{h:02d}:00 Zürich 18°C ☀ wind {h} km/h" for h in range(24)) * 40
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
# Arguments as OpenAI sends them: compact JSON with non-ASCII kept.
ROUNDS = [
    [ToolCall("call_1", "weather", '{"city":"Zürich"}')],
    [ToolCall("call_2", "weather", '{"city":"München"}')],
    [ToolCall("call_3", "weather", '{"city":"Zürich","hours":24}')],
]
RESULTS = {"call_1": "18 °C, sonnig ☀", "call_2": '{"rain": true, "°C": 12}', "call_3": LARGE}


class Recorder:
    """A tracer and a logger provider of the real SDK keeping what they export."""

    def __init__(self, *, limits: SpanLimits | None = None, resource: Resource | None = None):
        self.spans = InMemorySpanExporter()
        self.logs = InMemoryLogRecordExporter()
        self.tracer_provider = TracerProvider(
            span_limits=limits, resource=resource or Resource.create({})
        )
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.logger_provider = LoggerProvider()
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.logs))
        self.tracer = self.tracer_provider.get_tracer("tests")

    def write(self, path: Path) -> Path:
        """The spans and log records as the Collector's file exporter writes them: a line
        of traces and, when there are any, a line of logs (ids in hex)."""
        lines = [_hex_ids(MessageToDict(encode_spans(self.spans.get_finished_spans())))]
        logs = self.logs.get_finished_logs()
        if logs:
            lines.append(_hex_ids(MessageToDict(encode_logs(logs))))
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        return path


def _hex_ids(data: Any) -> Any:
    if isinstance(data, list):
        return [_hex_ids(v) for v in data]
    if not isinstance(data, dict):
        return data
    return {
        k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else _hex_ids(v)
        for k, v in data.items()
    }


@contextmanager
def instrumented(kind: str, recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The openai module patched by one real instrumentation, unpatched on leaving."""
    instrumentor: Any
    if kind.startswith("otel"):
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        mode = {"otel-span": "SPAN_ONLY", "otel-event": "EVENT_ONLY"}[kind]
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", mode)
        instrumentor = OpenAIInstrumentor()
    elif kind == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as Arize

        instrumentor = Arize()
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as Traceloop

        instrumentor = Traceloop()
    instrumentor.instrument(
        tracer_provider=recorder.tracer_provider, logger_provider=recorder.logger_provider
    )
    try:
        yield
    finally:
        instrumentor.uninstrument()
        _unwrap_openai()


def _unwrap_openai() -> None:
    """Every wrapper left on openai's resource classes taken off: Traceloop's uninstrument
    names its methods by a dotted path its unwrap helper does not resolve."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("openai.resources") or module is None:
            continue
        for cls in [v for v in vars(module).values() if isinstance(v, type)]:
            for attr, value in list(vars(cls).items()):
                while isinstance(value, wrapt.FunctionWrapper):
                    value = value.__wrapped__
                    setattr(cls, attr, value)


def agent_loop(url: str, rounds: Sequence[Sequence[ToolCall]]) -> list[dict[str, Any]]:
    """A plain tool-calling loop: each round's calls answered from RESULTS; returns the
    messages it sent last, with the final answer."""
    client = openai.OpenAI(base_url=url, api_key="x", max_retries=0)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    for _ in range(len(rounds) + 1):
        reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        calls = message.tool_calls or []
        sent: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            sent["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
                if c.type == "function"
            ]
        messages.append(sent)
        if not calls:
            return messages
        for c in calls:
            messages.append({"role": "tool", "tool_call_id": c.id, "content": RESULTS[c.id]})
    raise AssertionError("the loop did not end")


def replies(rounds: Sequence[Sequence[ToolCall]]) -> list[Reply]:
    """One reply per round, then the answer; call K uses 100 + K prompt tokens, K of
    them cached, and K completion tokens."""
    out = [Reply(tool_calls=calls) for calls in rounds] + [Reply(content=ANSWER)]
    return [
        Reply(
            content=r.content,
            tool_calls=r.tool_calls,
            prompt_tokens=100 + k,
            cached_tokens=k,
            completion_tokens=k,
        )
        for k, r in enumerate(out, start=1)
    ]


def transcript(conv: RecordedConversation) -> list[dict[str, Any]]:
    _, messages = formats.dump("openai_chat", conv.messages)
    return messages


def _create() -> Any:
    return vars(openai.resources.chat.completions.Completions)["create"]


ORIGINAL_CREATE = _create()
KINDS = ["otel-span", "otel-event", "openinference", "traceloop"]


@pytest.mark.parametrize("kind", KINDS)
def test_instrumented_loop_imports_exactly_what_was_sent(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In an agent span: the conversation is every message sent, then the answer; every
    tool result byte for byte, arguments as the server sent them, usage per call."""
    recorder = Recorder()
    with (
        OpenAIServer(replies(ROUNDS)) as server,
        instrumented(kind, recorder, monkeypatch),
        recorder.tracer.start_as_current_span("invoke_agent") as agent,
    ):
        sent = agent_loop(server.url, ROUNDS)
    assert _create() is ORIGINAL_CREATE
    [conv] = load_conversations(recorder.write(tmp_path / "t.jsonl"))
    assert conv.name == f"t.jsonl#{agent.get_span_context().trace_id:032x}"
    assert sent[:-1] == server.requests[-1]["messages"]
    assert transcript(conv) == sent
    # The assistant message call K produced sits after its input: 2, 4, 6 and 8.
    indexes = [2, 4, 6, 8]
    assert conv.usage is not None
    assert conv.usage.prompt_tokens == {i: 100 + k for k, i in enumerate(indexes, start=1)}
    assert conv.usage.completion_tokens == {i: k for k, i in enumerate(indexes, start=1)}
    # OpenTelemetry's own instrumentation does not record cached tokens nor tools.
    cached = {} if kind.startswith("otel") else {i: k for k, i in enumerate(indexes, start=1)}
    assert conv.usage.cached_prompt_tokens == cached
    tools = [] if kind.startswith("otel") else TOOLS
    assert formats.dump_tools("openai_chat", conv.tools) == tools


def test_instrumented_loop_without_content_names_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=recorder.tracer_provider)
    try:
        with OpenAIServer(replies([])) as server:
            agent_loop(server.url, [])
    finally:
        instrumentor.uninstrument()
    [span] = recorder.spans.get_finished_spans()
    with pytest.raises(ImportError_) as error:
        load_conversations(recorder.write(tmp_path / "t.jsonl"))
    assert str(error.value).startswith(
        f"t.jsonl: span {span.context.span_id:016x}: a chat span without messages (were "
        "message contents recorded? OpenTelemetry's OpenAI instrumentation records them "
        "with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY"
    )


def test_log_records_alone_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of the log records only (the spans went elsewhere): one conversation, its
    calls' usage from the records."""
    recorder = Recorder()
    with (
        OpenAIServer(replies(ROUNDS)) as server,
        instrumented("otel-event", recorder, monkeypatch),
        recorder.tracer.start_as_current_span("invoke_agent") as agent,
    ):
        sent = agent_loop(server.url, ROUNDS)
    logs = _hex_ids(MessageToDict(encode_logs(recorder.logs.get_finished_logs())))
    path = tmp_path / "logs.json"
    path.write_text(json.dumps(logs), encoding="utf-8")
    [conv] = load_conversations(path)
    assert conv.name == f"logs.json#{agent.get_span_context().trace_id:032x}"
    assert transcript(conv) == sent
    assert conv.usage is not None
    assert conv.usage.prompt_tokens == {2: 101, 4: 102, 6: 103, 8: 104}


def test_older_message_events_are_read(tmp_path: Path) -> None:
    """The older conventions' event per message (``gen_ai.user.message``, ...,
    ``gen_ai.choice``), emitted through the real SDK inside chat spans."""
    recorder = Recorder()
    logger = recorder.logger_provider.get_logger("tests")
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city":"Zürich"}'},
    }
    calls: list[list[tuple[str, dict[str, Any]]]] = [
        [
            ("gen_ai.system.message", {"content": SYSTEM}),
            ("gen_ai.user.message", {"content": QUESTION}),
            ("gen_ai.choice", {"index": 0, "message": {"role": "assistant", "tool_calls": [call]}}),
        ],
        [
            ("gen_ai.system.message", {"content": SYSTEM}),
            ("gen_ai.user.message", {"content": QUESTION}),
            ("gen_ai.assistant.message", {"tool_calls": [call]}),
            ("gen_ai.tool.message", {"content": RESULTS["call_1"], "id": "call_1"}),
            (
                "gen_ai.choice",
                {"index": 0, "message": {"role": "assistant", "content": ANSWER}},
            ),
        ],
    ]
    with recorder.tracer.start_as_current_span("agent") as agent:
        for events in calls:
            attrs = {"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 9}
            with recorder.tracer.start_as_current_span("chat gpt-4o", attributes=attrs):
                for name, body in events:
                    logger.emit(LogRecord(event_name=name, body=body))
    [conv] = load_conversations(recorder.write(tmp_path / "t.jsonl"))
    assert conv.name == f"t.jsonl#{agent.get_span_context().trace_id:032x}"
    assert transcript(conv) == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": RESULTS["call_1"]},
        {"role": "assistant", "content": ANSWER},
    ]
    assert conv.usage is not None and conv.usage.prompt_tokens == {2: 9, 4: 9}


def test_a_side_call_in_the_trace_is_a_side_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A title asked with another system prompt inside the agent's trace."""
    recorder = Recorder()
    title = [
        {"role": "system", "content": "Give the conversation a title."},
        {"role": "user", "content": QUESTION},
    ]
    with (
        OpenAIServer([*replies(ROUNDS[:1]), Reply(content="Wetter")]) as server,
        instrumented("traceloop", recorder, monkeypatch),
        recorder.tracer.start_as_current_span("invoke_agent") as agent,
    ):
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        sent = agent_loop(server.url, ROUNDS[:1])
        client.chat.completions.create(model="gpt-4o-mini", messages=title)  # type: ignore[arg-type]
    main, side = load_conversations(recorder.write(tmp_path / "t.jsonl"))
    key = f"{agent.get_span_context().trace_id:032x}"
    assert (main.name, side.name) == (f"t.jsonl#{key}", f"t.jsonl#{key}/side-1")
    assert transcript(main) == sent
    assert transcript(side) == [*title, {"role": "assistant", "content": "Wetter"}]


def test_a_plain_loop_without_a_span_is_one_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call its own trace and no session key: the calls chain by their messages."""
    recorder = Recorder()
    with OpenAIServer(replies(ROUNDS)) as server, instrumented("otel-span", recorder, monkeypatch):
        sent = agent_loop(server.url, ROUNDS)
    spans = recorder.spans.get_finished_spans()
    assert len({s.context.trace_id for s in spans}) == 4
    [conv] = load_conversations(recorder.write(tmp_path / "t.jsonl"))
    assert conv.name == f"t.jsonl#{spans[0].context.trace_id:032x}"
    assert transcript(conv) == sent
    assert conv.usage is not None
    assert conv.usage.prompt_tokens == {2: 101, 4: 102, 6: 103, 8: 104}


@pytest.mark.parametrize(
    "key",
    [
        "gen_ai.conversation.id",
        "session.id",
        "langfuse.session.id",
        "traceloop.association.properties.session_id",
    ],
)
@pytest.mark.parametrize("where", ["span", "resource"])
def test_session_keys_join_traces(
    key: str, where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call in a trace of its own, under a span holding the key or a resource that
    does: one conversation named by the key."""
    recorder = Recorder(resource=Resource.create({key: "s-1"}) if where == "resource" else None)
    answers = [Reply(content="Sonnig."), Reply(content="Regen.")]
    with OpenAIServer(answers) as server, instrumented("otel-span", recorder, monkeypatch):
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        messages: list[Any] = [{"role": "system", "content": SYSTEM}]
        for n in range(2):
            attrs = {key: "s-1"} if where == "span" else {}
            with recorder.tracer.start_as_current_span(f"turn {n}", attributes=attrs):
                messages.append({"role": "user", "content": f"{QUESTION} ({n})"})
                reply = client.chat.completions.create(model="gpt-4o", messages=messages)
                messages.append({"role": "assistant", "content": reply.choices[0].message.content})
    assert len({s.context.trace_id for s in recorder.spans.get_finished_spans()}) == 2
    [conv] = load_conversations(recorder.write(tmp_path / "t.jsonl"))
    assert conv.name == "t.jsonl#s-1"
    assert transcript(conv) == messages


def _long_run(recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    rounds = [[ToolCall(f"call_{n}", "weather", '{"city":"Zürich"}')] for n in range(30)]
    results = {f"call_{n}": f"{n} °C" for n in range(30)}
    monkeypatch.setattr(
        "tests.simulator.test_otel_instrumentations.RESULTS", {**RESULTS, **results}
    )
    with (
        OpenAIServer(replies(rounds)) as server,
        instrumented("openinference", recorder, monkeypatch),
        recorder.tracer.start_as_current_span("invoke_agent"),
    ):
        return agent_loop(server.url, rounds)


def test_a_long_run_over_the_attribute_limit_names_the_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenInference's indexed attributes pass the SDK's 128 per span: the first span
    whose first message went is named, with what was dropped and the fix."""
    recorder = Recorder()
    _long_run(recorder, monkeypatch)
    spans = recorder.spans.get_finished_spans()
    cut = next(
        s
        for s in spans
        if s.dropped_attributes and "llm.input_messages.0.message.role" not in (s.attributes or {})
    )
    with pytest.raises(ImportError_) as error:
        load_conversations(recorder.write(tmp_path / "t.jsonl"))
    assert str(error.value) == (
        f"t.jsonl: span {cut.context.span_id:016x}: its messages are incomplete: the "
        f"OpenTelemetry SDK dropped {cut.dropped_attributes} of its attributes, over its "
        "limit of attributes per span (128 by default). Record the run again with the limit "
        "raised: OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT (or OTEL_ATTRIBUTE_COUNT_LIMIT) in the "
        "environment, or TracerProvider(span_limits=SpanLimits(max_span_attributes=...)); "
        "Phoenix's register() keeps the default"
    )


def test_a_long_run_with_the_limit_raised_imports_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = Recorder(limits=SpanLimits(max_span_attributes=10_000))
    sent = _long_run(recorder, monkeypatch)
    [conv] = load_conversations(recorder.write(tmp_path / "t.jsonl"))
    assert transcript(conv) == sent
    assert conv.usage is not None and len(conv.usage.prompt_tokens) == 31


def test_instrumentors_leave_openai_unpatched() -> None:
    """Every test above unpatched what it patched: ``create`` is openai's own again."""
    assert _create() is ORIGINAL_CREATE
    assert trace.get_tracer_provider().__class__.__name__ in (
        "ProxyTracerProvider",
        "TracerProvider",
    )
