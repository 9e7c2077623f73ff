"""The scripted agent and its real tools (``simulator/corpus.py``)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from reduction_app.engine.messages import Message, ToolCall
from simulator.corpus import (
    AgentHooks,
    ScriptedAgent,
    SourceTree,
    Task,
    build_conversation,
)


@pytest.fixture
def tree(tmp_path: Path) -> SourceTree:
    """Two mounts: ``pkg`` (two modules, a sub-package, a cache) and ``docs``."""
    pkg = tmp_path / "src" / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__pycache__").mkdir()
    (pkg / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (pkg / "a.py").write_text("class Alpha:\n    pass\n\n\ndef beta_call():\n    Alpha()\n")
    (pkg / "sub" / "b.py").write_text("from pkg.a import Alpha\n\nALPHA = Alpha\n")
    (pkg / "notes.txt").write_text("Alpha is not code here\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.html").write_text("<p>Alpha</p>\n<script>alert(1)</script>\n")
    return SourceTree.load_mounts({"pkg": pkg, "docs": docs}, suffixes=(".py", ".html"))


def test_source_tree_loads_text_files_by_shown_path(tree: SourceTree) -> None:
    assert list(tree.texts) == ["pkg/a.py", "pkg/sub/b.py", "docs/index.html"]


def test_source_tree_list_dir_shows_folders_and_sizes(tree: SourceTree) -> None:
    assert tree.list_dir("pkg") == "a.py\t53 bytes\nnotes.txt\t23 bytes\nsub/"


def test_source_tree_grep_numbers_lines_across_mounts(tree: SourceTree) -> None:
    assert tree.grep(r"\bAlpha\b", "pkg") == (
        "pkg/a.py:1:class Alpha:\npkg/a.py:6:    Alpha()\n"
        "pkg/sub/b.py:1:from pkg.a import Alpha\npkg/sub/b.py:3:ALPHA = Alpha"
    )
    assert tree.grep("<script", "docs") == "docs/index.html:2:<script>alert(1)</script>"
    assert tree.grep("gamma", "pkg") == "No matches found."


def test_source_tree_read_file_reads_any_file_of_a_mount(tree: SourceTree) -> None:
    assert tree.run_tool("read_file", json.dumps({"path": "pkg/notes.txt"})) == (
        "Alpha is not code here\n"
    )


@pytest.mark.parametrize("path", ["pkg/../../etc/passwd", "other/a.py", "pkg/__pycache__/x"])
def test_source_tree_refuses_paths_outside_its_mounts(tree: SourceTree, path: str) -> None:
    with pytest.raises(FileNotFoundError, match=f"^no such file or folder: {path}$"):
        tree.read_file(path)


class Recording(AgentHooks):
    """Hooks that note what they saw and mark tool output."""

    def __init__(self) -> None:
        self.model_calls: list[int] = []
        self.tool_calls: list[str] = []

    def before_model(self, messages: list[Message]) -> list[Message]:
        self.model_calls.append(len(messages))
        return messages

    def run_tool(self, call: ToolCall, tool: Callable[[str], str]) -> str:
        self.tool_calls.append(call.id)
        return "seen: " + tool(call.arguments)


def test_scripted_agent_calls_hooks_before_each_model_call_and_for_each_tool(
    tree: SourceTree,
) -> None:
    hooks = Recording()
    agent = ScriptedAgent(tree=tree, rng=random.Random(7), hooks=hooks, call_prefix="c_")
    script = ((("read_file", {"path": "docs/index.html"}),),)
    agent.run_task(Task("pkg", "What is Alpha?", script=script, rounds=(1, 1)))
    messages = agent.messages
    assistants = [i for i, m in enumerate(messages) if m.role == "assistant"]
    assert hooks.model_calls == assistants
    calls = [c for m in messages for c in m.tool_calls]
    numbered = [f"c_{n:05d}" for n in range(1, len(calls) + 1)]
    assert hooks.tool_calls == [c.id for c in calls] == numbered
    assert [(c.name, json.loads(c.arguments)) for c in calls[:2]] == [
        ("list_dir", {"path": "pkg"}),
        ("read_file", {"path": "docs/index.html"}),
    ]
    tools = [m for m in messages if m.role == "tool"]
    assert tools[1].content == "seen: <p>Alpha</p>\n<script>alert(1)</script>\n"
    assert messages[-1].role == "assistant" and not messages[-1].tool_calls


def test_scripted_agent_answers_tool_errors_as_output(tree: SourceTree) -> None:
    agent = ScriptedAgent(tree=tree, rng=random.Random(1))
    agent.run_task(
        Task("pkg", "?", script=((("read_file", {"path": "pkg/gone.py"}),),), rounds=(0, 0))
    )
    assert agent.messages[4].content.startswith("error: [Errno 2] No such file or directory")


def test_build_conversation_is_deterministic_over_the_installed_django() -> None:
    first = build_conversation(60, 0)
    assert first == build_conversation(60, 0)
    assert len(first) >= 60
    assert first[0].role == "system" and first[-1].role == "assistant"
    assert not first[-1].tool_calls
