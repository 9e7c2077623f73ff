"""Realistic agent conversations, made by running real tools over a real source tree.

This module owns the scripted coding agent and its three tools (``list_dir``,
``read_file``, ``grep``), run over one or more real folders shown under top-level names
(the installed Django package is ``django/...``). Hooks see every model call and every
tool call, which is where a reduction engine comes in. It times nothing
(:mod:`benchmarks.replay` does) and records nothing (``reduction_app/demo/`` does).
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from reduction_app.engine import Message, ToolCall

__all__ = [
    "CHECKOUT_SKIP_DIRS",
    "DEFAULT_SEED",
    "SKIP_DIRS",
    "SYSTEM_PROMPT",
    "TASKS",
    "TOOLS_OPENAI",
    "AgentHooks",
    "ScriptedAgent",
    "SourceTree",
    "Task",
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
SKIP_DIRS = frozenset({"__pycache__"})
"""Folders no tool looks into, by default."""
CHECKOUT_SKIP_DIRS = SKIP_DIRS | frozenset(
    {
        ".git",
        ".venv",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "media",
        "staticfiles",
        "screenshots",
        "build",
    }
)
"""Also left out of a project checkout: caches, virtualenvs, generated files."""

SYSTEM_PROMPT = (
    "You are a coding agent working in a checkout of the Django source tree. "
    "Use list_dir to see a folder, read_file to read a file and grep to search the "
    "tree with a Python regular expression. Cite files as path:line. Answer the user "
    "once you have read enough code to be sure."
)

# (folder to start in, what the user asks). Folders are shown paths (``django/...``).
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


def _function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": ["path"]},
        },
    }


TOOLS_OPENAI: tuple[dict[str, Any], ...] = (
    _function(
        "list_dir",
        "List a folder: sub-folders end with '/', files show their size in bytes.",
        {"path": {"type": "string", "description": "The folder, e.g. django/http."}},
    ),
    _function(
        "read_file",
        "Read a whole file of the tree, or a file that holds offloaded tool output.",
        {"path": {"type": "string", "description": "The file, e.g. django/http/request.py."}},
    ),
    _function(
        "grep",
        "Search the text files under a folder with a Python regular expression; "
        "returns 'path:line:text' for each matching line.",
        {
            "pattern": {"type": "string", "description": "A Python regular expression."},
            "path": {"type": "string", "description": "The folder to search."},
        },
    ),
)
"""The three tools' schemas in OpenAI chat format, as an agent would declare them."""

_WORD_PATTERN = re.compile(r"\\b(\w+)\\b")
_DEFINITION = re.compile(r"^\s*(?:class|def)\s+([A-Za-z_][A-Za-z0-9_]{3,})", re.MULTILINE)


def django_root() -> Path:
    """The installed ``django`` package folder, found without importing Django."""
    spec = importlib.util.find_spec("django")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the agent's source tree needs Django installed (pip install django)")
    return Path(next(iter(spec.submodule_search_locations)))


def _walk(base: Path, skip: frozenset[str]) -> tuple[list[Path], list[Path]]:
    """Every folder and file under ``base``, leaving out folders named in ``skip``."""
    folders: list[Path] = []
    files: list[Path] = []
    for current, dirs, names in os.walk(base):
        dirs[:] = [d for d in dirs if d not in skip]
        here = Path(current)
        folders.extend(here / d for d in dirs)
        files.extend(here / n for n in names)
    return folders, files


