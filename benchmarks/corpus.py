"""A long, realistic agent conversation, made by running real tools over a real tree.

This module owns the benchmark corpus: a scripted "agent" explores the installed
Django package (any source tree works) in rounds. Each round is an assistant
message with one to three tool calls, then their results, produced by really
running the tools:

- ``list_dir``: the directory's sorted entries (folders with a trailing ``/``,
  files with their size);
- ``read_file``: the file's whole, real content;
- ``grep``: a Python ``re`` search over every ``.py`` file under a folder, one
  ``path:line:text`` line per match, capped like an agent's grep tool.

The user sets a new task every so often and the assistant answers in plain text
before it does. Everything is deterministic: sorted file lists, a fixed seed, and
call ids numbered in order. It does not time anything; :mod:`benchmarks.replay` does.

Run ``python -m benchmarks.corpus --out corpus.json`` to dump it as OpenAI chat JSON.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reduction_app.engine.messages import Message, ToolCall

__all__ = [
    "DEFAULT_SEED",
    "SourceTree",
    "build_conversation",
    "conversation_chars",
    "django_root",
    "dump_openai",
]

DEFAULT_SEED = 20_250_917
GREP_MAX_MATCHES = 120
"""Matches a grep result shows before it says how many more there were."""
GREP_MAX_LINE = 200
"""Characters of a matching line shown, as ripgrep's ``--max-columns`` would."""

SYSTEM_PROMPT = (
    "You are a coding agent working in a checkout of the Django source tree. "
    "Use list_dir to see a folder, read_file to read a file and grep to search the "
    "tree with a Python regular expression. Cite files as path:line. Answer the user "
    "once you have read enough code to be sure."
)

# (folder to start in, what the user asks). Folders are relative to the tree's parent.
TASKS: tuple[tuple[str, str], ...] = (
    ("django/db/models/sql", "How does a QuerySet become SQL? Walk me through the compiler."),
    ("django/http", "Where are HttpRequest and HttpResponse built, and how are headers kept?"),
    ("django/template", "Explain how the template engine parses and renders a template."),
    ("django/forms", "How does form validation work, from is_valid() to cleaned_data?"),
    ("django/contrib/auth", "How are passwords hashed and checked? Which hashers exist?"),
    ("django/core/handlers", "Trace a request through the WSGI and ASGI handlers."),
    ("django/urls", "How does URL resolving work, including path converters?"),
    ("django/middleware", "What does each built-in middleware do to a response?"),
    ("django/db/migrations", "How does the autodetector decide which operations to write?"),
    ("django/core/cache", "Compare the cache backends and how keys are made."),
    ("django/contrib/admin", "How does the admin build a changelist page?"),
    ("django/core/management", "How are management commands found and run?"),
    ("django/utils", "Which helpers in django.utils deal with dates, text and HTML escaping?"),
    ("django/db/backends", "How do database backends differ in their schema editors?"),
    ("django/test", "How does the test client fake a request, and how are tests isolated?"),
    ("django/views", "How do class-based generic views compose their mixins?"),
)

_WORD_PATTERN = re.compile(r"\\b(\w+)\\b")
_DEFINITION = re.compile(r"^\s*(?:class|def)\s+([A-Za-z_][A-Za-z0-9_]{3,})", re.MULTILINE)


def django_root() -> Path:
    """The installed ``django`` package folder, found without importing Django."""
    spec = importlib.util.find_spec("django")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the benchmark corpus needs Django installed (pip install django)")
    return Path(next(iter(spec.submodule_search_locations)))


