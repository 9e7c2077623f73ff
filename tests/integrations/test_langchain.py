"""The LangChain adapter, run in LangChain's own agent loop (``create_agent``) offline.

The model is a small ``BaseChatModel`` that answers a script and records every list of
messages it is sent; the tools read real files of this repository (50 to 200 KB each).
LangChain is a dev dependency: a missing LangChain fails this module, it is not skipped.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import ToolCallRequest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from reduction_app.engine import (
    ChatModelAgentState,
    InMemoryBackend,
    LocalFileBackend,
    Media,
    Message,
    ReductionConfig,
    ReductionEvent,
    ToolArgument,
    ToolCall,
    ToolContext,
    ToolInfo,
    ToolOutputPart,
    ToolReductionConfig,
    ToolResult,
    WriteRequest,
    new,
)
from reduction_app.engine.inspect import is_clear_placeholder
from reduction_app.integrations.langchain import ReductionMiddleware
from tests.otel_support import expected_span_events, reduction_span_events, tracing

REPO = Path(__file__).resolve().parents[2]
SYSTEM = "You are a coding agent working in the Reduction Lab repository."
QUESTION = "What does the clear phase promise, and how is it measured?"
SAVED_TO = re.compile(r"saved to: (\S+)")

# Truncated above 20,000 characters (a notice is then some 5,000 tokens); cleared above
# 12,000 tokens, keeping the latest round: some model calls get a clear pass, some not.
CONFIG = {"max_length_for_trunc": 20_000, "max_tokens_for_clear": 12_000}


# The tools: real files of this repository --------------------------------------------


def _engine_index() -> str:
    """The engine's modules as JSON, a line each, until past 100 KB (sorted: the same every
    run)."""
    files: dict[str, list[str]] = {}
    for path in sorted((REPO / "reduction_app" / "engine").glob("*.py")):
        files[path.name] = path.read_text(encoding="utf-8").splitlines()
        if len(json.dumps(files, indent=1)) > 100_000:
            break
    return json.dumps(files, indent=1)


@tool
def read_source(path: str) -> str:
    """Read a file of the repository, by its path from the repository's root."""
    return (REPO / path).read_text(encoding="utf-8")


@tool
def list_dir(path: str) -> str:
    """List a folder of the repository."""
    return "\n".join(sorted(p.name for p in (REPO / path).iterdir()))


@tool
def engine_index() -> str:
    """Every module of the engine, as JSON."""
    return _engine_index()


TOOLS: list[BaseTool] = [read_source, list_dir, engine_index]


# The model: a script, and a record of what it was sent -------------------------------


def _path_in(message: BaseMessage) -> str:
    found = SAVED_TO.search(str(message.content))
    assert found, f"no offload path in {str(message.content)[:200]!r}"
    return found.group(1)


def _call(
    turn: int, name: str, args: dict[str, Any], *more: tuple[str, dict[str, Any]]
) -> AIMessage:
    calls = [(name, args), *more]
    return AIMessage(
        "",
        id=f"ai_{turn}",
        tool_calls=[
            {"id": f"call_{turn}_{i}", "name": n, "args": a} for i, (n, a) in enumerate(calls)
        ],
    )


