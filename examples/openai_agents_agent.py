"""An OpenAI Agents SDK agent whose context the engine keeps small, offline.

The agent is the SDK's own loop (``Runner.run``) with real tools that read this
repository. Reduction Lab comes in through :class:`Reduction`:

* every tool it gets is wrapped (``reduction.wrap_agent``): an output over
  ``max_length_for_trunc`` characters is saved to a folder and replaced by a notice with
  a head and tail preview;
* its ``RunConfig`` clears old tool results before each model call, once the
  conversation is over ``max_tokens_for_clear`` tokens;
* the agent gets the ``read_file`` tool the notices point to (``wrap_agent`` adds it).

The model is scripted, so the example runs with no network and no API key: it reads four
files, reads one of them back from its offload file, and answers. Run it from a clone
(the package is not published yet) with::

    pip install -e '.[openai-agents]'
    python examples/openai_agents_agent.py

To use a real model, give the agent ``model="gpt-5"`` (or leave the model out) and set
``OPENAI_API_KEY``; nothing else changes.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agents import Agent, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem, TResponseOutputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # Run as a script from a checkout: the engine is a package of this repository.
    sys.path.insert(0, str(REPO))

from reduction_app.engine import LocalFileBackend, ReductionConfig  # noqa: E402
from reduction_app.integrations.openai_agents import Reduction  # noqa: E402

# Low on purpose, so that one short run shows both phases.
CONFIG = ReductionConfig(
    max_length_for_trunc=6_000, max_tokens_for_clear=4_000, clear_retention_suffix_limit=1
)
FILES = ("docs/behaviour.md", "docs/simulator.md", "docs/engine.md", "README.md")


@function_tool
def read_source(path: str) -> str:
    """Return the text of a file of this repository."""
    return (REPO / path).read_text(encoding="utf-8")


class ScriptedModel(Model):
    """Stands in for an LLM: the same tool calls on every run, then an answer."""

    def __init__(self) -> None:
        self.turn = 0

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.turn += 1
        output: list[TResponseOutputItem]
        if self.turn <= len(FILES):
            output = [_call(f"call_{self.turn}", "read_source", path=FILES[self.turn - 1])]
        elif self.turn == len(FILES) + 1:
            # Read the start of the last file back from the file its notice names.
            path = _offload_path(input, f"call_{len(FILES)}")
            output = [_call("call_read", "read_file", path=path, limit=5)]
        else:
            text = ResponseOutputText(type="output_text", text="Done reading.", annotations=[])
            message = ResponseOutputMessage(
                id="msg_1", type="message", role="assistant", status="completed", content=[text]
            )
            output = [message]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def _call(call_id: str, name: str, **arguments: Any) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=json.dumps(arguments)
    )


def _offload_path(items: list[TResponseInputItem], call_id: str) -> str:
    [output] = [i["output"] for i in items if i.get("call_id") == call_id and "output" in i]
    match = re.search(r"saved to: (\S+)", str(output))
    assert match is not None, "the scripted model expected a truncation notice"
    return match.group(1)


async def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        reduction = Reduction(CONFIG, backend=LocalFileBackend(folder))
        # Every tool the agent gets (MCP servers' too) is truncated; read_file is added.
        agent = reduction.wrap_agent(
            Agent(
                name="reader",
                instructions="Read what you need, then answer.",
                model=ScriptedModel(),
                tools=[read_source],
            )
        )
        # tracing_disabled: nothing leaves this machine.
        result = await Runner.run(
            agent, "Summarise the docs.", run_config=reduction.run_config(tracing_disabled=True)
        )
        for event in reduction.events:
            if event.kind == "tool":
                verb = "truncated" if event.phase == "truncation" else "cleared"
                print(
                    f"{verb} {event.tool_name} {event.call_id}: {event.chars_before} -> "
                    f"{event.chars_after} characters, saved to {event.offload_path}"
                )
            elif event.applied:
                print(f"clear pass: {event.calls_cleared} results cleared")
        read_back = [
            item["output"]
            for item in result.to_input_list()
            if item.get("call_id") == "call_read" and "output" in item
        ]
        print("read_file gave back:", str(read_back[0]).splitlines()[0])
        print("answer:", result.final_output)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
