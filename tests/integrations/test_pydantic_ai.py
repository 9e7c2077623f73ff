"""The pydantic-ai adapter in pydantic-ai's own agent loop, offline.

A ``FunctionModel`` scripts the tool calls of a coding agent reading this repository's
files (outputs of 50 to 200 KB) and records every message list it is sent, serialized
as it arrives. The same conversation is then replayed through the engine directly, and
the two must give the same events.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, RunContext
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
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
from pydantic_ai.models.test import TestModel

from reduction_app.engine import (
    ChatModelAgentState,
    InMemoryBackend,
    LocalFileBackend,
    Message,
    ReductionConfig,
    ReductionEvent,
    ToolCall,
    ToolContext,
    ToolInfo,
    new,
)
from reduction_app.engine.inspect import is_clear_placeholder, truncation_file_path
from reduction_app.integrations.pydantic_ai import Reduction
from tests.otel_support import (
    expected_span_events,
    reduction_span_events,
    tracing,
)

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = "You are a coding agent working in the Reduction Lab repository."
FIRST_PROMPT = "Summarise the engine's documentation."
SECOND_PROMPT = "Now look at the behaviour page once more."
SAVED_TO = re.compile(r"saved to: (\S+)")

# Each model call answers with one step: (tool, arguments), ("read_back", kind) to read
# the latest offload of that kind back, or ("answer", text).
FIRST_RUN: list[tuple[str, Any]] = [
    ("read_source", {"path": "docs/behaviour.md"}),
    ("outline", {"path": "docs/simulator.md"}),
    ("read_back", "trunc"),
    ("line_count", {"path": "docs/engine.md"}),
    ("read_source", {"path": "benchmarks/README.md"}),
    ("read_source", {"path": "tests/app/reductions/test_api.py"}),
    ("read_back", "clear"),
    ("outline", {"path": "docs/behaviour.md"}),
    ("read_source", {"path": "docs/simulator.md"}),
    ("read_source", {"path": "benchmarks/README.md"}),
    ("answer", "The engine truncates large tool outputs and clears old ones."),
]
SECOND_RUN: list[tuple[str, Any]] = [
    ("read_source", {"path": "docs/behaviour.md"}),
    ("read_back", "trunc"),
    ("answer", "Read it again."),
]


def config(backend: Any) -> ReductionConfig:
    # Outputs of 50-200 KB against a 20,000-character limit: every big one is truncated to
    # about 5,000 tokens, so the conversation passes 12,000 tokens every second or third
    # call, and calls with no clear pass in between come between those that clear.
    return ReductionConfig(
        backend=backend, max_length_for_trunc=20_000, max_tokens_for_clear=12_000
    )


def read_source(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def outline(path: str) -> dict[str, Any]:
    lines = read_source(path).split("\n")
    return {"path": path, "lines": [{"n": n, "text": t} for n, t in enumerate(lines, 1)]}


def line_count(path: str) -> dict[str, Any]:
    return {"path": path, "lines": read_source(path).count("\n")}


FUNCTIONS = {"read_source": read_source, "outline": outline, "line_count": line_count}


def as_sent(name: str, value: Any) -> str:
    """A tool's value as pydantic-ai sends it to the model."""
    return value if isinstance(value, str) else ToolReturnPart(name, value).model_response_str()