def script(turn: int, messages: Sequence[BaseMessage]) -> AIMessage:
    """The model's reply at ``turn`` (from 1); it reads paths out of what it was sent."""
    if turn == 1:
        return _call(turn, "read_source", {"path": "docs/behaviour.md"})
    if turn == 2:
        return _call(turn, "read_source", {"path": "docs/simulator.md"})
    if turn == 3:
        return _call(turn, "read_file", {"path": _path_in(messages[-1]), "limit": 40})
    if turn == 4:
        return _call(turn, "read_source", {"path": "benchmarks/README.md"})
    if turn == 5:
        return _call(
            turn, "list_dir", {"path": "reduction_app/engine"}, ("list_dir", {"path": "docs"})
        )
    if turn == 6:
        return _call(turn, "read_source", {"path": "tests/app/reductions/test_api.py"})
    if turn == 7:
        return _call(turn, "engine_index", {})
    if turn == 8:
        cleared = next(m for m in messages if is_clear_placeholder(str(m.content)))
        return _call(turn, "read_file", {"path": _path_in(cleared), "limit": 20})
    if turn == 9:
        return _call(turn, "read_source", {"path": "docs/behaviour.md"})
    if turn == 10:
        notice = next(
            m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id == "call_7_0"
        )
        return _call(turn, "read_file", {"path": _path_in(notice), "offset": 100, "limit": 30})
    return AIMessage(
        "The clear phase keeps the latest rounds and offloads the rest.", id=f"ai_{turn}"
    )


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers ``script`` and keeps every list of messages it gets."""

    reply: Callable[[int, Sequence[BaseMessage]], AIMessage] = script
    received: list[list[BaseMessage]] = Field(default_factory=list)
    tool_names: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        self.tool_names.append([convert_to_openai_tool(t)["function"]["name"] for t in tools])
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        message = self.reply(len(self.received), messages)
        return ChatResult(generations=[ChatGeneration(message=message)])


def _run(
    tmp_path: Path, *, run_async: bool = False, **settings: Any
) -> tuple[ScriptedChatModel, ReductionMiddleware, dict[str, Any]]:
    model = ScriptedChatModel()
    middleware = ReductionMiddleware(
        ReductionConfig(**CONFIG, **settings), backend=LocalFileBackend(tmp_path)
    )
    agent = create_agent(model, TOOLS, system_prompt=SYSTEM, middleware=[middleware])
    given = {"messages": [HumanMessage(QUESTION)]}
    result = asyncio.run(agent.ainvoke(given)) if run_async else agent.invoke(given)
    return model, middleware, result


def _outputs(result: dict[str, Any]) -> dict[str, str]:
    """Each tool call's original output, by call id, worked out from its arguments."""
    out: dict[str, str] = {}
    for message in result["messages"]:
        for call in getattr(message, "tool_calls", []):
            name, args = call["name"], call["args"]
            if name == "read_source":
                out[call["id"]] = (REPO / args["path"]).read_text(encoding="utf-8")
            elif name == "engine_index":
                out[call["id"]] = _engine_index()
            elif name == "list_dir":
                out[call["id"]] = list_dir.invoke(args)
    return out


def _results_seen(model: ScriptedChatModel) -> dict[str, str]:
    """Each tool result as the model first saw it (before any clear), by call id."""
    seen: dict[str, str] = {}
    for received in model.received:
        for m in received:
            if isinstance(m, ToolMessage) and m.tool_call_id not in seen:
                seen[m.tool_call_id] = str(m.content)
    return seen


def _dump(message: BaseMessage) -> str:
    return message.model_dump_json()


# The tests ---------------------------------------------------------------------------


def _expected_read(text: str, offset: int, limit: int) -> str:
    """What read_file returns, worked out from the original text: numbered lines, then
    where to read on."""
    lines = text.removesuffix("\n").split("\n")  # a final newline ends the last line
    shown = lines[offset : offset + limit]
    body = "".join(f"{offset + i + 1}\t{line}\n" for i, line in enumerate(shown))
    left = len(lines) - offset - len(shown)
    return body + f"[{left} more lines; read on with offset={offset + len(shown)}]\n"


def _summaries(events: list[ReductionEvent]) -> list[ReductionEvent]:
    return [e for e in events if e.phase == "clear" and e.kind == "summary"]


def _pairing_problems(messages: Sequence[BaseMessage]) -> list[str]:
    """Calls without their result, or results without their call, in one model input."""
    problems, open_calls = [], set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                problems.append(f"result without a call: {message.tool_call_id}")
            open_calls.discard(message.tool_call_id)
            continue
        if open_calls:
            problems.append(f"calls without results: {sorted(open_calls)}")
            open_calls = set()
        if isinstance(message, AIMessage):
            open_calls = {call["id"] for call in message.tool_calls}
    return problems + ([f"calls without results: {sorted(open_calls)}"] if open_calls else [])


