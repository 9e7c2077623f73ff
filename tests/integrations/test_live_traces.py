"""An agent of each framework running with its adapter, traced by the framework's own
OpenTelemetry instrumentation and exported live to the Lab through the SDK's OTLP/HTTP
exporter: the Lab's conversation holds what the test model was last sent (notices and
placeholders where the adapter reduced) and its answer, every tool result byte for byte,
and the adapter's reductions as events, recorded once even when the spans come twice."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Sequence
from io import StringIO
from typing import Any, Literal

import openai
import pytest
from agents import Agent as AgentsAgent
from agents import OpenAIChatCompletionsModel, Runner, function_tool
from django.core.management import call_command
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from openinference.instrumentation.langchain import LangChainInstrumentor
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import Field
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

from reduction_app.engine import InMemoryBackend, ReductionConfig, ReductionEvent
from reduction_app.engine.inspect import is_clear_placeholder, truncation_file_path
from reduction_app.integrations import langchain as lc_adapter
from reduction_app.integrations import openai_agents as agents_adapter
from reduction_app.integrations import pydantic_ai as pai_adapter
from tests.app.support import ApiClient, make_api
from tests.openai_server import OpenAIServer, Reply, ToolCall

pytestmark = pytest.mark.slow

SYSTEM = "You read request logs and say what you found."
QUESTION = "Read the logs of Monday, Tuesday and Wednesday."
ANSWER = "Three days read: every request was served in under 100 µs."
DAYS = ("mon", "tue", "wed")


def log_of(day: str) -> str:
    """A day's request log: some 80,000 characters, non-ASCII included."""
    return "".join(f"{day} {n:05d} GET /api/v1/events → 200 in {n % 97} µs\n" for n in range(1_500))


def config() -> ReductionConfig:
    # Each log (some 80,000 characters) is truncated to a notice of about 1,300 tokens;
    # past 3,000 tokens the clear phase offloads all but the latest round, so the
    # model's last call sees the first logs as placeholders.
    return ReductionConfig(max_length_for_trunc=10_000, max_tokens_for_clear=3_000)


class Lab:
    """The SDK's tracer provider exporting to the live Lab in batches, as an agent's
    would, keeping its spans to send them once more."""

    def __init__(self, url: str, api: ApiClient) -> None:
        self.api = api
        self.endpoint = f"{url}/api/v1/otel/v1/traces"
        self.kept = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(BatchSpanProcessor(self.exporter()))
        self.provider.add_span_processor(SimpleSpanProcessor(self.kept))

    def exporter(self) -> OTLPSpanExporter:
        return OTLPSpanExporter(
            endpoint=self.endpoint, headers={"Authorization": f"Bearer {self.api.raw_key}"}
        )

    def sent(self) -> None:
        """Flush the exporter and have the task worker read what it sent."""
        assert self.provider.force_flush()
        _work()

    def sent_again(self) -> None:
        """Every span exported once more, as a retrying exporter might, then read."""
        again = self.exporter()
        assert again.export(self.kept.get_finished_spans()) == SpanExportResult.SUCCESS
        _work()


def _work() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())


@pytest.fixture
def lab(live_server: Any, transactional_db: None) -> Iterator[Lab]:
    live = Lab(live_server.url, make_api("alpha"))
    try:
        yield live
    finally:
        live.provider.shutdown()


def check_lab(
    lab: Lab,
    session: str,
    conversation: list[dict[str, Any]],
    events: Sequence[ReductionEvent],
    backend: InMemoryBackend,
    usage: Sequence[tuple[int, int]] = (),
) -> None:
    """The conversation ``session`` in the Lab is ``conversation`` (the test model's last
    input and its answer), its events the adapter's, each original offloaded whole, and
    ``usage`` the (prompt, completion) tokens each call reported, in order; the same once
    every span is sent again."""
    lab.sent()
    detail = lab.api.get(f"/conversations/{session}").json()
    assert detail["source"] == "otel"
    assert detail["messages"] == conversation
    replies = [str(i) for i, m in enumerate(conversation) if m["role"] == "assistant"]
    calls = dict(zip(replies, usage, strict=True)) if usage else {}
    kept = detail["provider_usage"] or {}
    assert kept.get("prompt_tokens", {}) == {i: p for i, (p, _) in calls.items()}
    assert kept.get("completion_tokens", {}) == {i: c for i, (_, c) in calls.items()}
    assert recorded(lab, session) == sorted_events(e.to_dict() for e in events)
    check_reductions(conversation, events, backend)
    lab.sent_again()
    assert lab.api.get(f"/conversations/{session}").json()["messages"] == conversation
    assert recorded(lab, session) == sorted_events(e.to_dict() for e in events)
    listed = lab.api.get("/conversations").json()["results"]
    assert [c["conversation_id"] for c in listed] == [session]


