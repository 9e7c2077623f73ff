"""OpenTelemetry GenAI traces: spans made by the real SDK and written as the Collector's
file exporter writes them, in each attribute style, and three hand-written files."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping, Sequence
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from reduction_app.engine import formats
from simulator.cli import main
from simulator.importers import (
    ImportError_,
    RecordedConversation,
    detect_format,
    load_conversations,
)

DATA = Path(__file__).parent / "data" / "otel"

T0 = 1_764_921_600_000_000_000  # 2025-12-05 08:00:00 UTC, in nanoseconds
SECOND = 1_000_000_000
SYSTEM = "You answer weather questions."
USER = "What is the weather in Paris?"
ANSWER = "It is 18°C and sunny in Paris."
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": PARAMETERS,
}

# The conversation every sample holds, worked out by hand: the system prompt, the
# question, a call of get_weather, its result and the answer. The first model call
# produced message 2, the second message 4.
EXPECTED = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": USER},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                # As OpenAI sends arguments: compact, which is how the current
                # conventions' parsed object is written back.
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "18°C, sunny"},
    {"role": "assistant", "content": ANSWER},
]
EXPECTED_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": PARAMETERS,
        },
    }
]


class Traces:
    """A tracer of the real SDK whose finished spans are kept in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("tests.simulator.test_otel")

    def span(
        self,
        name: str,
        start: int,
        attributes: Mapping[str, Any],
        parent: trace.Span | None = None,
    ) -> trace.Span:
        context = trace.set_span_in_context(parent) if parent is not None else None
        span = self.tracer.start_span(name, context=context, start_time=start)
        span.set_attributes(dict(attributes))
        return span

    def finished(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()


def collector_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """``spans`` as one line of the Collector's file exporter: OTLP/JSON with enums as
    numbers and ids in hex (protobuf's own JSON mapping gives ids in base64)."""
    data = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return data


def write(path: Path, *batches: Sequence[ReadableSpan]) -> Path:
    """One line per batch, as the exporter writes each export."""
    lines = [json.dumps(collector_json(b), ensure_ascii=False) for b in batches]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def hex_id(span: trace.Span) -> str:
    return f"{span.get_span_context().span_id:016x}"


def transcript(conv: RecordedConversation) -> list[dict[str, Any]]:
    _, messages = formats.dump("openai_chat", conv.messages)
    return messages


# Current semantic conventions.

CALL = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
RESULT = {"type": "tool_call_response", "id": "call_1", "response": "18°C, sunny"}
INPUT_1 = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
OUTPUT_1 = [{"role": "assistant", "parts": [CALL], "finish_reason": "tool_call"}]
INPUT_2 = [*INPUT_1, {"role": "assistant", "parts": [CALL]}, {"role": "tool", "parts": [RESULT]}]
OUTPUT_2 = [
    {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"}
]


def current(
    inputs: list[Any], outputs: list[Any], usage: tuple[int, int, int], **extra: Any
) -> dict[str, Any]:
    prompt, cached, completion = usage
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.response.model": "gpt-4o-2024-08-06",
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": SYSTEM}]),
        "gen_ai.input.messages": json.dumps(inputs, ensure_ascii=False),
        "gen_ai.output.messages": json.dumps(outputs, ensure_ascii=False),
        "gen_ai.tool.definitions": json.dumps([TOOL]),
        "gen_ai.usage.input_tokens": prompt,
        "gen_ai.usage.cache_read.input_tokens": cached,
        "gen_ai.usage.output_tokens": completion,
        **extra,
    }


def agent_run(
    traces: Traces, start: int, conversation_id: str | None, question: str = USER
) -> Iterator[trace.Span]:
    """An agent span (holding the conversation id, if any) with two chat spans and a
    tool span inside, ended in the order they finish; yields the chat spans."""
    asked = [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    inputs = [*asked, *INPUT_2[1:]]
    attrs = {"gen_ai.operation.name": "invoke_agent"}
    if conversation_id is not None:
        attrs["gen_ai.conversation.id"] = conversation_id
    agent = traces.span("invoke_agent weather", start, attrs)
    first = traces.span(
        "chat gpt-4o", start + SECOND, current(asked, OUTPUT_1, (120, 0, 15)), agent
    )
    first.end(start + 2 * SECOND)
    tool = traces.span("execute_tool get_weather", start + 2 * SECOND, {}, agent)
    tool.end(start + 3 * SECOND)
    second = traces.span(
        "chat gpt-4o", start + 3 * SECOND, current(inputs, OUTPUT_2, (150, 128, 12)), agent
    )
    second.end(start + 4 * SECOND)
    agent.end(start + 5 * SECOND)
    yield first
    yield second


def test_otel_current_conventions_from_the_sdk(tmp_path: Path) -> None:
    """Two calls in an agent span: the second call's input and output are the
    conversation, with the usage of each call by the message it produced."""
    traces = Traces()
    list(agent_run(traces, T0, "conv-paris"))
    path = write(tmp_path / "traces.jsonl", traces.finished()[:2], traces.finished()[2:])
    [conv] = load_conversations(path)
    assert (conv.name, conv.source, conv.format, conv.model) == (
        "traces.jsonl#conv-paris",
        "otel",
        "openai_chat",
        "gpt-4o-2024-08-06",
    )
    assert transcript(conv) == EXPECTED
    assert formats.dump_tools("openai_chat", conv.tools) == EXPECTED_TOOLS
    assert conv.usage is not None
    assert conv.usage.prompt_tokens == {2: 120, 4: 150}
    assert conv.usage.cached_prompt_tokens == {2: 0, 4: 128}
    assert conv.usage.completion_tokens == {2: 15, 4: 12}
    assert conv.usage.call_times == {2: T0 / SECOND + 1, 4: T0 / SECOND + 3}


def test_otel_groups_by_conversation_id_else_by_trace(tmp_path: Path) -> None:
    """Runs without a conversation id are one conversation per trace (neither continues
    the other); two runs sharing one that do not continue each other are two."""
    traces = Traces()
    list(agent_run(traces, T0, None))
    list(agent_run(traces, T0 + 10 * SECOND, None))
    path = write(tmp_path / "traces.jsonl", traces.finished())
    trace_ids = sorted({f"{s.context.trace_id:032x}" for s in traces.finished()})
    convs = load_conversations(path)
    assert sorted(c.name for c in convs) == [f"traces.jsonl#{t}" for t in trace_ids]
    assert [transcript(c) for c in convs] == [EXPECTED, EXPECTED]

    traces = Traces()
    list(agent_run(traces, T0, "same"))
    list(agent_run(traces, T0 + 10 * SECOND, "same", question="And in Rome?"))
    run = traces.finished()
    path = write(tmp_path / "same.jsonl", run[:4], run[4:])
    # The second run was not sent the first (its question replaced the first one's): a
    # conversation of its own under the same key, numbered after the main one (the
    # first: as many calls and messages, started earlier).
    main, side = load_conversations(path)
    assert (main.name, side.name) == ("same.jsonl#same", "same.jsonl#same/side-1")
    assert transcript(main) == EXPECTED
    rome = {"role": "user", "content": "And in Rome?"}
    assert transcript(side) == [EXPECTED[0], rome, *EXPECTED[2:]]


def test_otel_a_call_that_continues_no_other_is_a_side_conversation(tmp_path: Path) -> None:
    """Two single calls under one key: the one with more messages is the main one."""
    traces = Traces()
    other = [{"role": "user", "parts": [{"type": "text", "content": "And in Rome?"}]}]
    same = {"gen_ai.conversation.id": "c"}
    first = traces.span("chat", T0, current(other, OUTPUT_1, (1, 0, 1), **same))
    first.end(T0 + SECOND)
    second = traces.span("chat", T0 + 2 * SECOND, current(INPUT_2, OUTPUT_2, (7, 0, 3), **same))
    second.end(T0 + 3 * SECOND)
    path = write(tmp_path / "t.jsonl", traces.finished()[:1], traces.finished()[1:])
    main, side = load_conversations(path)
    assert (main.name, side.name) == ("t.jsonl#c", "t.jsonl#c/side-1")
    assert transcript(main) == EXPECTED
    rome = {"role": "user", "content": "And in Rome?"}
    assert transcript(side) == [EXPECTED[0], rome, EXPECTED[2]]
    assert main.usage is not None and side.usage is not None
    assert (main.usage.prompt_tokens, side.usage.prompt_tokens) == ({4: 7}, {2: 1})


def _indexed(prefix: str, n: int, role: str, **fields: Any) -> dict[str, Any]:
    """OpenLLMetry's ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes."""
    out = {f"{prefix}.{n}.role": role}
    for key, value in fields.items():
        if key == "tool_calls":
            for m, (call_id, name, arguments) in enumerate(value):
                out[f"{prefix}.{n}.tool_calls.{m}.id"] = call_id
                out[f"{prefix}.{n}.tool_calls.{m}.name"] = name
                out[f"{prefix}.{n}.tool_calls.{m}.arguments"] = arguments
        else:
            out[f"{prefix}.{n}.{key}"] = value
    return out


CALLS = [("call_1", "get_weather", '{"city":"Paris"}')]
SPACED = [("call_1", "get_weather", '{"city": "Paris"}')]


def test_otel_indexed_attributes_from_the_sdk(tmp_path: Path) -> None:
    """OpenLLMetry's style, one trace without a conversation id, tools from
    ``llm.request.functions``; arguments spaced differently in the two calls still
    match."""
    traces = Traces()
    functions = {
        "llm.request.functions.0.name": "get_weather",
        "llm.request.functions.0.description": "The weather in a city.",
        "llm.request.functions.0.parameters": json.dumps(PARAMETERS),
        "gen_ai.request.model": "gpt-4o",
    }
    prompt = {
        **_indexed("gen_ai.prompt", 0, "system", content=SYSTEM),
        **_indexed("gen_ai.prompt", 1, "user", content=USER),
    }
    root = traces.span("workflow", T0, {})
    first = traces.span(
        "openai.chat",
        T0 + SECOND,
        {
            **functions,
            **prompt,
            **_indexed("gen_ai.completion", 0, "assistant", tool_calls=SPACED),
            "gen_ai.usage.prompt_tokens": 120,
            "gen_ai.usage.completion_tokens": 15,
        },
        root,
    )
    first.end(T0 + 2 * SECOND)
    second = traces.span(
        "openai.chat",
        T0 + 3 * SECOND,
        {
            **functions,
            **prompt,
            **_indexed(
                "gen_ai.prompt", 2, "assistant", tool_calls=[(*CALLS[0][:2], '{"city":"Paris"}')]
            ),
            **_indexed("gen_ai.prompt", 3, "tool", content="18°C, sunny", tool_call_id="call_1"),
            **_indexed("gen_ai.completion", 0, "assistant", content=ANSWER),
            "gen_ai.usage.input_tokens": 150,
            "gen_ai.usage.cache_read_input_tokens": 128,
            "gen_ai.usage.output_tokens": 12,
        },
        root,
    )
    second.end(T0 + 4 * SECOND)
    root.end(T0 + 5 * SECOND)
    path = write(tmp_path / "t.jsonl", traces.finished())
    [conv] = load_conversations(path)
    assert conv.name == f"t.jsonl#{root.get_span_context().trace_id:032x}"
    # The last call's arguments, as it recorded them.
    function = {"name": "get_weather", "arguments": '{"city":"Paris"}'}
    call = {"id": "call_1", "type": "function", "function": function}
    assert transcript(conv) == [*EXPECTED[:2], {**EXPECTED[2], "tool_calls": [call]}, *EXPECTED[3:]]
    assert formats.dump_tools("openai_chat", conv.tools) == EXPECTED_TOOLS
    assert conv.model == "gpt-4o"
    assert conv.usage is not None
    assert (conv.usage.prompt_tokens, conv.usage.cached_prompt_tokens) == (
        {2: 120, 4: 150},
        {4: 128},
    )
    assert conv.usage.completion_tokens == {2: 15, 4: 12}


def _openinference(prefix: str, n: int, role: str, **fields: Any) -> dict[str, Any]:
    base = f"{prefix}.{n}.message"
    out = {f"{base}.role": role}
    for key, value in fields.items():
        if key == "tool_calls":
            for m, (call_id, name, arguments) in enumerate(value):
                call = f"{base}.tool_calls.{m}.tool_call"
                out[f"{call}.id"] = call_id
                out[f"{call}.function.name"] = name
                out[f"{call}.function.arguments"] = arguments
        else:
            out[f"{base}.{key}"] = value
    return out


def test_otel_openinference_from_the_sdk(tmp_path: Path) -> None:
    """Phoenix's style: two traces joined by their ``session.id``, the question as
    content parts."""
    traces = Traces()
    schema = {"type": "function", "function": EXPECTED_TOOLS[0]["function"]}
    base = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-2024-08-06",
        "session.id": "session-7",
        "llm.tools.0.tool.json_schema": json.dumps(schema),
    }
    question = {
        **_openinference("llm.input_messages", 0, "system", content=SYSTEM),
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.contents.0.message_content.type": "text",
        "llm.input_messages.1.message.contents.0.message_content.text": "What is the weather ",
        "llm.input_messages.1.message.contents.1.message_content.type": "text",
        "llm.input_messages.1.message.contents.1.message_content.text": "in Paris?",
    }
    first = traces.span(
        "ChatCompletion",
        T0,
        {
            **base,
            **question,
            **_openinference("llm.output_messages", 0, "assistant", tool_calls=CALLS),
            "llm.token_count.prompt": 120,
            "llm.token_count.completion": 15,
        },
    )
    first.end(T0 + SECOND)
    second = traces.span(
        "ChatCompletion",
        T0 + 2 * SECOND,
        {
            **base,
            **question,
            **_openinference("llm.input_messages", 2, "assistant", tool_calls=CALLS),
            **_openinference(
                "llm.input_messages", 3, "tool", content="18°C, sunny", tool_call_id="call_1"
            ),
            **_openinference("llm.output_messages", 0, "assistant", content=ANSWER),
            "llm.token_count.prompt": 150,
            "llm.token_count.prompt_details.cache_read": 128,
            "llm.token_count.completion": 12,
        },
    )
    second.end(T0 + 3 * SECOND)
    path = write(tmp_path / "phoenix.jsonl", traces.finished()[:1], traces.finished()[1:])
    [conv] = load_conversations(path)
    assert (conv.name, conv.model) == ("phoenix.jsonl#session-7", "gpt-4o-2024-08-06")
    assert transcript(conv) == EXPECTED
    assert formats.dump_tools("openai_chat", conv.tools) == EXPECTED_TOOLS
    assert conv.usage is not None
    assert conv.usage.prompt_tokens == {2: 120, 4: 150}
    assert conv.usage.cached_prompt_tokens == {4: 128}
    assert conv.usage.call_times == {2: T0 / SECOND, 4: T0 / SECOND + 2}


def test_otel_pydantic_ai_tool_results_in_a_user_message(tmp_path: Path) -> None:
    """pydantic-ai's shape of the current conventions: the system prompt among the input
    messages and each tool result a ``tool_call_response`` part with its ``result`` in a
    user message, which leaves no empty user message behind."""
    traces = Traces()
    system = [{"role": "system", "parts": [{"type": "text", "content": SYSTEM}]}]
    answered = {"type": "tool_call_response", "id": "call_1", "name": "get_weather"}
    inputs = [
        *system,
        *INPUT_1,
        {"role": "assistant", "parts": [CALL]},
        {"role": "user", "parts": [{**answered, "result": "18°C, sunny"}]},
    ]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.conversation.id": "run-1",
        "gen_ai.input.messages": json.dumps(inputs, ensure_ascii=False),
        "gen_ai.output.messages": json.dumps(OUTPUT_2, ensure_ascii=False),
    }
    traces.span("chat test", T0, attributes).end(T0 + SECOND)
    [conv] = load_conversations(write(tmp_path / "pydantic_ai.jsonl", traces.finished()))
    assert transcript(conv) == EXPECTED


