"""A complete tool-calling agent loop that keeps its context small through the REST API.

The loop is the one any agent runs: ask the model, run the tools it calls, append the
results, ask again. Reduction Lab comes in at two points:

* after every tool result, ``POST /api/v1/truncate``: an output too large is replaced by
  a preview and a notice naming the file the server saved it to;
* before every model call, ``POST /api/v1/clear``: once the conversation is over
  ``max_tokens_for_clear``, old tool results are moved out, leaving a notice each. The
  agent keeps the cleared messages as its history, as the engine's own middleware does.
  After the first call the client sends only the messages added since its last answer
  (``previous_revision``); the server holds the rest.

The model is scripted (no network, the same calls on every run): it reads two files of
this repository, greps it, then reads the grep output back from the file the server
offloaded it to, and answers. The tools are real: they read and grep this repository.

There is one ``read_file`` tool, as in the reference, where agents read offloads with the
same tool they read any file with. Its definition comes from ``GET /api/v1/tools/read_file``;
a call whose path the server offloaded is answered by ``GET /api/v1/files/read``, any
other path is read from the repository.

Run it against a server (``make run``, then ``python manage.py create_api_key demo``)::

    python examples/agent_loop.py --url http://127.0.0.1:8000 --key rl_...

It needs only the standard library and ``reduction_app/client.py`` (no Django).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import secrets
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    # Run as a script from a checkout: the client is a module of this repository.
    sys.path.insert(0, str(REPO))

from reduction_app.client import ReductionAPIError, ReductionClient  # noqa: E402
from reduction_app.engine import ReadPage  # noqa: E402

# Low on purpose, so that one short run shows both phases: tool outputs above 4,000
# characters are truncated, and a conversation above 2,000 tokens is cleared, keeping
# the latest tool round.
DEMO_CONFIG: dict[str, Any] = {
    "max_length_for_trunc": 4000,
    "max_tokens_for_clear": 2000,
    "clear_retention_suffix_limit": 1,
}

GREP_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "grep",
        "description": "Search the repository's text files with a regular expression. "
        "Returns 'path:line:text' for each matching line.",
        "parameters": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "A Python regular expression."},
                "path": {"type": "string", "description": "A folder of the repository."},
            },
            "required": ["pattern"],
        },
    },
}

SKIP_DIRS = {
    ".git",
    ".venv",
    "node_modules",
    "__pycache__",
    "media",
    "staticfiles",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "data",
}
MAX_GREP_MATCHES = 2000
OFFLOAD_NOTICE = re.compile(r"Full output saved to: (\S+)")


# The tools -------------------------------------------------------------------------------


def numbered(text: str, offset: int, limit: int) -> tuple[str, int]:
    """``limit`` lines from line ``offset`` (0-based) as ``<number>\\t<text>``, as the API's
    ``/files/read`` numbers them; and the file's line count."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = "".join(
        f"{offset + i + 1}\t{line}\n" for i, line in enumerate(lines[offset : offset + limit])
    )
    return body, len(lines)


def _inside(repo: Path, relative: str) -> Path:
    target = (repo / relative).resolve()
    if target != repo and repo not in target.parents:
        raise ValueError(f"{relative!r} is outside the repository")
    return target


def read_repo_file(repo: Path, path: str, offset: int = 0, limit: int = 2000) -> str:
    target = _inside(repo, path)
    if not target.is_file():
        raise ValueError(f"no such file: {path}")
    body, _ = numbered(target.read_text(encoding="utf-8"), offset, limit)
    return body


def grep_repo(repo: Path, pattern: str, path: str = ".") -> str:
    regex = re.compile(pattern)
    root = _inside(repo, path)
    matches: list[str] = []
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        relative = file.relative_to(repo)
        if SKIP_DIRS.intersection(relative.parts[:-1]) or file.stat().st_size > 1_000_000:
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                matches.append(f"{relative.as_posix()}:{number}:{line}")
    shown = matches[:MAX_GREP_MATCHES]
    more = len(matches) - len(shown)
    return "\n".join(shown) + (f"\n... {more} more matches" if more else "") + "\n"


# The scripted model ----------------------------------------------------------------------