def recorded(lab: Lab, session: str) -> list[dict[str, Any]]:
    """The Lab's events of ``session``, each with the engine event's fields."""
    page = lab.api.get("/events", {"conversation_id": session}).json()
    assert page["next"] is None
    rows = page["results"]
    names = ReductionEvent(phase="truncation", kind="tool").to_dict().keys()
    return sorted_events({name: row[name] for name in names} for row in rows)


def sorted_events(events: Iterator[dict[str, Any]] | Any) -> list[dict[str, Any]]:
    return sorted(events, key=lambda e: json.dumps(e, sort_keys=True))


def check_reductions(
    conversation: list[dict[str, Any]], events: Sequence[ReductionEvent], backend: InMemoryBackend
) -> None:
    """Every log was truncated and saved whole; at least one was cleared before the last
    call, which saw its placeholder naming the offloaded file."""
    calls = {
        call["id"]: json.loads(call["function"]["arguments"])["day"]
        for message in conversation
        for call in message.get("tool_calls", ())
    }
    assert len(calls) == len(DAYS)
    truncations = [e for e in events if e.phase == "truncation"]
    assert sorted(e.call_id for e in truncations) == sorted(calls)
    for event in truncations:
        assert event.tokens_saved > 0
        assert backend.read(event.offload_path) == log_of(calls[event.call_id])
    results = {m["tool_call_id"]: m["content"] for m in conversation if m["role"] == "tool"}
    cleared = [e for e in events if e.phase == "clear" and e.kind == "tool"]
    assert cleared, "no tool result was cleared"
    for event in cleared:
        assert event.tokens_saved > 0
        assert is_clear_placeholder(results[event.call_id])
        assert event.offload_path in results[event.call_id]
        assert backend.read(event.offload_path) == log_of(calls[event.call_id])
    kept = [text for call_id, text in results.items() if not is_clear_placeholder(text)]
    assert kept and all(truncation_file_path(text) for text in kept)


# pydantic-ai ---------------------------------------------------------------------------