def test_otel_openinference_chain_spans_are_not_calls(tmp_path: Path) -> None:
    """OpenInference's LangChain instrumentation puts input messages on the chain span
    around a call too: only the LLM span is read, so no side conversation appears."""
    traces = Traces()
    chain = traces.span(
        "model",
        T0,
        {
            "openinference.span.kind": "CHAIN",
            "session.id": "thread-1",
            **_openinference("llm.input_messages", 0, "user", content=USER),
        },
    )
    llm = traces.span(
        "ChatModel",
        T0 + 1,
        {
            "openinference.span.kind": "LLM",
            **_openinference("llm.input_messages", 0, "system", content=SYSTEM),
            **_openinference("llm.input_messages", 1, "user", content=USER),
            **_openinference("llm.output_messages", 0, "assistant", content=ANSWER),
        },
        chain,
    )
    llm.end(T0 + SECOND)
    chain.end(T0 + 2 * SECOND)
    [conv] = load_conversations(write(tmp_path / "langchain.jsonl", traces.finished()))
    assert conv.name == "langchain.jsonl#thread-1"
    assert transcript(conv) == [EXPECTED[0], EXPECTED[1], EXPECTED[-1]]


def test_otel_a_tool_result_replaced_since_still_continues_the_conversation(
    tmp_path: Path,
) -> None:
    """A clear pass replaced a result the model saw before (a placeholder now): the next
    call still continues the conversation, which ends as that call saw it."""
    traces = Traces()
    placeholder = "<persisted-output>Tool result saved to: /tmp/clear/call_1</persisted-output>"
    second_call = {**CALL, "id": "call_2"}
    cleared = [
        *INPUT_1,
        {"role": "assistant", "parts": [CALL]},
        {"role": "tool", "parts": [{**RESULT, "response": placeholder}]},
    ]
    calls = [
        (INPUT_1, OUTPUT_1),
        (INPUT_2, [{"role": "assistant", "parts": [second_call]}]),
        (
            [
                *cleared,
                {"role": "assistant", "parts": [second_call]},
                {"role": "tool", "parts": [{**RESULT, "id": "call_2"}]},
            ],
            OUTPUT_2,
        ),
    ]
    for n, (inputs, outputs) in enumerate(calls):
        attributes = current(inputs, outputs, (100, 0, 10), **{"gen_ai.conversation.id": "c"})
        traces.span("chat gpt-4o", T0 + n * SECOND, attributes).end(T0 + n * SECOND + 1)
    [conv] = load_conversations(write(tmp_path / "cleared.jsonl", traces.finished()))
    messages = transcript(conv)
    assert len(messages) == 7
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": placeholder}
    assert messages[-1] == EXPECTED[-1]