def test_reduction_middleware_reduces_what_the_model_is_sent(tmp_path: Path) -> None:
    """Over 11 model calls the model gets truncation notices and clear placeholders as
    ToolMessages, every call with its result, and the agent's state keeps them."""
    model, middleware, result = _run(tmp_path)
    assert len(model.received) == 11
    assert model.tool_names[0] == ["read_file", "read_source", "list_dir", "engine_index"]
    truncated = {e.call_id: e for e in middleware.events if e.phase == "truncation"}
    assert sorted(truncated) == [
        "call_1_0",
        "call_2_0",
        "call_4_0",
        "call_6_0",
        "call_7_0",
        "call_9_0",
    ]
    for received in model.received:
        assert _pairing_problems(received) == []
        assert isinstance(received[0], SystemMessage)
        assert received[0].content == SYSTEM
        for message in received:
            if isinstance(message, ToolMessage) and message.tool_call_id in truncated:
                content = str(message.content)
                path = truncated[message.tool_call_id].offload_path
                assert content.startswith("<persisted-output>")
                assert f"saved to: {path}" in content
    # Two passes cleared, each all but the latest round.
    applied = [i for i, e in enumerate(_summaries(middleware.events)) if e.reason == "applied"]
    assert applied == [4, 7]
    cleared = {
        m.tool_call_id
        for m in model.received[7]
        if isinstance(m, ToolMessage) and is_clear_placeholder(str(m.content))
    }
    assert cleared == {
        "call_1_0",
        "call_2_0",
        "call_3_0",
        "call_4_0",
        "call_5_0",
        "call_5_1",
        "call_6_0",
    }
    # The state holds what the model was sent: the last call's messages, then the answer.
    assert [_dump(m) for m in result["messages"][:-1]] == [_dump(m) for m in model.received[-1][1:]]
    assert result["messages"][-1].content.startswith("The clear phase keeps")


def test_reduction_middleware_offloads_are_the_originals_and_read_back(tmp_path: Path) -> None:
    """Each offload file holds what it replaced, byte for byte; read_file, called by the
    model through the adapter, pages through it."""
    model, middleware, result = _run(tmp_path)
    outputs = _outputs(result)
    seen = _results_seen(model)
    files = 0
    for event in middleware.events:
        if event.kind != "tool":
            continue
        stored = (tmp_path / event.offload_path.lstrip("/")).read_bytes()
        # A truncated output is offloaded whole, and clearing it points at that file.
        original = (
            outputs[event.call_id]
            if event.call_id in outputs and event.offload_path.startswith("/tmp/trunc/")
            else seen[event.call_id]
        )
        assert stored == original.encode("utf-8")
        files += 1
    assert files == 13
    assert (
        min(len(outputs[c]) for c in ("call_1_0", "call_2_0", "call_4_0", "call_6_0", "call_7_0"))
        >= 50_000
    )
    assert max(len(o) for o in outputs.values()) <= 200_000
    reads = {
        m.tool_call_id: m.content
        for m in result["messages"]
        if isinstance(m, ToolMessage) and m.name == "read_file"
    }
    final = {m.tool_call_id: m for m in model.received[-1] if isinstance(m, ToolMessage)}
    assert final["call_8_0"].content == _expected_read(outputs["call_1_0"], 0, 20)
    assert final["call_10_0"].content == _expected_read(outputs["call_7_0"], 100, 30)
    assert model.received[3][-1].content == _expected_read(outputs["call_2_0"], 0, 40)
    assert "call_3_0" in reads