def pydantic_ai_chat(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai's messages as OpenAI chat messages (what its model was sent)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            reply: dict[str, Any] = {"role": "assistant", "content": text or None}
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            if calls:
                reply["tool_calls"] = calls
            out.append(reply)
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": part.content})
            elif isinstance(part, ToolReturnPart):
                content = part.model_response_str()
                out.append({"role": "tool", "tool_call_id": part.tool_call_id, "content": content})
    return out


@pytest.mark.parametrize("version", [5, 6])
def test_pydantic_ai_agent_appears_live(lab: Lab, version: Literal[5, 6]) -> None:
    """pydantic-ai's own instrumentation (the current GenAI conventions, contents
    included; tool results in a user message by default, in a tool message from format
    6) around an agent with the adapter's capability and a scripted model."""
    received: list[list[ModelMessage]] = []
    answers: list[ModelResponse] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        received.append(list(messages))
        turn = len(received)
        if turn <= len(DAYS):
            call = ToolCallPart("read_log", {"day": DAYS[turn - 1]}, tool_call_id=f"call_{turn}")
            answers.append(ModelResponse(parts=[call]))
        else:
            answers.append(ModelResponse(parts=[TextPart(ANSWER)]))
        return answers[-1]

    def read_log(day: str) -> str:
        """Read the request log of a day."""
        return log_of(day)

    backend = InMemoryBackend()
    reduction = pai_adapter.Reduction(config(), backend=backend, config_name="logs")
    agent = PydanticAgent(
        FunctionModel(model),
        system_prompt=SYSTEM,
        tools=[read_log],
        capabilities=[
            Instrumentation(
                InstrumentationSettings(
                    tracer_provider=lab.provider, include_content=True, version=version
                )
            ),
            reduction,
        ],
    )
    result = agent.run_sync(QUESTION, conversation_id="logs-pydantic-ai")
    assert result.output == ANSWER
    assert isinstance(received[-1][-1], ModelRequest)
    conversation = pydantic_ai_chat([*received[-1], answers[-1]])
    usage = [
        (m.usage.input_tokens, m.usage.output_tokens)
        for m in result.all_messages()
        if isinstance(m, ModelResponse)
    ]
    assert len(usage) == len(DAYS) + 1 and all(p > 0 for p, _ in usage)
    check_lab(lab, "logs-pydantic-ai", conversation, reduction.events, backend, usage)


# LangChain -----------------------------------------------------------------------------


class ScriptedChatModel(BaseChatModel):
    """Calls ``read_log`` for each day, then answers; keeps every list it is sent."""

    received: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        turn = len(self.received)
        if turn <= len(DAYS):
            call = {"id": f"call_{turn}", "name": "read_log", "args": {"day": DAYS[turn - 1]}}
            message = AIMessage("", id=f"ai_{turn}", tool_calls=[call])
        else:
            message = AIMessage(ANSWER, id=f"ai_{turn}")
        return ChatResult(generations=[ChatGeneration(message=message)])


def langchain_chat(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain's messages as OpenAI chat messages, arguments as LangChain writes them."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AIMessage):
            reply: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                reply["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["args"])},
                    }
                    for c in message.tool_calls
                ]
            out.append(reply)
        elif isinstance(message, ToolMessage):
            content = message.text
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
        else:
            role = {SystemMessage: "system", HumanMessage: "user"}[type(message)]
            out.append({"role": role, "content": message.text})
    return out


@tool
def read_log(day: str) -> str:
    """Read the request log of a day."""
    return log_of(day)


def test_langchain_agent_appears_live(lab: Lab) -> None:
    """OpenInference's LangChain instrumentation around ``create_agent`` with the
    adapter's middleware, the session named with OpenInference's ``using_session``."""
    backend = InMemoryBackend()
    middleware = lc_adapter.ReductionMiddleware(
        config(), backend=backend, config_name="logs", conversation_id="logs-langchain"
    )
    model = ScriptedChatModel()
    agent = create_agent(model, [read_log], system_prompt=SYSTEM, middleware=[middleware])
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=lab.provider)
    try:
        tracer = lab.provider.get_tracer("tests")
        with tracer.start_as_current_span("agent run", attributes={"session.id": "logs-langchain"}):
            result = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    finally:
        instrumentor.uninstrument()
    answer = result["messages"][-1]
    assert answer.text == ANSWER
    conversation = langchain_chat([*model.received[-1], answer])
    # The scripted model reports no usage, so the trace holds none.
    check_lab(lab, "logs-langchain", conversation, middleware.events, backend)


# OpenAI Agents SDK ---------------------------------------------------------------------


def test_openai_agents_agent_appears_live(lab: Lab) -> None:
    """OpenInference's Agents SDK instrumentation around ``Runner.run`` with the adapter:
    the SDK's chat-completions model against a local fake server (the SDK traces the
    messages of its own models only), the session on the span around the run."""
    replies = [
        Reply(tool_calls=[ToolCall(f"call_{n}", "read_log", json.dumps({"day": day}))])
        for n, day in enumerate(DAYS, start=1)
    ]
    replies.append(Reply(content=ANSWER))
    backend = InMemoryBackend()
    reduction = agents_adapter.Reduction(
        config(), backend=backend, config_name="logs", conversation_id="logs-agents"
    )
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=lab.provider)
    try:
        with OpenAIServer(replies) as server:
            client = openai.AsyncOpenAI(base_url=server.url, api_key="x", max_retries=0)
            model = OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
            agent = reduction.wrap_agent(
                AgentsAgent(
                    name="logs",
                    instructions=SYSTEM,
                    model=model,
                    tools=[function_tool(log_of, name_override="read_log")],
                )
            )
            tracer = lab.provider.get_tracer("tests")
            with tracer.start_as_current_span(
                "agent run", attributes={"session.id": "logs-agents"}
            ):
                run = Runner.run(agent, QUESTION, run_config=reduction.run_config())
                result = asyncio.run(run)
    finally:
        instrumentor.uninstrument()
    assert result.final_output == ANSWER
    conversation = [*server.requests[-1]["messages"], replies[-1].message()]
    usage = [(r.prompt_tokens, r.completion_tokens) for r in replies]
    check_lab(lab, "logs-agents", conversation, reduction.events, backend, usage)