def test_otel_one_object_file_is_detected(tmp_path: Path) -> None:
    """A file holding one OTLP/JSON object (not JSONL): errors name no line."""
    traces = Traces()
    list(agent_run(traces, T0, "c"))
    data = collector_json(traces.finished())
    assert detect_format(data) == "otel"
    path = tmp_path / "one.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [conv] = load_conversations(path)
    assert transcript(conv) == EXPECTED
    span = data["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["attributes"] = [
        {"key": "gen_ai.input.messages", "value": {"stringValue": "[{"}},
    ]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ImportError_) as error:
        load_conversations(path)
    assert str(error.value) == (
        f"one.json: span {span['spanId']}: gen_ai.input.messages: not JSON: "
        "Expecting property name enclosed in double quotes at column 3"
    )


def _one_call(tmp_path: Path, inputs: Any, outputs: Any) -> tuple[Path, str]:
    traces = Traces()
    attrs = current([], [], (1, 0, 1))
    attrs["gen_ai.input.messages"] = json.dumps(inputs)
    attrs["gen_ai.output.messages"] = json.dumps(outputs)
    span = traces.span("chat", T0, attrs)
    span.end(T0 + SECOND)
    other = traces.span("unrelated", T0, {})
    other.end(T0 + SECOND)
    return write(tmp_path / "t.jsonl", traces.finished()[1:], traces.finished()[:1]), hex_id(span)


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        (
            [{"role": "user", "parts": [{"type": "image", "content": "x"}]}],
            "gen_ai.input.messages[0].parts[0].type: unknown part type 'image'",
        ),
        (
            [{"role": "user", "content": "hi"}],
            "gen_ai.input.messages[0]: expected an object with 'role' and 'parts'",
        ),
        (
            [{"role": "user", "parts": [{"type": "text", "content": 3}]}],
            "gen_ai.input.messages[0].parts[0].content: expected a string, got 3",
        ),
        (
            [{"role": "robot", "parts": [{"type": "text", "content": "hi"}]}],
            "gen_ai.input.messages[0].role: unknown role 'robot'",
        ),
    ],
)
def test_otel_errors_name_line_span_and_field(
    tmp_path: Path, inputs: list[Any], problem: str
) -> None:
    outputs = [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]
    path, span_id = _one_call(tmp_path, inputs, outputs)
    with pytest.raises(ImportError_) as error:
        load_conversations(path)
    assert str(error.value) == f"t.jsonl:2: span {span_id}: {problem}"