@dataclass
class SourceTree:
    """A source tree whose text files are read once into memory; the tools run on it."""

    mounts: dict[str, Path]
    """Shown top-level name → real folder (``{"django": .../site-packages/django}``)."""
    texts: dict[str, str] = field(default_factory=dict)
    """Every text file's content by shown path, mount by mount, in sorted order."""
    skip: frozenset[str] = SKIP_DIRS
    """Folder names every tool leaves out."""

    @classmethod
    def load(cls, root: Path, *, suffixes: Sequence[str] = (".py",)) -> SourceTree:
        """One folder, shown under its own name."""
        return cls.load_mounts({root.name: root}, suffixes=suffixes)

    @classmethod
    def load_mounts(
        cls,
        mounts: Mapping[str, Path],
        *,
        suffixes: Sequence[str] = (".py",),
        skip: frozenset[str] = SKIP_DIRS,
    ) -> SourceTree:
        """Several folders, each shown under its key; ``suffixes`` picks the files grep
        searches (``read_file`` reads any file)."""
        tree = cls(mounts=dict(mounts), skip=skip)
        for name, base in tree.mounts.items():
            _, files = _walk(base, skip)
            # Sorted as paths (by their parts), so a folder's files come before a sibling
            # folder whose name extends it ("sql/" before "sql-lite/").
            for path in sorted(p for p in files if p.suffix in suffixes):
                shown = f"{name}/{path.relative_to(base).as_posix()}"
                tree.texts[shown] = path.read_text(encoding="utf-8", errors="replace")
        return tree

    def real(self, shown: str) -> Path:
        """The real path of a shown one; a path outside every mount is refused."""
        top, _, rest = shown.strip("/").partition("/")
        base = self.mounts.get(top)
        parts = Path(rest).parts
        if base is None or ".." in parts or any(p in self.skip for p in parts):
            raise FileNotFoundError(f"no such file or folder: {shown}")
        return base / rest if rest else base

    def files_under(self, folder: str) -> list[str]:
        prefix = folder.rstrip("/") + "/"
        return [p for p in self.texts if p.startswith(prefix)]

    def folders_under(self, folder: str) -> list[str]:
        top = folder.strip("/").partition("/")[0]
        base = self.mounts[top]
        found, _ = _walk(self.real(folder), self.skip)
        return sorted(f"{top}/{p.relative_to(base).as_posix()}" for p in found)

    # The tools ---------------------------------------------------------------------

    def list_dir(self, folder: str) -> str:
        """The folder's sorted entries: folders with a trailing ``/``, files with their size."""
        lines = []
        for entry in sorted(self.real(folder).iterdir(), key=lambda p: p.name):
            if entry.name in self.skip:
                continue
            if entry.is_dir():
                lines.append(f"{entry.name}/")
            else:
                lines.append(f"{entry.name}\t{entry.stat().st_size} bytes")
        return "\n".join(lines)

    def read_file(self, shown: str) -> str:
        """The file's whole, real content."""
        return self.real(shown).read_text(encoding="utf-8", errors="replace")

    def grep(self, pattern: str, folder: str) -> str:
        """A Python ``re`` search over the text files under ``folder``: one
        ``path:line:text`` line per match, capped like an agent's grep tool."""
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

    def run_tool(self, name: str, arguments: str) -> str:
        """Run one tool call: ``name`` and its JSON ``arguments``, as a model sends them."""
        args = json.loads(arguments)
        if name == "read_file":
            return self.read_file(args["path"])
        if name == "grep":
            return self.grep(args["pattern"], args["path"])
        if name == "list_dir":
            return self.list_dir(args["path"])
        raise ValueError(f"unknown tool {name!r}")


Planned = tuple[str, dict[str, Any]]
"""One tool call the agent means to make: the tool's name and its arguments."""


@dataclass(frozen=True)
class Task:
    """One user question and how the agent goes about it."""

    folder: str
    """Where the agent starts (its first call lists it); a shown path."""
    question: str
    script: tuple[tuple[Planned, ...], ...] = ()
    """Rounds made first, as written, after the listing (then the agent wanders)."""
    rounds: tuple[int, int] = (12, 22)
    """How many wandering rounds, drawn between these two (inclusive)."""


class AgentHooks:
    """What happens around the agent's calls; by default nothing (the raw conversation)."""

    def before_model(self, messages: list[Message]) -> list[Message]:
        """Called before each model call with the context; the agent keeps what it returns."""
        return messages

    def run_tool(self, call: ToolCall, tool: Callable[[str], str]) -> str:
        """Run ``tool`` (arguments JSON → output) for ``call``; the result goes in the context."""
        return tool(call.arguments)