@dataclass
class Harness:
    """One scripted conversation: the agent, and everything the model was sent."""

    tmp_path: Path
    style: str = "capability"
    """``capability``: ``capabilities=[reduction]`` and tools registered the ordinary way;
    ``explicit``: the toolsets wrapped by hand and the clear-only capability."""
    reduction: Reduction = field(init=False)
    backend: LocalFileBackend = field(init=False)
    script: list[tuple[str, Any]] = field(default_factory=lambda: FIRST_RUN + SECOND_RUN)
    sent: list[list[bytes]] = field(default_factory=list)
    """Per model call, each message as ``ModelMessagesTypeAdapter`` dumps it."""
    sent_messages: list[list[ModelMessage]] = field(default_factory=list)
    events_before_call: list[int] = field(default_factory=list)
    originals: dict[str, str] = field(default_factory=dict)
    """Each tool call's output as pydantic-ai would send it, unreduced, by call id."""
    tools: list[ToolInfo] = field(default_factory=list)
    """The tools the model is offered, as the engine counts them."""

    def __post_init__(self) -> None:
        self.backend = LocalFileBackend(self.tmp_path / "offload")
        self.reduction = Reduction(config(self.backend))

    def agent(self) -> Agent[None, str]:
        def tool(name: str) -> Any:
            function = FUNCTIONS[name]

            def run(ctx: RunContext[None], path: str) -> Any:
                value = function(path)
                self.originals[ctx.tool_call_id or ""] = as_sent(name, value)
                return value

            run.__name__ = name
            return run

        if self.style == "capability":
            return Agent(
                FunctionModel(self.model),
                system_prompt=SYSTEM,
                tools=[tool(name) for name in FUNCTIONS],
                capabilities=[self.reduction],
            )
        return Agent(
            FunctionModel(self.model),
            system_prompt=SYSTEM,
            toolsets=[
                self.reduction.wrap_tools(tool(name) for name in FUNCTIONS),
                self.reduction.read_file_toolset,
            ],
            capabilities=[self.reduction.capability],
        )

    def model(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.sent.append([ModelMessagesTypeAdapter.dump_json([m]) for m in messages])
        self.sent_messages.append(list(messages))
        self.events_before_call.append(len(self.reduction.events))
        self.tools = [
            ToolInfo(
                name=t.name, description=t.description or "", parameters=t.parameters_json_schema
            )
            for t in (*info.function_tools, *info.output_tools)
        ]
        turn = len(self.sent)
        kind, arg = self.script[turn - 1]
        if kind == "answer":
            return ModelResponse(parts=[TextPart(arg)])
        if kind == "read_back":
            path = latest_offload(messages, arg)
            args = {"path": path, "offset": 0, "limit": 5}
            return ModelResponse(
                parts=[ToolCallPart("read_file", args, tool_call_id=f"call_{turn}")]
            )
        return ModelResponse(parts=[ToolCallPart(kind, arg, tool_call_id=f"call_{turn}")])


def returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]


def latest_offload(messages: list[ModelMessage], kind: str) -> str:
    """The path the model reads: of the latest truncation notice, or clear placeholder."""
    for part in reversed(returns(messages)):
        text = str(part.content)
        if kind == "trunc" and (path := truncation_file_path(text)):
            return path
        if kind == "clear" and is_clear_placeholder(text) and (found := SAVED_TO.search(text)):
            return found.group(1)
    raise AssertionError(f"the model was shown no {kind} offload")


def run_sync(h: Harness) -> None:
    agent = h.agent()
    first = agent.run_sync(FIRST_PROMPT)
    assert first.output == FIRST_RUN[-1][1]
    second = agent.run_sync(SECOND_PROMPT, message_history=first.all_messages())
    assert second.output == SECOND_RUN[-1][1]


async def run_async(h: Harness) -> None:
    agent = h.agent()
    first = await agent.run(FIRST_PROMPT)
    assert first.output == FIRST_RUN[-1][1]
    second = await agent.run(SECOND_PROMPT, message_history=first.all_messages())
    assert second.output == SECOND_RUN[-1][1]


@pytest.mark.parametrize("style", ["capability", "explicit"])
def test_reduction_in_run_sync(tmp_path: Path, style: str) -> None:
    h = Harness(tmp_path, style)
    run_sync(h)
    check(h)


@pytest.mark.parametrize("style", ["capability", "explicit"])
async def test_reduction_in_async_run(tmp_path: Path, style: str) -> None:
    h = Harness(tmp_path, style)
    await run_async(h)
    check(h)


def check(h: Harness) -> None:
    assert len(h.sent) == len(FIRST_RUN) + len(SECOND_RUN) == 14
    check_model_sees_notices_and_placeholders(h)
    check_pairing(h)
    check_offloads(h)
    check_read_backs(h)
    check_prefixes(h)
    check_same_events_as_engine(h)


def check_model_sees_notices_and_placeholders(h: Harness) -> None:
    seen = [str(p.content) for messages in h.sent_messages for p in returns(messages)]
    assert any(truncation_file_path(text) for text in seen)
    assert any(is_clear_placeholder(text) for text in seen)
    # Every big output reached the model as a notice right after its call.
    for turn, (kind, _) in enumerate(h.script[:-1], 1):
        if kind in ("read_source", "outline"):
            part = returns(h.sent_messages[turn])[-1]
            assert part.tool_call_id == f"call_{turn}"
            assert truncation_file_path(str(part.content)) is not None