def test_otel_chat_span_without_messages_is_an_error(tmp_path: Path) -> None:
    """Content capture off leaves chat spans with no messages: nothing to replay."""
    traces = Traces()
    span = traces.span("chat", T0, {"gen_ai.operation.name": "chat"})
    span.end(T0 + SECOND)
    path = write(tmp_path / "t.json", traces.finished())
    with pytest.raises(ImportError_) as error:
        load_conversations(path, fmt="otel")
    assert str(error.value) == (
        f"t.json: span {hex_id(span)}: a chat span without messages (were message "
        "contents recorded? OpenTelemetry's OpenAI instrumentation records them with "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY, or EVENT_ONLY with "
        "its log records in the same file)"
    )


@pytest.mark.parametrize(
    ("name", "model", "cached"),
    [
        ("genai-current", "gpt-4o-2024-08-06", {2: 0, 4: 128}),
        ("genai-indexed", "gpt-4o", {4: 128}),
        ("openinference", "gpt-4o-2024-08-06", {4: 128}),
    ],
)
def test_otel_hand_written_files(name: str, model: str, cached: dict[int, int]) -> None:
    """The committed samples, one per style, hold the conversation of EXPECTED; the
    current-conventions file keeps its conversation id on the agent span, the indexed
    one has none (its trace names it), the OpenInference one spans two traces."""
    [conv] = load_conversations(DATA / f"{name}.jsonl")
    label = {
        "genai-current": "conv-paris",
        "genai-indexed": "0af7651916cd43dd8448eb211c80319c",
        "openinference": "session-7",
    }[name]
    assert (conv.name, conv.source, conv.model) == (f"{name}.jsonl#{label}", "otel", model)
    assert transcript(conv) == EXPECTED
    assert formats.dump_tools("openai_chat", conv.tools) == EXPECTED_TOOLS
    assert conv.usage is not None
    assert conv.usage.prompt_tokens == {2: 120, 4: 150}
    assert conv.usage.cached_prompt_tokens == cached
    assert conv.usage.completion_tokens == {2: 15, 4: 12}


