"""The OpenAI Agents SDK adapter, through the SDK's own agent loop (``Runner.run``) with a
scripted model: no network, tracing off."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, Runner, ToolOutputText, function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem
from agents.mcp import MCPServerStdio
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from reduction_app.engine import (
    AgenticMessage,
    ChatModelAgentState,
    LocalFileBackend,
    ReductionConfig,
    ReductionEvent,
    ToolContext,
    ToolInfo,
    ToolReductionConfig,
    WriteRequest,
    inspect,
    new,
)
from reduction_app.engine.formats import messages_from_responses, messages_to_responses
from reduction_app.integrations.openai_agents import Reduction
from tests.integrations.mcp_build_log_server import build_log
from tests.otel_support import expected_span_events, span_events, tracing

ROOT = Path(__file__).resolve().parents[2]
INSTRUCTIONS = "You are a coding agent. Read what you need, then answer."
# Real files of this repository, 50 to 200 KB each, read as the tool reads them.
BIG_FILES = (
    "docs/behaviour.md",
    "benchmarks/README.md",
    "docs/simulator.md",
    "tests/app/reductions/test_api.py",
)
READ_LIMIT = 40


def _config() -> ReductionConfig:
    # Notices of about 8,000 characters (2,000 approximate tokens) each: clearing starts
    # after a few reads, and the cleared history is then below the threshold for a while.
    return ReductionConfig(
        max_length_for_trunc=8_000, max_tokens_for_clear=9_000, clear_retention_suffix_limit=2
    )


def source_text(path: str) -> str:
    return (ROOT / path).read_bytes().decode("utf-8")


def read_source(path: str) -> str:
    """Return the text of a file of the repository."""
    return source_text(path)


def list_dir(path: str) -> str:
    """List a folder of the repository."""
    return "\n".join(sorted(p.name for p in (ROOT / path).iterdir()))


TOOL_FUNCTIONS: dict[str, Callable[[str], str]] = {"read_source": read_source, "ls": list_dir}


# The scripted model ---------------------------------------------------------------------

Step = Callable[[list[TResponseInputItem]], list[TResponseOutputItem]]


class ScriptedModel(Model):
    """Answers each call with the next step's output and records every input it got."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.inputs: list[list[TResponseInputItem]] = []
        self.instructions: list[str | None] = []
        self.tool_names: list[list[str]] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        assert isinstance(input, list)
        self.inputs.append(copy.deepcopy(input))
        self.instructions.append(system_instructions)
        self.tool_names.append([t.name for t in tools])
        output = self.steps.pop(0)(self.inputs[-1])
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def call(call_id: str, name: str, **arguments: Any) -> Step:
    def step(_inputs: list[TResponseInputItem]) -> list[TResponseOutputItem]:
        return [
            ResponseFunctionToolCall(
                type="function_call",
                id=f"fc_{call_id}",
                call_id=call_id,
                name=name,
                arguments=json.dumps(arguments),
                status="completed",
            )
        ]

    return step


def output_of(items: Sequence[Any], call_id: str) -> str:
    [output] = [
        i["output"]
        for i in items
        if i.get("type") == "function_call_output" and i["call_id"] == call_id
    ]
    assert isinstance(output, str)
    return output


def named_path(text: str) -> str:
    """The offload path a truncation notice or clear placeholder names."""
    match = re.search(r"saved to: (\S+)", text)
    assert match is not None, text[:200]
    return match.group(1)


def read_back(call_id: str, of_call: str, offset: int = 0) -> Step:
    """A read_file call for the file the result of ``of_call`` names, as the model sees it."""

    def step(inputs: list[TResponseInputItem]) -> list[TResponseOutputItem]:
        path = named_path(output_of(inputs, of_call))
        return call(call_id, "read_file", path=path, offset=offset, limit=READ_LIMIT)(inputs)

    return step


def answer(text: str) -> Step:
    def step(_inputs: list[TResponseInputItem]) -> list[TResponseOutputItem]:
        content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
        return [
            ResponseOutputMessage(
                id="msg_" + str(abs(hash(text))),
                type="message",
                role="assistant",
                status="completed",
                content=content,
            )
        ]

    return step


