"""A LangChain agent (``langchain.agents.create_agent``) whose context Reduction Lab keeps
small, with the engine in process: no server, no network.

The model is scripted (the same calls on every run): it reads four large files of this
repository, reads part of one back from the file its output was offloaded to, and
answers. Every reduction is printed as it happens: outputs truncated when a tool returns,
old results cleared before a model call, and the read-back.

    pip install -e '.[langchain]'    # from a clone: the package is not published yet
    python examples/langchain_agent.py [--offload-dir DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # Run as a script from a checkout: the engine is a package of this repository.
    sys.path.insert(0, str(REPO))

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from langchain_core.tools import tool  # noqa: E402

from reduction_app.engine import LocalFileBackend, ReductionConfig, ReductionEvent  # noqa: E402
from reduction_app.integrations.langchain import ReductionMiddleware  # noqa: E402

# Low on purpose, so that one short run shows both phases: outputs over 20,000 characters
# are truncated, and a conversation over 12,000 tokens is cleared, keeping the latest round.
CONFIG = ReductionConfig(max_length_for_trunc=20_000, max_tokens_for_clear=12_000)
FILES = ("docs/behaviour.md", "docs/simulator.md", "benchmarks/README.md", "docs/engine.md")
SAVED_TO = re.compile(r"saved to: (\S+)")


@tool
def read_source(path: str) -> str:
    """Read a file of the repository, by its path from the repository's root."""
    return (REPO / path).read_text(encoding="utf-8")


class ScriptedModel(BaseChatModel):
    """A stand-in for a chat model: reads each of FILES, then reads back the first
    offloaded output it finds in its context, then answers."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.calls += 1
        turn = self.calls
        if turn <= len(FILES):
            reply = _call(turn, "read_source", {"path": FILES[turn - 1]})
        elif turn == len(FILES) + 1:
            path = next(m[1] for m in map(SAVED_TO.search, map(_text, messages)) if m)
            reply = _call(turn, "read_file", {"path": path, "offset": 0, "limit": 3})
        else:
            first = _text(messages[-1]).split("\n", 1)[0].split("\t", 1)[-1]
            reply = AIMessage(f"The behaviour page starts with {first!r}.", id=f"ai_{turn}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _call(turn: int, name: str, args: dict[str, Any]) -> AIMessage:
    call = {"id": f"call_{turn}", "name": name, "args": args, "type": "tool_call"}
    return AIMessage("", tool_calls=[call], id=f"ai_{turn}")


def _text(message: BaseMessage) -> str:
    return message.content if isinstance(message.content, str) else str(message.content)


def say(event: ReductionEvent) -> None:
    """Print one reduction as it happens."""
    if event.phase == "truncation":
        print(
            f"  truncated {event.tool_name} {event.call_id}: {event.chars_before:,} -> "
            f"{event.chars_after:,} chars, original saved to {event.offload_path}"
        )
    elif event.kind == "tool":
        print(
            f"  cleared {event.call_id}: {event.tokens_before:,} -> {event.tokens_after:,} "
            f"tokens, original at {event.offload_path}"
        )
    else:
        print(
            f"before a model call: {event.tokens_before:,} -> {event.tokens_after:,} tokens "
            f"({event.reason.replace('_', ' ')})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--offload-dir",
        help="Where offloads go (default: a temporary folder, removed at the end).",
    )
    args = parser.parse_args(argv)
    if args.offload_dir:
        return run(Path(args.offload_dir))
    with tempfile.TemporaryDirectory(prefix="reduction-") as folder:
        return run(Path(folder))


def run(offload_dir: Path) -> int:
    reduction = ReductionMiddleware(CONFIG, backend=LocalFileBackend(offload_dir), on_event=say)
    agent = create_agent(
        ScriptedModel(),
        [read_source],
        system_prompt="You are a coding agent working in the Reduction Lab repository.",
        middleware=[reduction],
    )
    result = agent.invoke({"messages": [HumanMessage("How does the first doc page start?")]})
    for message in result["messages"]:
        if getattr(message, "name", None) == "read_file":
            print(f"read back through read_file:\n{_text(message)}", end="")
    print(f"answer: {_text(result['messages'][-1])}")
    print(f"offloads in {offload_dir}: {sum(p.is_file() for p in offload_dir.rglob('*'))} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
