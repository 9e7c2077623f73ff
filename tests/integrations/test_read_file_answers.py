"""Every adapter's read_file tool answers as the engine's ``answer_read_file`` does: the
same numbered lines and "more lines" hint for a long file, the same answer (not an
exception) for a path outside the storage root or a missing file."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents import Agent as AgentsAgent
from agents import Runner
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from reduction_app.engine import LocalFileBackend, ReductionConfig, WriteRequest, answer_read_file
from reduction_app.integrations import langchain, openai_agents, pydantic_ai
from tests.integrations.test_openai_agents import ScriptedModel, answer, call, output_of

LONG = "".join(f"line {n}: compiling module {n}\n" for n in range(3_000))
Read = Callable[[dict[str, Any]], str]


def _langchain(config: ReductionConfig) -> Read:
    tool = langchain.ReductionMiddleware(config).read_file_tool
    return lambda args: str(tool.invoke(args))


def _openai_agents(config: ReductionConfig) -> Read:
    """The read through an Agents SDK run: the output the model is sent."""

    def read(args: dict[str, Any]) -> str:
        reduction = openai_agents.Reduction(config)
        model = ScriptedModel([call("r1", "read_file", **args), answer("read")])
        agent = reduction.wrap_agent(AgentsAgent(name="reader", model=model))
        run_config = reduction.run_config(tracing_disabled=True)
        asyncio.run(Runner.run(agent, "read it", run_config=run_config))
        return output_of(model.inputs[-1], "r1")

    return read


def _pydantic_ai(config: ReductionConfig) -> Read:
    """The read through a pydantic-ai agent run: the return the model is sent."""

    def read(args: dict[str, Any]) -> str:
        answers: list[str] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            if len(messages) == 1:
                return ModelResponse(parts=[ToolCallPart("read_file", args, tool_call_id="r1")])
            part = messages[-1].parts[-1]
            assert isinstance(part, ToolReturnPart)
            answers.append(str(part.content))
            return ModelResponse(parts=[TextPart("read")])

        reduction = pydantic_ai.Reduction(config)
        Agent(FunctionModel(model), capabilities=[reduction]).run_sync("read it")
        (answer,) = answers
        return answer

    return read


ADAPTERS = {"langchain": _langchain, "openai_agents": _openai_agents, "pydantic_ai": _pydantic_ai}


@pytest.fixture
def config(tmp_path: Path) -> ReductionConfig:
    backend = LocalFileBackend(tmp_path)
    backend.write(WriteRequest(file_path="/tmp/trunc/call_1", content=LONG))
    return ReductionConfig(backend=backend)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"path": "/tmp/trunc/call_1"},
            "1\tline 0: compiling module 0\n",
            id="long-file",
        ),
        pytest.param(
            {"path": "/tmp/trunc/call_1", "offset": 2_990, "limit": 5},
            "2991\tline 2990: compiling module 2990\n",
            id="long-file-page",
        ),
        pytest.param(
            {"path": "../../etc/passwd"},
            "path '../../etc/passwd' is outside the storage root",
            id="escaping-path",
        ),
        pytest.param(
            {"path": "/tmp/trunc/none"}, "file not found: /tmp/trunc/none", id="missing-file"
        ),
    ],
)
def test_read_file_answers_as_the_engine_does(
    adapter: str, config: ReductionConfig, args: dict[str, Any], expected: str
) -> None:
    answer = ADAPTERS[adapter](config)(args)
    engine = answer_read_file(
        config, args["path"], offset=args.get("offset", 0), limit=args.get("limit", 2_000)
    )
    assert answer == engine
    assert answer.startswith(expected)


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_read_file_tells_the_model_how_many_lines_follow(
    adapter: str, config: ReductionConfig
) -> None:
    answer = ADAPTERS[adapter](config)({"path": "/tmp/trunc/call_1", "offset": 10, "limit": 20})
    lines = answer.split("\n")
    assert lines[0] == "11\tline 10: compiling module 10"
    assert lines[19] == "30\tline 29: compiling module 29"
    assert lines[20:] == ["[2970 more lines; read on with offset=30]", ""]