def test_reduction_middleware_keeps_prefixes_byte_identical(tmp_path: Path) -> None:
    """Between model calls with no clear applied, the earlier input is a byte-identical
    prefix of the next; an applied pass changes only the results it cleared."""
    model, middleware, _ = _run(tmp_path)
    summaries = _summaries(middleware.events)
    assert len(summaries) == len(model.received)
    cleared_in: dict[int, set[str]] = {}
    pass_no = 0
    for event in middleware.events:
        if event.phase == "clear" and event.kind == "summary":
            pass_no += 1
        elif event.phase == "clear":
            cleared_in.setdefault(pass_no, set()).add(event.call_id)
    for k in range(1, len(model.received)):
        before = [_dump(m) for m in model.received[k - 1]]
        after = [_dump(m) for m in model.received[k]]
        if summaries[k].reason != "applied":
            assert after[: len(before)] == before, k
            continue
        changed = {
            model.received[k][i].tool_call_id  # type: ignore[union-attr]
            for i in range(len(before))
            if before[i] != after[i]
        }
        assert changed == cleared_in[k], k
        for i in range(len(before)):
            old, new_ = model.received[k - 1][i], model.received[k][i]
            if before[i] != after[i]:
                assert isinstance(new_, ToolMessage) and isinstance(old, ToolMessage)
                assert (new_.id, new_.tool_call_id, new_.name) == (
                    old.id,
                    old.tool_call_id,
                    old.name,
                )
                assert is_clear_placeholder(str(new_.content))


def _engine_events(
    model: ScriptedChatModel,
    result: dict[str, Any],
    tools: Sequence[BaseTool],
    **settings: Any,
) -> list[ReductionEvent]:
    """The events of the engine used directly over the same conversation: the same tool
    outputs and model replies, the clear phase before each model call."""
    events: list[ReductionEvent] = []
    engine = new(
        ReductionConfig(**CONFIG, **settings, backend=InMemoryBackend(), on_event=events.append)
    )
    infos = [
        ToolInfo(name=f["name"], description=f["description"], parameters=f["parameters"])
        for f in (convert_to_openai_tool(t)["function"] for t in tools)
    ]
    originals = _outputs(result)
    replies = [m for m in result["messages"] if isinstance(m, AIMessage)]
    read_backs = _results_seen(model)
    messages: list[Message] = [Message.system(SYSTEM), Message.user(QUESTION)]
    for reply in replies:
        state = engine.before_model_rewrite_state(
            ChatModelAgentState(messages=messages, tool_infos=infos)
        )
        messages = list(state.messages)
        calls = tuple(
            ToolCall(id=c["id"], name=c["name"], arguments=json.dumps(c["args"]))
            for c in reply.tool_calls
        )
        messages.append(Message.assistant(str(reply.content), tool_calls=calls))
        for call in calls:
            output = originals[call.id] if call.id in originals else read_backs[call.id]
            wrapped = engine.wrap_invokable_tool_call(
                lambda _, out=output: out, ToolContext(name=call.name, call_id=call.id)
            )
            messages.append(Message.tool(wrapped(call.arguments), call.id, call.name))
    return events


def test_reduction_middleware_events_are_the_engines(tmp_path: Path) -> None:
    model, middleware, result = _run(tmp_path)
    assert middleware.events == _engine_events(model, result, [*middleware.tools, *TOOLS])


def test_reduction_middleware_runs_under_ainvoke(tmp_path: Path) -> None:
    """The async agent loop truncates, clears and reads back as the sync one does."""
    sync_dir, async_dir = tmp_path / "sync", tmp_path / "async"
    _, sync_middleware, sync_result = _run(sync_dir)
    model, middleware, result = _run(async_dir, run_async=True)
    assert middleware.events == sync_middleware.events
    assert middleware.events == _engine_events(model, result, [*middleware.tools, *TOOLS])
    assert [m.content for m in result["messages"]] == [m.content for m in sync_result["messages"]]
    stored = sorted(p.relative_to(async_dir) for p in async_dir.rglob("*") if p.is_file())
    assert stored == sorted(p.relative_to(sync_dir) for p in sync_dir.rglob("*") if p.is_file())
    for path in stored:
        assert (async_dir / path).read_bytes() == (sync_dir / path).read_bytes()