def check_pairing(h: Harness) -> None:
    """Every call is answered by the request right after it, and every return has a call."""
    for messages in h.sent_messages:
        called: set[str] = set()
        for i, message in enumerate(messages):
            if isinstance(message, ModelResponse):
                ids = {p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)}
                called |= ids
                if ids:
                    answered = {p.tool_call_id for p in returns(messages[i + 1 : i + 2])}
                    assert answered == ids
        assert {p.tool_call_id for p in returns(messages)} <= called


def offload_file(h: Harness, path: str) -> bytes:
    return (h.tmp_path / "offload" / path.lstrip("/")).read_bytes()


def check_offloads(h: Harness) -> None:
    truncations = [e for e in h.reduction.events if e.phase == "truncation"]
    big = [t for t, (kind, _) in enumerate(h.script, 1) if kind in ("read_source", "outline")]
    assert [e.call_id for e in truncations] == [f"call_{t}" for t in big]
    for event in truncations:
        original = h.originals[event.call_id].encode("utf-8")
        assert 50_000 <= len(original) <= 200_000
        assert offload_file(h, event.offload_path) == original
    clears = [e for e in h.reduction.events if e.phase == "clear" and e.kind == "tool"]
    assert any("/clear/" in e.offload_path for e in clears)
    for event in clears:
        if "/trunc/" in event.offload_path:
            expected = h.originals[event.call_id]  # the placeholder points at the whole output
        else:
            expected = first_seen_return(h, event.call_id)
        assert offload_file(h, event.offload_path) == expected.encode("utf-8")


def first_seen_return(h: Harness, call_id: str) -> str:
    for messages in h.sent_messages:
        for part in returns(messages):
            if part.tool_call_id == call_id:
                return part.model_response_str()
    raise AssertionError(f"no result for {call_id}")


def check_read_backs(h: Harness) -> None:
    read_turns = [t for t, (kind, _) in enumerate(h.script, 1) if kind == "read_back"]
    assert len(read_turns) == 3
    for turn in read_turns:
        call = h.sent_messages[turn][-2]
        assert isinstance(call, ModelResponse)
        path = call.parts[0].args_as_dict()["path"]  # type: ignore[union-attr]
        answer = returns(h.sent_messages[turn])[-1]
        assert answer.tool_call_id == f"call_{turn}"
        lines = offload_file(h, path).decode("utf-8").split("\n")
        if lines[-1] == "":
            lines.pop()  # a final newline starts no line
        total = len(lines)
        expected = "".join(f"{n}\t{line}\n" for n, line in enumerate(lines[:5], 1))
        more = f"[{total - 5} more lines; read on with offset=5]\n" if total > 5 else ""
        assert answer.content == expected + more


def check_prefixes(h: Harness) -> None:
    """Between two model calls the earlier messages go out byte for byte the same, except
    the results a clear pass between them cleared."""
    calm = cleared = 0
    for k in range(len(h.sent) - 1):
        before, after = h.sent[k], h.sent[k + 1]
        between = h.reduction.events[h.events_before_call[k] : h.events_before_call[k + 1]]
        applied = [e for e in between if e.kind == "summary" and e.applied]
        cleared_ids = {e.call_id for e in between if e.phase == "clear" and e.kind == "tool"}
        assert bool(applied) == bool(cleared_ids)
        assert len(after) > len(before)
        changed: set[str] = set()
        for i, dumped in enumerate(before):
            if dumped == after[i]:
                continue
            old, new = h.sent_messages[k][i], h.sent_messages[k + 1][i]
            assert isinstance(old, ModelRequest) and isinstance(new, ModelRequest)
            assert len(old.parts) == len(new.parts)
            for a, b in zip(old.parts, new.parts, strict=True):
                if ModelMessagesTypeAdapter.dump_json([ModelRequest([a])]) == (
                    ModelMessagesTypeAdapter.dump_json([ModelRequest([b])])
                ):
                    continue
                assert isinstance(a, ToolReturnPart) and isinstance(b, ToolReturnPart)
                assert (a.tool_call_id, a.tool_name) == (b.tool_call_id, b.tool_name)
                assert is_clear_placeholder(str(b.content))
                changed.add(b.tool_call_id)
        assert changed == cleared_ids
        if applied:
            cleared += 1
        else:
            calm += 1
    assert calm >= 5 and cleared >= 3