@dataclass
class SourceTree:
    """A source tree read once into memory; the three tools run against it."""

    root: Path
    """The package folder; paths are shown relative to its parent (``django/...``)."""
    texts: dict[str, str] = field(default_factory=dict)
    """Every ``.py`` file's text, by shown path, in sorted order."""

    @classmethod
    def load(cls, root: Path) -> SourceTree:
        tree = cls(root=root)
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            tree.texts[tree.shown(path)] = path.read_text(encoding="utf-8", errors="replace")
        return tree

    def shown(self, path: Path) -> str:
        return path.relative_to(self.root.parent).as_posix()

    def real(self, shown: str) -> Path:
        return self.root.parent / shown

    def files_under(self, folder: str) -> list[str]:
        prefix = folder.rstrip("/") + "/"
        return [p for p in self.texts if p.startswith(prefix)]

    def folders_under(self, folder: str) -> list[str]:
        base = self.real(folder)
        return sorted(
            self.shown(p) for p in base.rglob("*") if p.is_dir() and "__pycache__" not in p.parts
        )

    # The tools ---------------------------------------------------------------------

    def list_dir(self, folder: str) -> str:
        lines = []
        for entry in sorted(self.real(folder).iterdir(), key=lambda p: p.name):
            if entry.name == "__pycache__":
                continue
            if entry.is_dir():
                lines.append(f"{entry.name}/")
            else:
                lines.append(f"{entry.name}\t{entry.stat().st_size} bytes")
        return "\n".join(lines)

    def read_file(self, shown: str) -> str:
        return self.real(shown).read_text(encoding="utf-8", errors="replace")

    def grep(self, pattern: str, folder: str) -> str:
        regex = re.compile(pattern)
        # A word pattern's word must appear literally; `in` skips most files far faster
        # than the regex engine can, which finds no literal prefix in a leading \b.
        word = _WORD_PATTERN.fullmatch(pattern)
        needle = word.group(1) if word else ""
        out: list[str] = []
        total = 0
        for shown in self.files_under(folder):
            text = self.texts[shown]
            if needle not in text:
                continue
            # One line per matching line, numbered from 1, as grep -n. The patterns the
            # agent writes never span lines, so matching the whole text finds the same lines.
            number, counted_to, last_line = 1, 0, -1
            for match in regex.finditer(text):
                line_start = text.rfind("\n", 0, match.start()) + 1
                if line_start == last_line:
                    continue
                number += text.count("\n", counted_to, line_start)
                counted_to = last_line = line_start
                total += 1
                if len(out) < GREP_MAX_MATCHES:
                    line_end = text.find("\n", line_start)
                    line = text[line_start : None if line_end < 0 else line_end]
                    out.append(f"{shown}:{number}:{line.rstrip()[:GREP_MAX_LINE]}")
        if total == 0:
            return "No matches found."
        if total > len(out):
            out.append(f"[{total - len(out)} more matches not shown; narrow the pattern or path]")
        return "\n".join(out)


