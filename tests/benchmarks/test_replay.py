"""The replay benchmark picks the longest recorded session of each kind, refuses a missing
recordings folder, and runs end to end on a small corpus and two generated sessions
(figures are not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import replay
from benchmarks.corpus import build_conversation, dump_openai
from benchmarks.replay import Session, default_sessions
from reduction_app.engine import AgenticMessage, Message
from reduction_app.engine.blocks import (
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    ToolResultContent,
    UserInputText,
)
from reduction_app.engine.formats.anthropic import messages_to_anthropic
from tests.benchmarks.support import readme_copy, written_block


def _session(label: str, messages: int, kind: str) -> Session:
    one: object = (
        AgenticMessage(role="user", content_blocks=(UserInputText(text="q"),))
        if kind == "blocks"
        else Message.user("q")
    )
    return Session(label, [one] * messages, ())


def test_default_sessions_takes_the_longest_of_each_kind() -> None:
    sessions = [
        _session("chat-a", 10, "chat"),
        _session("blocks-a", 7, "blocks"),
        _session("chat-b", 12, "chat"),
        _session("blocks-b", 7, "blocks"),
    ]
    # Ties go to the first in file order.
    assert [s.label for s in default_sessions(sessions)] == ["blocks-a", "chat-b"]


def test_main_refuses_a_missing_recordings_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    with pytest.raises(SystemExit) as exited:
        replay.main(["--recordings", str(missing)])
    assert exited.value.code == 2
    assert f"error: no recordings at {missing}: pass --recordings DIR" in capsys.readouterr().err


def _agentic_session(rounds: int) -> list[AgenticMessage]:
    """A Claude Code-like session: a question, then rounds of a call and its result."""
    messages = [AgenticMessage(role="user", content_blocks=(UserInputText(text="Fix the bug."),))]
    for i in range(rounds):
        call = FunctionToolCall(call_id=f"toolu_{i}", name="Read", arguments='{"path": "a.py"}')
        messages.append(
            AgenticMessage(
                role="assistant", content_blocks=(AssistantGenText(text="Reading."), call)
            )
        )
        text = f"line {i}: für alle 字 " * 200
        result = FunctionToolResult(
            call_id=f"toolu_{i}", name="Read", content=(ToolResultContent(text=text),)
        )
        messages.append(AgenticMessage(role="user", content_blocks=(result,)))
    return messages


def _recordings(folder: Path) -> Path:
    """A recordings folder of one chat session (the corpus's start) and one content-block
    session, written in the formats the simulator reads."""
    chat = build_conversation(60, 20_000)
    (folder / "chat.json").write_text(json.dumps({"messages": dump_openai(chat)}))
    _, wire = messages_to_anthropic(_agentic_session(30))
    (folder / "blocks.json").write_text(json.dumps({"messages": wire}))
    return folder


@pytest.mark.slow
def test_main_replays_the_corpus_and_the_recorded_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recordings = _recordings(tmp_path)
    out, readme = tmp_path / "replay.json", readme_copy(tmp_path)
    argv = ["--runs", "1", "--min-messages", "40", "--min-chars", "10000"]
    argv += ["--session-threshold", "2000"]
    code = replay.main(
        [*argv, "--recordings", str(recordings), "--out", str(out), "--readme-path", str(readme)]
    )
    assert code == 0
    assert "Recorded sessions" in capsys.readouterr().out
    report = json.loads(out.read_text(encoding="utf-8"))
    sessions = report["sessions"]
    assert [(s["label"], s["kind"]) for s in sessions] == [
        ("blocks.json#0", "blocks"),
        ("chat.json#0", "chat"),
    ]
    blocks = sessions[0]
    assert (blocks["messages"], blocks["calls"]) == (61, 30)
    at = blocks["thresholds"]["2000"]["figures"]["ours_cl100k_base"]
    assert at["calls_that_cleared"] > 0
    assert at["final_placeholders"] > 0
    assert len(at["deciles"]) == 10
    block = written_block(readme, "replay")
    assert any(line.startswith("| session | threshold | calls cleared |") for line in block)
    assert any(line.startswith("| decile | S1 at 2,000 | S2 at 2,000 |") for line in block)