class ScriptedModel:
    """A stand-in for a chat model (OpenAI chat format): the same tool calls every run.

    It reads what a real model would: the offload path comes out of the notice that
    ``/truncate`` left in the conversation, and the answer quotes what it read back.
    """

    def __init__(self, call_prefix: str) -> None:
        self.call_prefix = call_prefix
        self.turn = 0

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{self.call_prefix}_{self.turn}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        }

    def __call__(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        self.turn += 1
        if self.turn == 1:
            return self._call("read_file", {"path": "manage.py"})
        if self.turn == 2:
            return self._call("read_file", {"path": "reduction_app/engine/_clear/_phase.py"})
        if self.turn == 3:
            return self._call("grep", {"pattern": r"^def \w+", "path": "reduction_app"})
        if self.turn == 4:
            last = str(messages[-1].get("content") or "")
            found = OFFLOAD_NOTICE.search(last)
            if found:
                return self._call("read_file", {"path": found.group(1), "offset": 0, "limit": 5})
        last = str(messages[-1].get("content") or "")
        first = last.split("\n", 1)[0].split("\t", 1)[-1]
        return {
            "role": "assistant",
            "content": f"The grep found the module-level functions; the first one is {first}",
        }


# The loop --------------------------------------------------------------------------------


@dataclass
class RunReport:
    """What one run did, for the caller (and the tests) to check."""

    conversation_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_outputs: dict[str, str] = field(default_factory=dict)
    """Each tool call's original output, by call id, before ``/truncate``."""
    offload_paths: list[str] = field(default_factory=list)
    read_backs: list[dict[str, Any]] = field(default_factory=list)
    """Each read_file call answered by ``/files/read``: path, offset, limit, content."""
    answer: str = ""


def run(
    client: ReductionClient,
    *,
    conversation_id: str,
    config: dict[str, Any] | None = None,
    config_id: int | None = None,
    repo: Path = REPO,
    max_turns: int = 10,
    say: Callable[[str], None] = print,
) -> RunReport:
    """Run the scripted agent to its answer, calling ``/clear`` and ``/truncate`` as it goes."""
    if config is None and config_id is None:
        config = DEMO_CONFIG
    reduction: dict[str, Any] = {
        "conversation_id": conversation_id,
        "config": config,
        "config_id": config_id,
    }
    read_file_tool = client.read_file_tool()["openai"]
    read_file_tool["function"]["description"] += (
        " Also reads the repository's own files, by path relative to its root."
    )
    tools = [read_file_tool, GREP_TOOL]
    model = ScriptedModel(hashlib.sha256(conversation_id.encode()).hexdigest()[:8])
    report = RunReport(conversation_id)
    offloaded: set[str] = set()
    messages: list[dict[str, Any]] = [
        {
            "role": "system",
            "content": "You are a coding agent working in the Reduction Lab repository.",
        },
        {"role": "user", "content": "Which module-level functions does reduction_app define?"},
    ]

    def remember(path: str) -> None:
        if path and path not in offloaded:
            offloaded.add(path)
            report.offload_paths.append(path)

    def execute(name: str, args: dict[str, Any]) -> str:
        if name == "grep":
            return grep_repo(repo, args["pattern"], args.get("path", "."))
        if name != "read_file":
            raise ValueError(f"unknown tool {name!r}")
        offset, limit = int(args.get("offset", 0)), int(args.get("limit", 2000))
        if args["path"] not in offloaded:
            return read_repo_file(repo, args["path"], offset, limit)
        out = client.read_file(args["path"], offset=offset, limit=limit)
        content, total = str(out["content"]), int(out["total_lines"])
        report.read_backs.append(
            {"path": args["path"], "offset": offset, "limit": limit, "content": content}
        )
        shown = offset + content.count("\n")
        say(f"        read back through /files/read: lines {offset + 1}-{shown} of {total}")
        # The model reads the page as every read_file tool answers it, "more lines" and all.
        page = ReadPage(
            path=args["path"],
            offset=offset,
            limit=limit,
            lines=content,
            total_lines=total,
            next_offset=shown,
        )
        return page.answer

    for turn in range(1, max_turns + 1):
        cleared = client.clear(messages, tools=tools, **reduction)
        messages = cleared["messages"]
        before, after = cleared["tokens_before"], cleared["tokens_after"]
        state = f"cleared, saved {before - after:,}" if cleared["applied"] else "kept as is"
        say(
            f"step {turn}  /clear: {len(messages)} messages ({client.last_sent} sent), "
            f"{before:,} -> {after:,} tokens ({state})"
        )
        for event in cleared["events"]:
            if event["kind"] == "tool":
                # A result that was truncated already has a file; clearing it points there.
                say(
                    f"        cleared {event['call_id']}: {event['tokens_before']:,} -> "
                    f"{event['tokens_after']:,} tokens, offloaded {event['offload_path']}"
                )
                remember(event["offload_path"])

        reply = model(messages, tools)
        messages.append(reply)
        if not reply.get("tool_calls"):
            report.answer = reply["content"]
            say(f"        model answers: {report.answer}")
            break
        for call in reply["tool_calls"]:
            name, raw_args = call["function"]["name"], call["function"]["arguments"]
            say(f"        model calls {name} {raw_args}")
            try:
                output = execute(name, json.loads(raw_args))
            except (ValueError, KeyError, OSError) as exc:
                output = f"error: {exc}"
            report.tool_outputs[call["id"]] = output
            out = client.truncate(
                tool_name=name,
                tool_call_id=call["id"],
                arguments=raw_args,
                result=output,
                **reduction,
            )
            if out["truncated"]:
                event = out["events"][0]
                say(
                    f"        /truncate: {event['chars_before']:,} -> "
                    f"{event['chars_after']:,} chars, "
                    f"{event['tokens_before']:,} -> {event['tokens_after']:,} tokens, "
                    f"offloaded {out['offload_path']}"
                )
                remember(out["offload_path"])
            else:
                say(f"        /truncate: {len(output):,} chars, kept as is")
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": out["result"]})
    report.messages = messages
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000", help="The server's base URL.")
    parser.add_argument(
        "--key", required=True, help="An API key (python manage.py create_api_key NAME)."
    )
    parser.add_argument("--conversation-id", help="Default: a new id for each run.")
    parser.add_argument(
        "--config",
        type=json.loads,
        help=f"An inline config as JSON (default: {json.dumps(DEMO_CONFIG)}).",
    )
    parser.add_argument("--config-id", type=int, help="A stored config profile instead.")
    args = parser.parse_args(argv)
    client = ReductionClient(args.url, api_key=args.key)
    # Call ids (and so offload paths) derive from the conversation id: a new one per run.
    conversation_id = args.conversation_id or f"agent-loop-{secrets.token_hex(4)}"
    print(f"conversation {conversation_id} on {args.url}")
    try:
        report = run(
            client, conversation_id=conversation_id, config=args.config, config_id=args.config_id
        )
    except ReductionAPIError as exc:
        print(
            f"the API refused: {exc}" + (f" (field {exc.field})" if exc.field else ""),
            file=sys.stderr,
        )
        return 2
    print(
        f"done: {len(report.offload_paths)} offloads; events at "
        f"{args.url.rstrip('/')}/api/v1/events?conversation_id={conversation_id}"
    )
    return 0 if report.answer else 1


if __name__ == "__main__":
    sys.exit(main())
