"""A pydantic-ai agent that keeps its context small with Reduction Lab's engine.

The agent reads files of this repository with a ``read_source`` tool. Its model is a
pydantic-ai ``FunctionModel`` scripted to make the same calls on every run (no network,
no API key): it reads four large files, reads the first lines of one back from the file
the engine offloaded it to, and answers. On the way the engine

* truncates every output over 20,000 characters, saving the whole of it to a folder;
* clears old tool results once the conversation is over 12,000 tokens, keeping the
  latest tool round.

Run it from a checkout (``pip install -e '.[pydantic-ai]'``)::

    python examples/pydantic_ai_agent.py [--offload-dir DIR]

It needs pydantic-ai and the engine only (no Django, no server).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # Run as a script from a checkout: the engine is a package of this repository.
    sys.path.insert(0, str(REPO))

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from reduction_app.engine import LocalFileBackend, ReductionConfig, ReductionEvent  # noqa: E402
from reduction_app.engine.inspect import truncation_file_path  # noqa: E402
from reduction_app.integrations.pydantic_ai import Reduction  # noqa: E402

FILES = ["docs/behaviour.md", "docs/simulator.md", "benchmarks/README.md", "docs/api.md"]


def read_source(path: str) -> str:
    """Read a text file of the repository, by its path from the repository's root."""
    return (REPO / path).read_text(encoding="utf-8")


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The same calls every run: read the files, read one offload back, answer."""
    turn = sum(isinstance(m, ModelResponse) for m in messages) + 1
    if turn <= len(FILES):
        call = ToolCallPart("read_source", {"path": FILES[turn - 1]}, tool_call_id=f"call_{turn}")
        return ModelResponse(parts=[call])
    last = messages[-1].parts[-1]
    if turn == len(FILES) + 1 and isinstance(last, ToolReturnPart):
        path = truncation_file_path(str(last.content))
        if path:
            args = {"path": path, "offset": 0, "limit": 3}
            return ModelResponse(parts=[ToolCallPart("read_file", args, tool_call_id="call_back")])
    first_line = str(getattr(last, "content", "")).split("\n", 1)[0]
    return ModelResponse(parts=[TextPart(f"Read {len(FILES)} files; the last began: {first_line}")])


def say(event: ReductionEvent) -> None:
    if event.phase == "truncation":
        print(
            f"  truncated {event.tool_name} {event.call_id}: {event.chars_before:,} -> "
            f"{event.chars_after:,} characters, whole output in {event.offload_path}"
        )
    elif event.kind == "tool":
        print(
            f"  cleared {event.call_id}: {event.tokens_before:,} -> {event.tokens_after:,} "
            f"tokens, placeholder points at {event.offload_path}"
        )
    elif event.applied:
        print(f"  clear pass: {event.tokens_before:,} -> {event.tokens_after:,} tokens")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--offload-dir", type=Path, help="Default: a temporary folder, removed at the end."
    )
    args = parser.parse_args(argv)
    if args.offload_dir is not None:
        return run(args.offload_dir)
    with tempfile.TemporaryDirectory(prefix="reduction-offload-") as folder:
        return run(Path(folder))


def run(offload_dir: Path) -> int:
    config = ReductionConfig(max_length_for_trunc=20_000, max_tokens_for_clear=12_000)
    # One capability: every tool truncated, read_file added, old results cleared.
    reduction = Reduction(config, backend=LocalFileBackend(offload_dir), on_event=say)
    agent = Agent(
        FunctionModel(scripted_model),
        system_prompt="You are a coding agent working in the Reduction Lab repository.",
        tools=[read_source],
        capabilities=[reduction],
    )
    print(f"offloaded files go to {offload_dir}")
    result = agent.run_sync("What do the documentation pages say?")

    for message in result.all_messages():
        for part in message.parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == "read_file":
                print(f"  read back through read_file: {part.content.splitlines()[0]!r} ...")
    truncated = sum(e.phase == "truncation" for e in reduction.events)
    cleared = sum(e.phase == "clear" and e.kind == "tool" for e in reduction.events)
    print(f"done: {truncated} outputs truncated, {cleared} results cleared")
    print(f"answer: {result.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