FIRST_RUN: list[Step] = [
    call("c1", "read_source", path=BIG_FILES[0]),
    call("c2", "read_source", path=BIG_FILES[1]),
    read_back("c3", of_call="c1"),
    call("c4", "read_source", path=BIG_FILES[2]),
    call("c5", "ls", path="reduction_app/engine"),
    call("c6", "read_source", path=BIG_FILES[3]),
    call("c7", "read_source", path="reduction_app/engine/middleware.py"),
    read_back("c8", of_call="c6", offset=100),
    call("c9", "read_source", path=BIG_FILES[0]),
    call("c10", "ls", path="docs"),
    answer("The engine's contract is in docs/behaviour.md."),
]
SECOND_RUN: list[Step] = [
    call("c11", "read_source", path=BIG_FILES[2]),
    read_back("c12", of_call="c2"),
    answer("The simulator's manual is docs/simulator.md."),
]
SECOND_TASK = "And where is the simulator described?"


def _tools() -> list[FunctionTool]:
    return [function_tool(read_source), function_tool(list_dir, name_override="ls")]


class Conversation:
    """Two ``Runner.run`` turns of the scripted agent, through one Reduction."""

    def __init__(self, tmp_path: Path) -> None:
        self.backend_root = tmp_path / "offload"
        self.reduction = Reduction(_config(), backend=LocalFileBackend(self.backend_root))
        self.model = ScriptedModel([*FIRST_RUN, *SECOND_RUN])
        self.agent = Agent(
            name="coder",
            instructions=INSTRUCTIONS,
            model=self.model,
            tools=[*self.reduction.wrap_tools(_tools()), self.reduction.read_file_tool],
        )
        run_config = self.reduction.run_config(tracing_disabled=True)
        first = asyncio.run(
            Runner.run(
                self.agent, "Where is the engine's contract?", run_config=run_config, max_turns=20
            )
        )
        self.first_calls = len(self.model.inputs)
        self.first_history = first.to_input_list()
        second_input = [*self.first_history, {"role": "user", "content": SECOND_TASK}]
        self.second = asyncio.run(
            Runner.run(self.agent, second_input, run_config=run_config, max_turns=20)
        )
        self.inputs = self.model.inputs


def _dumps(items: Sequence[Any]) -> list[str]:
    return [json.dumps(item, sort_keys=False) for item in items]


def _replay_directly(conversation: Conversation, tmp_path: Path) -> list[ReductionEvent]:
    """The same conversation through the engine used directly (its wrapper around each
    tool call, its clear pass before each model call); checks that each model input is
    what the engine gives, and returns the engine's events."""
    events: list[ReductionEvent] = []
    config = _config()
    config.backend = LocalFileBackend(tmp_path / "direct")
    config.on_event = events.append
    mw = new(config)
    tool_infos = [
        ToolInfo(name=t.name, description=t.description, parameters=t.params_json_schema)
        for t in conversation.agent.tools
        if isinstance(t, FunctionTool)
    ]
    [system] = messages_from_responses([{"role": "system", "content": INSTRUCTIONS}])
    history: list[AgenticMessage] = []
    previous: list[Any] = []
    calls: dict[str, tuple[str, str]] = {}
    for sent in conversation.inputs:
        added = copy.deepcopy(sent[len(previous) :])
        for item in added:
            if item.get("type") == "function_call":
                calls[item["call_id"]] = (item["name"], item["arguments"])
            if item.get("type") == "function_call_output":
                name, arguments = calls[item["call_id"]]
                if name in TOOL_FUNCTIONS:
                    tool = TOOL_FUNCTIONS[name]
                    endpoint = mw.wrap_invokable_tool_call(
                        lambda a, tool=tool: tool(json.loads(a)["path"]),
                        ToolContext(name=name, call_id=item["call_id"]),
                    )
                    item["output"] = endpoint(arguments)
        state = ChatModelAgentState(
            messages=[system, *history, *messages_from_responses(added)], tool_infos=tool_infos
        )
        state = mw.before_model_rewrite_state(state)
        history = list(state.messages[1:])
        assert messages_to_responses(history) == sent
        previous = sent
    return events


def _cleared_between(events: list[ReductionEvent], start: int, end: int | None) -> set[str]:
    return {e.call_id for e in events[start:end] if e.phase == "clear" and e.kind == "tool"}


# The tests ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def conversation(tmp_path_factory: pytest.TempPathFactory) -> Conversation:
    return Conversation(tmp_path_factory.mktemp("openai_agents"))


def test_conversation_runs_through_the_sdk_loop(conversation: Conversation) -> None:
    assert conversation.first_calls == len(FIRST_RUN) >= 10
    assert len(conversation.inputs) == len(FIRST_RUN) + len(SECOND_RUN)
    assert conversation.second.final_output == "The simulator's manual is docs/simulator.md."
    assert set(conversation.model.instructions) == {INSTRUCTIONS}
    assert conversation.model.tool_names[0] == ["read_source", "ls", "read_file"]