@dataclass
class _Agent:
    """The scripted agent's memory: what it has read and which names it has seen."""

    tree: SourceTree
    rng: random.Random
    messages: list[Message] = field(default_factory=list)
    next_call: int = 1
    chars: int = 0

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self.chars += _message_chars(message)

    def call_id(self) -> str:
        ident = f"call_{self.next_call:05d}"
        self.next_call += 1
        return ident

    def run_task(self, folder: str, question: str) -> None:
        self.add(Message.user(question))
        files = self.tree.files_under(folder)
        folders = [folder, *self.tree.folders_under(folder)]
        unread = list(files)
        self.rng.shuffle(unread)
        names: list[str] = []
        read: list[str] = []
        self._round([("list_dir", {"path": folder})], f"Let me look at {folder} first.")
        for _ in range(self.rng.randint(12, 22)):
            planned: list[tuple[str, dict[str, Any]]] = []
            for _ in range(self.rng.choice((1, 1, 2, 2, 2, 3))):
                planned.append(self._plan(folder, folders, unread, names, read))
            self._round(planned, self._thought(planned))
        self.add(Message.assistant(self._answer(question, read, names)))

    def _plan(
        self, folder: str, folders: list[str], unread: list[str], names: list[str], read: list[str]
    ) -> tuple[str, dict[str, Any]]:
        roll = self.rng.random()
        if names and roll < 0.35:
            name = self.rng.choice(names)
            scope = folder if self.rng.random() < 0.6 else "django"
            return "grep", {"pattern": rf"\b{name}\b", "path": scope}
        if roll < 0.45 and len(folders) > 1:
            return "list_dir", {"path": self.rng.choice(folders[1:])}
        # Once the task's folder is read through, the agent wanders the whole tree.
        path = unread.pop() if unread else self.rng.choice(sorted(self.tree.texts))
        read.append(path)
        found = _DEFINITION.findall(self.tree.texts[path])
        names.extend(sorted(set(found))[:12])
        return "read_file", {"path": path}

    def _round(self, planned: Sequence[tuple[str, dict[str, Any]]], thought: str) -> None:
        calls = tuple(
            ToolCall(id=self.call_id(), name=name, arguments=json.dumps(args))
            for name, args in planned
        )
        self.add(Message.assistant(thought, calls))
        for call, (name, args) in zip(calls, planned, strict=True):
            if name == "read_file":
                output = self.tree.read_file(args["path"])
            elif name == "grep":
                output = self.tree.grep(args["pattern"], args["path"])
            else:
                output = self.tree.list_dir(args["path"])
            self.add(Message.tool(output, call.id, name))

    def _thought(self, planned: Sequence[tuple[str, dict[str, Any]]]) -> str:
        bits = []
        for name, args in planned:
            if name == "read_file":
                bits.append(f"read {args['path']}")
            elif name == "grep":
                bits.append(f"search {args['path']} for {args['pattern']}")
            else:
                bits.append(f"list {args['path']}")
        opener = self.rng.choice(("Next I will", "To check this I will", "I should", "Let me"))
        return f"{opener} {' and '.join(bits)}."

    def _answer(self, question: str, read: list[str], names: list[str]) -> str:
        cited = ", ".join(sorted(set(read))[:8]) or "the listing"
        shown = ", ".join(sorted(set(names))[:10]) or "nothing new"
        return (
            f"Here is what the code says about: {question}\n\n"
            f"I read {len(set(read))} files ({cited}). The names that matter are {shown}. "
            "Each is defined in the files above; the call flow goes from the public entry "
            "point through the helpers listed, and the tests under tests/ pin the behaviour."
        )


def _message_chars(message: Message) -> int:
    calls = sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
    return len(message.content) + len(message.reasoning_content) + calls


def conversation_chars(messages: Sequence[Message]) -> int:
    """Characters of content, reasoning and tool-call names and arguments."""
    return sum(_message_chars(m) for m in messages)


def build_conversation(
    min_messages: int = 1000,
    min_chars: int = 1_000_000,
    *,
    seed: int = DEFAULT_SEED,
    root: Path | None = None,
) -> list[Message]:
    """A system prompt and task after task until both minimums are met; it always ends
    with the assistant's plain-text answer to the last task."""
    tree = SourceTree.load(root or django_root())
    agent = _Agent(tree=tree, rng=random.Random(seed))
    agent.add(Message.system(SYSTEM_PROMPT))
    task = 0
    while len(agent.messages) < min_messages or agent.chars < min_chars:
        folder, question = TASKS[task % len(TASKS)]
        if task >= len(TASKS):
            question = f"Going back to {folder}: {question} This time focus on the edge cases."
        agent.run_task(folder, question)
        task += 1
    return agent.messages


def dump_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as an OpenAI Chat Completions ``messages`` list."""
    from reduction_app.engine.formats.openai_chat import messages_to_openai

    return messages_to_openai(messages)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write OpenAI chat JSON here (else stdout)")
    parser.add_argument("--min-messages", type=int, default=1000)
    parser.add_argument("--min-chars", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    messages = build_conversation(args.min_messages, args.min_chars, seed=args.seed)
    text = json.dumps(dump_openai(messages), ensure_ascii=False, indent=1)
    if args.out is None:
        sys.stdout.write(text + "\n")
    else:
        args.out.write_text(text + "\n", encoding="utf-8")
        print(
            f"{len(messages)} messages, {conversation_chars(messages):,} characters -> {args.out}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