def test_reduction_middleware_keeps_a_pass_that_adds_messages(tmp_path: Path) -> None:
    """With the offload manifest a pass adds a message: the state's list is replaced
    whole, and stays the model's input with every call paired."""
    model, middleware, result = _run(tmp_path, clear_offload_manifest=True)
    assert len(model.received) == 11
    for received in model.received:
        assert _pairing_problems(received) == []
    manifests = [m for m in model.received[-1] if isinstance(m, HumanMessage)][1:]
    assert len(manifests) == 1
    # One manifest, the second pass's: it lists the results of both passes.
    assert "/tmp/trunc/call_1_0" in str(manifests[0].content)
    assert "/tmp/trunc/call_6_0" in str(manifests[0].content)
    assert [_dump(m) for m in result["messages"][:-1]] == [_dump(m) for m in model.received[-1][1:]]
    assert len({m.id for m in result["messages"]}) == len(result["messages"])
    expected = _engine_events(
        model, result, [*middleware.tools, *TOOLS], clear_offload_manifest=True
    )
    assert middleware.events == expected


def _request(name: str, call_id: str) -> ToolCallRequest:
    call: Any = {"id": call_id, "name": name, "args": {"page": 1}, "type": "tool_call"}
    return ToolCallRequest(tool_call=call, tool=None, state={}, runtime=None)  # type: ignore[arg-type]


def test_reduction_middleware_truncates_content_blocks() -> None:
    """A list content keeps its blocks: the long text block becomes the notice, the
    image block comes back as the very object it was; sync and async alike, with the
    engine's own events."""
    text = (REPO / "docs" / "behaviour.md").read_text(encoding="utf-8")
    image = {"type": "image_url", "image_url": {"url": "https://example.com/chart.png"}}
    given = ToolMessage(
        [{"type": "text", "text": text}, image], tool_call_id="call_1", name="chart", id="t1"
    )
    backend = InMemoryBackend()
    middleware = ReductionMiddleware(ReductionConfig(**CONFIG), backend=backend)
    out = middleware.wrap_tool_call(_request("chart", "call_1"), lambda _: given)

    async def handler(_: ToolCallRequest) -> ToolMessage:
        return given.model_copy(update={"tool_call_id": "call_2"})

    async_out = asyncio.run(middleware.awrap_tool_call(_request("chart", "call_2"), handler))
    for result, call_id in ((out, "call_1"), (async_out, "call_2")):
        assert isinstance(result, ToolMessage)
        assert (result.id, result.tool_call_id, result.name) == ("t1", call_id, "chart")
        assert isinstance(result.content, list)
        assert result.content[1] is given.content[1]
        notice = result.content[0]
        assert isinstance(notice, dict)
        assert notice["text"].startswith("<persisted-output>")
        assert f"saved to: /tmp/trunc/{call_id}" in notice["text"]
    events: list[ReductionEvent] = []
    engine = new(ReductionConfig(**CONFIG, backend=InMemoryBackend(), on_event=events.append))
    parts = ToolResult(
        parts=(
            ToolOutputPart.of_text(text),
            ToolOutputPart(type="image", media=Media(url="https://example.com/chart.png")),
        )
    )
    for call_id in ("call_1", "call_2"):
        wrapped = engine.wrap_enhanced_invokable_tool_call(
            lambda _: parts, ToolContext(name="chart", call_id=call_id)
        )
        wrapped(ToolArgument(text='{"page": 1}'))
    assert middleware.events == events
    small = ToolMessage("three lines", tool_call_id="call_3", name="chart", id="t3")
    assert middleware.wrap_tool_call(_request("chart", "call_3"), lambda _: small) is small