def first_output(inputs: Sequence[Sequence[Any]], call_id: str) -> str:
    """The output of ``call_id`` the first time the model got it."""
    for items in inputs:
        if any(i.get("call_id") == call_id and "output" in i for i in items):
            return output_of(items, call_id)
    raise AssertionError(f"no output for {call_id}")


def test_model_gets_truncation_notices_and_every_offload_is_the_original(
    conversation: Conversation,
) -> None:
    """Every output over the limit reached the model as a notice naming a file that holds
    the whole output, byte for byte; a short one reached it as it was."""
    arguments = {
        item["call_id"]: json.loads(item["arguments"])
        for item in conversation.inputs[-1]
        if item.get("type") == "function_call"
    }
    truncated = [e for e in conversation.reduction.events if e.phase == "truncation"]
    assert [e.call_id for e in truncated] == ["c1", "c2", "c4", "c6", "c7", "c9", "c11"]
    for event in truncated:
        notice = first_output(conversation.inputs, event.call_id)
        assert notice.startswith("<persisted-output>\nOutput too large")
        assert inspect.truncation_file_path(notice) == event.offload_path
        assert event.offload_path == f"/tmp/trunc/{event.call_id}"
        stored = conversation.backend_root / event.offload_path.lstrip("/")
        source = ROOT / arguments[event.call_id]["path"]
        assert 50_000 <= source.stat().st_size <= 200_000 or event.call_id == "c7"
        assert stored.read_bytes() == source.read_bytes()
    assert first_output(conversation.inputs, "c10") == list_dir("docs")


def test_read_file_reads_offloads_back_through_the_adapter(conversation: Conversation) -> None:
    last = conversation.inputs[-1]
    for call_id, source, offset in [
        ("c3", BIG_FILES[0], 0),
        ("c8", BIG_FILES[3], 100),
        ("c12", BIG_FILES[1], 0),
    ]:
        every = source_text(source).removesuffix("\n").split("\n")
        lines = every[offset : offset + READ_LIMIT]
        expected = "".join(f"{offset + i + 1}\t{line}\n" for i, line in enumerate(lines))
        # The model is told how many lines follow, as every read_file tool tells it.
        shown = offset + len(lines)
        expected += f"[{len(every) - shown} more lines; read on with offset={shown}]\n"
        assert first_output(conversation.inputs, call_id) == expected
    # c2 was cleared before it was read back: its placeholder names its truncation file.
    placeholder = output_of(last, "c2")
    assert inspect.is_clear_placeholder(placeholder)
    assert named_path(placeholder) == "/tmp/trunc/c2"


def test_model_gets_clear_placeholders_with_calls_and_results_paired(
    conversation: Conversation,
) -> None:
    cleared = _cleared_between(conversation.reduction.events, 0, None)
    assert {"c1", "c2", "c3"} <= cleared
    for items in conversation.inputs:
        assert inspect.wire_pairing_problems("openai_responses", items) == []
    last = conversation.inputs[-1]
    assert {
        i["call_id"]
        for i in last
        if i.get("type") == "function_call_output" and inspect.is_clear_placeholder(i["output"])
    } == cleared


def test_inputs_keep_their_prefix_except_where_a_pass_cleared(conversation: Conversation) -> None:
    """Between two model calls the items sent before are sent again byte for byte, and a
    clear pass changes only the results it cleared (into placeholders)."""
    events = conversation.reduction.events
    summaries = [i for i, e in enumerate(events) if e.kind == "summary"]
    assert len(summaries) == len(conversation.inputs)  # one pass before each model call
    applied = [events[i].applied for i in summaries]
    assert applied.count(True) >= 2
    # A call after an applied pass with no pass of its own: the reduced history carried on.
    assert any(a and not b for a, b in itertools.pairwise(applied))
    for n in range(1, len(conversation.inputs)):
        before, after = _dumps(conversation.inputs[n - 1]), _dumps(conversation.inputs[n])
        assert len(after) > len(before)
        cleared = _cleared_between(events, summaries[n - 1] + 1, summaries[n] + 1)
        assert bool(cleared) == applied[n]
        changed = {
            conversation.inputs[n][k]["call_id"]
            for k in range(len(before))
            if before[k] != after[k]
        }
        assert changed == cleared
        for k in range(len(before)):
            if before[k] != after[k]:
                assert inspect.is_clear_placeholder(conversation.inputs[n][k]["output"])