def check_same_events_as_engine(h: Harness) -> None:
    """The engine used directly on the same conversation gives the same events."""
    events: list[ReductionEvent] = []
    mw = new(dataclasses.replace(config(InMemoryBackend()), on_event=events.append))
    messages: list[Any] = [Message.system(SYSTEM), Message.user(FIRST_PROMPT)]
    for turn, (kind, arg) in enumerate(h.script, 1):
        if turn == len(FIRST_RUN) + 1:
            messages.append(Message.user(SECOND_PROMPT))
        state = ChatModelAgentState(messages=messages, tool_infos=h.tools)
        messages = list(mw.before_model_rewrite_state(state).messages)
        if kind == "answer":
            messages.append(Message.assistant(arg))
            continue
        call = h.sent_messages[turn][-2].parts[0]
        assert isinstance(call, ToolCallPart)
        call_id, name, arguments = call.tool_call_id, call.tool_name, call.args_as_json_str()
        messages.append(
            Message.assistant(tool_calls=(ToolCall(id=call_id, name=name, arguments=arguments),))
        )
        if kind == "read_back":
            output = first_seen_return(h, call_id)  # the read tool is not truncated
        else:
            original = h.originals[call_id]
            output = mw.wrap_invokable_tool_call(
                lambda _, original=original: original, ToolContext(name=name, call_id=call_id)
            )(arguments)
        messages.append(Message.tool(output, tool_call_id=call_id, tool_name=name))
    assert h.reduction.events == events