def test_langchain_agent_example_prints_what_it_reduced(tmp_path: Path) -> None:
    """examples/langchain_agent.py runs offline and says what it truncated, cleared and
    read back; its offloads are the files it read."""
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "examples" / "langchain_agent.py"),
            "--offload-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    behaviour = (REPO / "docs" / "behaviour.md").read_text(encoding="utf-8")
    assert lines[1].startswith(f"  truncated read_source call_1: {len(behaviour):,} -> "), lines[1]
    assert lines[1].endswith("chars, original saved to /tmp/trunc/call_1")
    assert any(line.startswith("  cleared call_1: ") for line in lines)
    assert sum(line.endswith("tokens (applied)") for line in lines) == 1
    first = behaviour.split("\n", 3)[:3]
    start = lines.index("read back through read_file:")
    assert lines[start + 1 : start + 4] == [f"{i}\t{line}" for i, line in enumerate(first, 1)]
    assert lines[-2] == f"answer: The behaviour page starts with {first[0]!r}."
    assert lines[-1] == f"offloads in {tmp_path}: 4 files"
    assert (tmp_path / "tmp" / "trunc" / "call_1").read_bytes() == behaviour.encode("utf-8")


def test_reduction_middleware_read_file_tool_pages_and_reports_missing_files() -> None:
    """read_file reads the config's backend or a tool's own, by numbered lines; a path
    no backend holds is an error the model reads."""
    shared, own = InMemoryBackend(), InMemoryBackend()
    shared.write(WriteRequest(file_path="/tmp/trunc/call_1", content="a\nb\r\nc\n"))
    own.write(WriteRequest(file_path="/tmp/trunc/call_2", content="x\ny"))
    config = ReductionConfig(
        backend=shared,
        read_file_tool_name="cat_file",
        tool_config={"grep": ToolReductionConfig(backend=own)},
    )
    (read_file,) = ReductionMiddleware(config).tools
    assert read_file.name == "cat_file"
    args = {"path": "/tmp/trunc/call_1", "offset": 1, "limit": 1}
    assert read_file.invoke(args) == "2\tb\n[1 more lines; read on with offset=2]\n"
    assert asyncio.run(read_file.ainvoke({"path": "/tmp/trunc/call_2"})) == "1\tx\n2\ty\n"
    assert read_file.invoke({"path": "/tmp/trunc/call_3"}) == "file not found: /tmp/trunc/call_3"


def test_reduction_middleware_events_are_span_events(tmp_path: Path) -> None:
    """Each event of the run is a span event on the span around it, named and labelled."""
    with tracing() as (provider, exporter):
        model = ScriptedChatModel()
        middleware = ReductionMiddleware(
            ReductionConfig(**CONFIG),
            backend=LocalFileBackend(tmp_path),
            config_name="coding",
            conversation_id="thread-1",
        )
        agent = create_agent(model, TOOLS, system_prompt=SYSTEM, middleware=[middleware])
        with provider.get_tracer("tests").start_as_current_span("agent run"):
            agent.invoke({"messages": [HumanMessage(QUESTION)]})
        spans = exporter.get_finished_spans()
    found = reduction_span_events(spans)
    assert found == expected_span_events(
        middleware.events, config_name="coding", conversation_id="thread-1"
    )
    assert {name for name, _ in found} == {"reduction.truncation", "reduction.clear"}
    # The first model call is below the threshold: its summary comes first.
    assert found[0][1]["reduction.reason"] == "below_threshold"
    first = next(a for name, a in found if name == "reduction.truncation")
    assert (first["reduction.call_id"], first["reduction.tool_name"]) == ("call_1_0", "read_source")
    assert first["reduction.chars_before"] == len(
        (REPO / "docs/behaviour.md").read_text(encoding="utf-8")
    )
    assert (first["reduction.config"], first["reduction.conversation_id"]) == ("coding", "thread-1")