def test_second_run_continues_from_the_reduced_history(conversation: Conversation) -> None:
    last_first = conversation.inputs[conversation.first_calls - 1]
    first_second = conversation.inputs[conversation.first_calls]
    # The SDK hands back the unreduced history; the model still gets the reduced one.
    assert _dumps(conversation.first_history[: len(last_first)]) != _dumps(last_first)
    assert _dumps(first_second[: len(last_first)]) == _dumps(last_first)
    assert [i.get("role") for i in first_second[len(last_first) :]] == ["assistant", "user"]
    assert first_second[-1] == {"role": "user", "content": SECOND_TASK}
    # c1 was cleared in the first run; no pass cleared anything before this call.
    assert output_of(conversation.first_history, "c1").startswith("<persisted-output>\nOutput")
    assert inspect.is_clear_placeholder(output_of(first_second, "c1"))
    summaries = [e for e in conversation.reduction.events if e.kind == "summary"]
    assert summaries[conversation.first_calls].reason == "below_threshold"


def test_events_are_the_engines_own(conversation: Conversation, tmp_path: Path) -> None:
    """The same conversation through the engine used directly gives the same model
    inputs and the same events."""
    direct = _replay_directly(conversation, tmp_path)
    assert conversation.reduction.events == direct
    assert [e.phase for e in direct].count("truncation") == 7


def test_events_reach_the_configs_on_event_too(tmp_path: Path) -> None:
    seen: list[ReductionEvent] = []
    config = _config()
    config.on_event = seen.append
    reduction = Reduction(config, backend=LocalFileBackend(tmp_path))
    tool = reduction.wrap_tool(function_tool(read_source))
    model = ScriptedModel([call("c1", "read_source", path=BIG_FILES[0]), answer("ok")])
    agent = Agent(name="a", model=model, tools=[tool])
    asyncio.run(Runner.run(agent, "go", run_config=reduction.run_config(tracing_disabled=True)))
    assert seen == reduction.events
    assert [e.phase for e in seen] == ["clear", "truncation", "clear"]


def test_wrap_tool_truncates_text_parts_and_passes_other_outputs(tmp_path: Path) -> None:
    reduction = Reduction(
        ReductionConfig(max_length_for_trunc=100), backend=LocalFileBackend(tmp_path)
    )

    @function_tool
    def text_part() -> ToolOutputText:
        """A long text part."""
        return ToolOutputText(text="x" * 500)

    @function_tool
    def number() -> int:
        """A number."""
        return 10**300

    model = ScriptedModel([call("t1", "text_part"), call("n1", "number"), answer("ok")])
    agent = Agent(name="a", model=model, tools=reduction.wrap_tools([text_part, number]))
    asyncio.run(Runner.run(agent, "go", run_config=reduction.run_config(tracing_disabled=True)))
    [text_output] = [
        i["output"] for i in model.inputs[-1] if i.get("call_id") == "t1" and "output" in i
    ]
    assert text_output[0]["type"] == "input_text"
    assert text_output[0]["text"].startswith("<persisted-output>")
    assert (tmp_path / "tmp/trunc/t1").read_text() == "x" * 500
    assert output_of(model.inputs[-1], "n1") == str(10**300)
    assert [(e.phase, e.call_id) for e in reduction.events if e.kind == "tool"] == [
        ("truncation", "t1")
    ]


def test_read_file_answers_bad_calls_to_the_model(tmp_path: Path) -> None:
    reduction = Reduction(_config(), backend=LocalFileBackend(tmp_path))
    tool = reduction.read_file_tool
    assert tool.name == "read_file"
    assert tool.params_json_schema["required"] == ["path"]

    def invoke(arguments: str) -> Any:
        return asyncio.run(tool.on_invoke_tool(None, arguments))  # type: ignore[arg-type]

    assert invoke('{"path": "/tmp/trunc/none"}') == "file not found: /tmp/trunc/none"
    assert invoke('{"path": "/a", "offset": -1}') == (
        "invalid arguments: offset must be an integer >= 0 and limit >= 1"
    )
    assert invoke("{").startswith("invalid arguments: ")
    assert invoke("[1]") == "invalid arguments: expected a JSON object"


def test_read_file_reads_a_tools_own_backend_too(tmp_path: Path) -> None:
    own = LocalFileBackend(tmp_path / "own")
    own.write(WriteRequest(file_path="/tmp/trunc/g1", content="one\ntwo\nthree\n"))
    config = _config()
    config.tool_config = {"grep": ToolReductionConfig(backend=own)}
    reduction = Reduction(config, backend=LocalFileBackend(tmp_path / "global"))
    read = reduction.read_file_tool.on_invoke_tool
    got = asyncio.run(read(None, '{"path": "/tmp/trunc/g1", "offset": 1}'))  # type: ignore[arg-type]
    assert got == "2\ttwo\n3\tthree\n"