def test_example_runs(tmp_path: Path) -> None:
    """examples/pydantic_ai_agent.py runs offline and says what it reduced."""
    example = ROOT / "examples" / "pydantic_ai_agent.py"
    done = subprocess.run(
        [sys.executable, str(example), "--offload-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "truncated" in done.stdout
    assert "cleared" in done.stdout
    assert "done: 4 outputs truncated, 2 results cleared" in done.stdout
    assert "read back through read_file" in done.stdout
    # The file read back is the whole of the last file the agent read.
    offloaded = tmp_path / "tmp" / "trunc" / "call_4"
    assert offloaded.read_text(encoding="utf-8") == read_source("docs/api.md")


async def test_history_processor_keeps_unchanged_parts_identical() -> None:
    """Only the cleared return is new; it keeps its call id and tool name."""
    seen: list[ReductionEvent] = []
    reduction = Reduction(
        ReductionConfig(backend=InMemoryBackend(), max_tokens_for_clear=100), on_event=seen.append
    )
    given: list[ModelMessage] = [
        ModelRequest([SystemPromptPart(SYSTEM), UserPromptPart(FIRST_PROMPT)]),
        ModelResponse([TextPart("Reading."), ToolCallPart("read_source", {"path": "a"}, "c1")]),
        ModelRequest([ToolReturnPart("read_source", "a" * 2_000, "c1")]),
        ModelResponse([ToolCallPart("read_source", {"path": "b"}, "c2")]),
        ModelRequest([ToolReturnPart("read_source", "b" * 2_000, "c2")]),
    ]
    out = await reduction.history_processor(list(given))
    assert [m is g for m, g in zip(out, given, strict=True)] == [True, True, False, True, True]
    assert isinstance(out[2], ModelRequest)
    (part,) = out[2].parts
    assert isinstance(part, ToolReturnPart)
    assert (part.tool_call_id, part.tool_name) == ("c1", "read_source")
    assert part.content == (
        "<persisted-output>Tool result saved to: /tmp/clear/c1\n"
        "Use read_file to view</persisted-output>"
    )
    assert reduction.config.backend.read("/tmp/clear/c1") == "a" * 2_000  # type: ignore[union-attr]
    assert [(e.kind, e.call_id) for e in reduction.events] == [("tool", "c1"), ("summary", "")]
    assert seen == reduction.events
    # Sent back (as pydantic-ai does), nothing changes any more.
    again = await reduction.history_processor(list(out))
    assert all(a is b for a, b in zip(again, out, strict=True)) and len(again) == len(out)


async def test_structured_return_under_the_limit_is_kept_as_is() -> None:
    reduction = Reduction(ReductionConfig(backend=InMemoryBackend()))
    value = {"path": "docs/engine.md", "lines": 3}
    kept = await reduction.truncate(value, tool_name="line_count", call_id="c1", arguments="{}")
    assert kept is value
    big = {"lines": ["x" * 100] * 600}
    notice = await reduction.truncate(big, tool_name="outline", call_id="c2", arguments="{}")
    assert truncation_file_path(notice) == "/tmp/trunc/c2"
    assert reduction.config.backend.read("/tmp/trunc/c2") == as_sent("outline", big)  # type: ignore[union-attr]


def grep(pattern: str) -> str:
    """Search the repository."""
    return "".join(f"src/module_{n}.py:{n}: {pattern} = {n}\n" for n in range(8_000))[:176_670]


def test_capability_truncates_a_tool_registered_the_ordinary_way() -> None:
    """``tools=[grep]`` with the capability: pydantic-ai's TestModel calls every tool,
    and grep's 176,670 characters reach it as the notice, saved whole first."""
    backend = InMemoryBackend()
    reduction = Reduction(ReductionConfig(max_length_for_trunc=20_000), backend=backend)
    model = TestModel(call_tools=["grep"])
    result = Agent(model, tools=[grep], capabilities=[reduction]).run_sync("Find TODOs")
    [part] = [
        p
        for m in result.all_messages()
        for p in getattr(m, "parts", [])
        if isinstance(p, ToolReturnPart)
    ]
    text = str(part.content)
    path = truncation_file_path(text)
    assert path == f"/tmp/trunc/{part.tool_call_id}"
    assert len(text) < 20_500
    assert backend.read(path) == grep("a")
    assert len(backend.read(path)) == 176_670
    [event] = [e for e in reduction.events if e.phase == "truncation"]
    assert (event.tool_name, event.chars_before) == ("grep", 176_670)
    assert [t.name for t in model.last_model_request_parameters.function_tools] == [  # type: ignore[union-attr]
        "grep",
        "read_file",
    ]


def test_one_agent_serves_many_conversations(tmp_path: Path) -> None:
    """Each conversation has its own engine state; a run continued from a conversation's
    messages goes on with that conversation's."""
    reduction = Reduction(ReductionConfig(backend=InMemoryBackend(), max_tokens_for_clear=100))
    agent = Agent(TestModel(call_tools=["grep"]), tools=[grep], capabilities=[reduction])
    first = agent.run_sync("one")
    second = agent.run_sync("two")
    assert first.conversation_id != second.conversation_id
    state = reduction.conversation(first.conversation_id)
    assert state is not reduction.conversation(second.conversation_id)
    events = len(state.events)
    agent.run_sync("one again", message_history=first.all_messages())
    assert reduction.conversation(first.conversation_id) is state
    assert len(state.events) > events
    assert sorted(reduction.events, key=id) == sorted(
        [*state.events, *reduction.conversation(second.conversation_id).events], key=id
    )


def test_reduction_takes_backend_and_on_event() -> None:
    backend = InMemoryBackend()
    seen: list[ReductionEvent] = []
    reduction = Reduction(backend=backend, on_event=seen.append)
    assert reduction.config.backend is backend
    assert reduction.config.max_length_for_trunc == ReductionConfig().max_length_for_trunc
    asyncio.run(reduction.truncate("x" * 60_000, tool_name="grep", call_id="c1", arguments="{}"))
    assert seen == reduction.events and [e.call_id for e in seen] == ["c1"]


def test_events_are_span_events_on_pydantic_ais_own_spans() -> None:
    """With the agent instrumented, each event lands on the span pydantic-ai has open (the
    tool's for a truncation, the run's for a clear pass), labelled with the conversation."""
    with tracing() as (provider, exporter):
        reduction = Reduction(
            ReductionConfig(max_length_for_trunc=20_000, max_tokens_for_clear=100),
            backend=InMemoryBackend(),
            config_name="grep-heavy",
        )
        agent = Agent(
            TestModel(call_tools=["grep"]),
            tools=[grep],
            capabilities=[
                Instrumentation(InstrumentationSettings(tracer_provider=provider)),
                reduction,
            ],
        )
        result = agent.run_sync("Find TODOs")
        spans = exporter.get_finished_spans()
    found = reduction_span_events(spans)
    assert found == expected_span_events(
        reduction.events, config_name="grep-heavy", conversation_id=result.conversation_id
    )
    names = [name for name, _ in found]
    assert "reduction.truncation" in names and "reduction.clear" in names
    [truncation] = [a for name, a in found if name == "reduction.truncation"]
    assert (truncation["reduction.tool_name"], truncation["reduction.chars_before"]) == (
        "grep",
        176_670,
    )
    [tool_span] = [s for s in spans if any(e.name == "reduction.truncation" for e in s.events)]
    assert "grep" in tool_span.name