def test_otel_file_replays_and_sweeps_from_the_command_line(tmp_path: Path) -> None:
    path = str(DATA / "genai-current.jsonl")
    config = tmp_path / "defaults.json"
    config.write_text("{}", encoding="utf-8")
    out, err = StringIO(), StringIO()
    argv = ["replay", path, "--config", str(config), "--baseline", "none", "--json"]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    results = json.loads(out.getvalue())["results"]
    assert {r["conversation"] for r in results} == {"genai-current.jsonl#conv-paris"}
    assert {r["totals"]["model_calls"] for r in results} == {2}
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"max_tokens_for_clear": [100, 5000]}), encoding="utf-8")
    out, err = StringIO(), StringIO()
    assert main(["sweep", path, "--grid", str(grid), "--json", "--quiet"], out=out, err=err) == 0
    [sweep] = json.loads(out.getvalue())["sweeps"]
    assert sweep["conversation"] == "genai-current.jsonl#conv-paris"
    assert len(sweep["results"]) == 2


def test_otel_attribute_not_json_names_line_span_and_attribute(tmp_path: Path) -> None:
    """As when the SDK's attribute length limit cut a message attribute short."""
    traces = Traces()
    _, second = agent_run(traces, T0, "c")
    lines = [collector_json(traces.finished()[:2]), collector_json(traces.finished()[2:])]
    [span, _] = lines[1]["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert span["spanId"] == hex_id(second)
    for attr in span["attributes"]:
        if attr["key"] == "gen_ai.input.messages":
            attr["value"] = {"stringValue": attr["value"]["stringValue"][:40]}
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(ImportError_) as error:
        load_conversations(path)
    # '[{"role": "user", "parts": [{"type": "te': the string "te starts at column 38.
    assert str(error.value) == (
        f"traces.jsonl:2: span {hex_id(second)}: gen_ai.input.messages: not JSON: "
        "Unterminated string starting at at column 38"
    )


def test_otel_values_equal_in_python_but_not_as_json_do_not_chain() -> None:
    """A call sent tool call id ``true`` where the last call answered id ``1`` does not
    continue it (Python holds the two equal), so it is a side conversation."""
    from simulator.sources.otel import read

    traces = Traces()
    same = {"gen_ai.conversation.id": "c"}
    asked = _indexed("gen_ai.prompt", 0, "user", content=USER)
    first = traces.span(
        "openai.chat",
        T0,
        {
            **same,
            **asked,
            **_indexed("gen_ai.completion", 0, "assistant", tool_calls=[(1, "f", "{}")]),
        },
    )
    first.end(T0 + SECOND)
    second = traces.span(
        "openai.chat",
        T0 + 2 * SECOND,
        {
            **same,
            **asked,
            **_indexed("gen_ai.prompt", 1, "assistant", tool_calls=[(True, "f", "{}")]),
            **_indexed("gen_ai.completion", 0, "assistant", content=ANSWER),
        },
    )
    second.end(T0 + 3 * SECOND)
    converted = read(collector_json(traces.finished()), name="t.json")
    assert [c.label for c in converted] == ["t.json#c", "t.json#c/side-1"]
    assert [len(c.payload["messages"]) for c in converted] == [3, 2]