@dataclass
class ScriptedAgent:
    """The scripted agent's memory: its context, what it has read and which names it saw.

    A task is a user question, then rounds (an assistant message with one to three tool
    calls, then their results, produced by really running the tools), scripted ones first
    when the task has them; it ends with a plain-text answer. Deterministic: sorted file
    lists, a seeded ``random.Random``, call ids numbered in order.
    """

    tree: SourceTree
    rng: random.Random
    hooks: AgentHooks = field(default_factory=AgentHooks)
    call_prefix: str = "call_"
    """Call ids are this and a number, ``call_00001`` on; give each conversation its own
    when offloads of several conversations share one store."""
    messages: list[Message] = field(default_factory=list)
    next_call: int = 1
    chars: int = 0

    def add(self, message: Message) -> None:
        self.messages.append(message)
        self.chars += _message_chars(message)

    def call_id(self) -> str:
        ident = f"{self.call_prefix}{self.next_call:05d}"
        self.next_call += 1
        return ident

    def run_task(self, task: Task) -> None:
        folder, question = task.folder, task.question
        self.add(Message.user(question))
        files = self.tree.files_under(folder)
        folders = [folder, *self.tree.folders_under(folder)]
        unread = list(files)
        self.rng.shuffle(unread)
        names: list[str] = []
        read: list[str] = []
        self._round([("list_dir", {"path": folder})], f"Let me look at {folder} first.")
        for planned in task.script:
            for name, args in planned:
                if name == "read_file":
                    read.append(args["path"])
            self._round(planned, self._thought(planned))
        for _ in range(self.rng.randint(*task.rounds)):
            wandering: list[Planned] = []
            for _ in range(self.rng.choice((1, 1, 2, 2, 2, 3))):
                wandering.append(self._plan(folder, folders, unread, names, read))
            self._round(wandering, self._thought(wandering))
        self._model_call()
        self.add(Message.assistant(self._answer(question, read, names)))

    def _plan(
        self, folder: str, folders: list[str], unread: list[str], names: list[str], read: list[str]
    ) -> Planned:
        roll = self.rng.random()
        if names and roll < 0.35:
            name = self.rng.choice(names)
            scope = folder if self.rng.random() < 0.6 else folder.partition("/")[0]
            return "grep", {"pattern": rf"\b{name}\b", "path": scope}
        if roll < 0.45 and len(folders) > 1:
            return "list_dir", {"path": self.rng.choice(folders[1:])}
        # Once the task's folder is read through, the agent wanders the rest of its mount.
        path = unread.pop() if unread else self.rng.choice(self._mount_files(folder))
        read.append(path)
        found = _DEFINITION.findall(self.tree.texts[path])
        names.extend(sorted(set(found))[:12])
        return "read_file", {"path": path}

    def _mount_files(self, folder: str) -> list[str]:
        top = folder.partition("/")[0] + "/"
        return sorted(p for p in self.tree.texts if p.startswith(top))

    def _model_call(self) -> None:
        self.messages = list(self.hooks.before_model(self.messages))

    def _round(self, planned: Sequence[Planned], thought: str) -> None:
        calls = tuple(
            ToolCall(id=self.call_id(), name=name, arguments=json.dumps(args))
            for name, args in planned
        )
        self._model_call()
        self.add(Message.assistant(thought, calls))
        for call in calls:
            output = self.hooks.run_tool(call, partial(self._tool, call.name))
            self.add(Message.tool(output, call.id, call.name))

    def _tool(self, name: str, arguments: str) -> str:
        try:
            return self.tree.run_tool(name, arguments)
        except (OSError, ValueError, KeyError) as exc:
            return f"error: {exc}"

    def _thought(self, planned: Sequence[Planned]) -> str:
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
    """A system prompt and task after task (from :data:`TASKS`) until both minimums are
    met; it always ends with the assistant's plain-text answer to the last task."""
    tree = SourceTree.load(root or django_root())
    agent = ScriptedAgent(tree=tree, rng=random.Random(seed))
    agent.add(Message.system(SYSTEM_PROMPT))
    task = 0
    while len(agent.messages) < min_messages or agent.chars < min_chars:
        folder, question = TASKS[task % len(TASKS)]
        if task >= len(TASKS):
            question = f"Going back to {folder}: {question} This time focus on the edge cases."
        agent.run_task(Task(folder, question))
        task += 1
    return agent.messages


def dump_openai(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as an OpenAI Chat Completions ``messages`` list."""
    from reduction_app.engine.formats import messages_to_openai

    return messages_to_openai(messages)