def test_example_runs_offline() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "openai_agents_agent.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "truncated read_source" in result.stdout
    assert "cleared" in result.stdout


def test_wrap_agent_truncates_mcp_tools_and_offers_read_file(tmp_path: Path) -> None:
    """An MCP server's tool (the mcp package's server, over stdio) and a function tool
    both go through the engine; the model is offered read_file too, and the MCP tool's
    schema is counted with the messages."""
    backend = LocalFileBackend(tmp_path)
    reduction = Reduction(ReductionConfig(max_length_for_trunc=20_000), backend=backend)
    model = ScriptedModel(
        [call("m1", "build_log"), call("m2", "ls", path="docs"), answer("Module 7 fails.")]
    )
    server = MCPServerStdio(
        params={
            "command": sys.executable,
            "args": [str(Path(__file__).with_name("mcp_build_log_server.py"))],
        },
        cache_tools_list=True,
    )

    async def run() -> None:
        async with server:
            agent = reduction.wrap_agent(
                Agent(name="builder", model=model, tools=_tools(), mcp_servers=[server])
            )
            run_config = reduction.run_config(tracing_disabled=True)
            await Runner.run(agent, "Why does the build fail?", run_config=run_config)

    asyncio.run(run())
    assert model.tool_names[0] == ["build_log", "read_source", "ls", "read_file"]
    [output] = [i["output"] for i in model.inputs[1] if i.get("type") == "function_call_output"]
    # MCP's one text item, in its own shape, holding the notice.
    [item] = output
    assert item["type"] == "input_text"
    assert inspect.truncation_file_path(item["text"]) == "/tmp/trunc/m1"
    assert (tmp_path / "tmp/trunc/m1").read_text() == build_log()
    assert [(e.phase, e.tool_name) for e in reduction.events if e.kind == "tool"] == [
        ("truncation", "build_log")
    ]
    assert output_of(model.inputs[2], "m2") == list_dir("docs")


def test_wrap_tool_keeps_wrapped_and_wraps_once(tmp_path: Path) -> None:
    reduction = Reduction(_config(), backend=LocalFileBackend(tmp_path))
    tool = function_tool(read_source)
    wrapped = reduction.wrap_tool(tool)
    assert wrapped is not tool
    assert wrapped.__wrapped__ is read_source
    assert reduction.wrap_tool(wrapped) is wrapped
    assert reduction.wrap_tools([wrapped]) == [wrapped]


def test_reduction_takes_on_event(tmp_path: Path) -> None:
    seen: list[ReductionEvent] = []
    reduction = Reduction(backend=LocalFileBackend(tmp_path), on_event=seen.append)
    model = ScriptedModel([call("t1", "read_source", path=BIG_FILES[0]), answer("ok")])
    agent = reduction.wrap_agent(Agent(name="reader", model=model, tools=_tools()))
    asyncio.run(Runner.run(agent, "go", run_config=reduction.run_config(tracing_disabled=True)))
    assert seen == reduction.events
    assert [(e.phase, e.call_id) for e in seen if e.kind == "tool"] == [("truncation", "t1")]


def test_events_are_span_events_on_the_span_around_the_run(tmp_path: Path) -> None:
    """The SDK's own tracing is not OpenTelemetry: the events land on the span the caller
    has open around ``Runner.run``, labelled with the config and the conversation."""
    reduction = Reduction(
        _config(),
        backend=LocalFileBackend(tmp_path),
        config_name="coder",
        conversation_id="conv-9",
    )
    tool = reduction.wrap_tool(function_tool(read_source))
    model = ScriptedModel([call("c1", "read_source", path=BIG_FILES[0]), answer("ok")])
    agent = Agent(name="a", model=model, tools=[tool])
    with tracing() as (provider, exporter):
        with provider.get_tracer("tests").start_as_current_span("agent run"):
            run_config = reduction.run_config(tracing_disabled=True)
            asyncio.run(Runner.run(agent, "go", run_config=run_config))
        [span] = exporter.get_finished_spans()
    found = span_events(span)
    assert found == expected_span_events(
        reduction.events, config_name="coder", conversation_id="conv-9"
    )
    assert [name for name, _ in found] == [
        "reduction.clear",
        "reduction.truncation",
        "reduction.clear",
    ]
    truncation = found[1][1]
    assert (truncation["reduction.call_id"], truncation["reduction.tool_name"]) == (
        "c1",
        "read_source",
    )
    assert truncation["reduction.chars_before"] == len(
        (ROOT / BIG_FILES[0]).read_text(encoding="utf-8")
    )
