"""The replay benchmark chains the longest runs of one agent into a long session, leaves
the recorded sessions out when the default recordings folder is missing (and refuses one
named that is), and runs end to end on a small corpus and generated sessions (figures
are not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import replay
from benchmarks.corpus import build_conversation, dump_openai
from benchmarks.replay import CHAIN_AGENT, chained_session
from reduction_app.engine import AgenticMessage, Message, ToolCall
from reduction_app.engine.blocks import (
    AssistantGenText,
    FunctionToolCall,
    FunctionToolResult,
    ToolResultContent,
    UserInputText,
)
from reduction_app.engine.formats.anthropic import messages_to_anthropic
from simulator.recordings_folder import RECORDINGS_VARIABLE
from tests.benchmarks.support import readme_copy, written_block


def _run(task: str, calls: int) -> list[Message]:
    """A mini-swe-agent-like run: a system prompt, a task, ``calls`` rounds of one bash
    call (ids ``call_0``...) and its output, and a final answer: ``2 * calls + 3``
    messages."""
    messages = [Message.system("You are an agent."), Message.user(task)]
    for i in range(calls):
        call = ToolCall(id=f"call_{i}", name="bash", arguments=f'{{"command": "ls {i}"}}')
        messages.append(Message.assistant(f"Step {i}.", (call,)))
        messages.append(Message.tool(f"{task}: output {i} " * 50, f"call_{i}"))
    messages.append(Message.assistant("Done."))
    return messages


def _agent_runs(folder: Path, calls: dict[str, int]) -> Path:
    """``folder`` with a run of each size under :data:`CHAIN_AGENT`, as chat JSON."""
    runs = folder / CHAIN_AGENT
    runs.mkdir(parents=True)
    for name, n in calls.items():
        wire = dump_openai(_run(name, n))
        (runs / f"{name}.json").write_text(json.dumps({"messages": wire}))
    return folder


def test_chained_session_chains_the_longest_runs_until_it_has_the_messages(
    tmp_path: Path,
) -> None:
    folder = _agent_runs(tmp_path, {"a": 3, "b": 5, "c": 4, "d": 1})
    # b has 13 messages, c 11, a 9: 13 + 11 reach 20; the later runs' system prompts
    # are left out.
    session = chained_session(folder, messages=20)
    assert session.runs == (f"{CHAIN_AGENT}/b.json#0", f"{CHAIN_AGENT}/c.json#0")
    assert len(session.messages) == 13 + 11 - 1
    assert [m.role for m in session.messages[12:14]] == ["assistant", "user"]
    assert session.messages[13].content == "c"
    assert [m.role for m in session.messages].count("system") == 1
    # Call ids carry their run's number: one session never reuses an id.
    assert session.messages[2].tool_calls[0].id == "1.call_0"
    assert session.messages[3].tool_call_id == "1.call_0"
    assert session.messages[16].tool_calls[0].id == "2.call_1"
    assert session.messages[17].tool_call_id == "2.call_1"
    # Asking for more than every run holds chains every run, longest first.
    every = chained_session(folder, messages=1_000)
    assert [r.split("/")[1] for r in every.runs] == ["b.json#0", "c.json#0", "a.json#0", "d.json#0"]
    assert len(every.messages) == 13 + 11 + 9 + 5 - 3


def test_main_refuses_a_missing_recordings_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    with pytest.raises(SystemExit) as exited:
        replay.main(["--recordings", str(missing)])
    assert exited.value.code == 2
    assert f"error: no recordings at {missing}: pass --recordings DIR" in capsys.readouterr().err


@pytest.mark.slow
def test_main_leaves_the_recorded_sessions_out_without_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default folder missing, the corpus is replayed and reported as always, and the
    report says in one sentence why the recorded sessions are not there."""
    missing = tmp_path / "none"
    monkeypatch.setenv(RECORDINGS_VARIABLE, str(missing))
    out, readme = tmp_path / "replay.json", readme_copy(tmp_path)
    argv = ["--runs", "1", "--min-messages", "40", "--min-chars", "10000"]
    assert replay.main([*argv, "--out", str(out), "--readme-path", str(readme)]) == 0
    sentence = (
        "Recorded sessions: left out, since the recordings folder is missing (no recordings "
        f"at {missing}: pass --recordings DIR or set {RECORDINGS_VARIABLE} to the folder of "
        "recorded agent runs (a copy of shared/data/conversations))."
    )
    assert sentence in capsys.readouterr().out.splitlines()
    report = json.loads(out.read_text(encoding="utf-8"))
    assert (report["recordings"], report["sessions"]) == (None, [])
    assert report["figures"]["ours_cl100k_base"]["deciles"]
    block = written_block(readme, "replay")
    assert block[-1] == sentence
    assert any(line.startswith("| replay | total s |") for line in block)
    assert not any(line.startswith("| session | threshold |") for line in block)


def test_main_refuses_sessions_without_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    monkeypatch.setenv(RECORDINGS_VARIABLE, str(missing))
    with pytest.raises(SystemExit) as exited:
        replay.main(["--session", "chain"])
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
    """A recordings folder of one chat session (the corpus's start), one content-block
    session and three runs of the chained agent, written in the formats the simulator
    reads."""
    _agent_runs(folder, {"a": 20, "b": 30, "c": 25})
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
    argv += ["--session-threshold", "2000", "--chain-messages", "100"]
    code = replay.main(
        [*argv, "--recordings", str(recordings), "--out", str(out), "--readme-path", str(readme)]
    )
    assert code == 0
    assert "Recorded sessions" in capsys.readouterr().out
    report = json.loads(out.read_text(encoding="utf-8"))
    # By default, the chained session alone: runs b (63 messages) and c (53) make 100.
    (chain,) = report["sessions"]
    assert chain["runs"] == [f"{CHAIN_AGENT}/b.json#0", f"{CHAIN_AGENT}/c.json#0"]
    assert (chain["kind"], chain["messages"], chain["calls"]) == ("chat", 63 + 53 - 1, 57)
    block = written_block(readme, "replay")
    assert any(f"Runs, in order: `{CHAIN_AGENT}/b.json#0`" in line for line in block)
    code = replay.main(
        [
            *argv,
            *("--session", "blocks.json", "--session", "chat.json", "--session", "chain"),
            *("--recordings", str(recordings), "--out", str(out), "--readme-path", str(readme)),
        ]
    )
    assert code == 0
    sessions = json.loads(out.read_text(encoding="utf-8"))["sessions"]
    assert [(s["label"], s["kind"]) for s in sessions] == [
        ("blocks.json#0", "blocks"),
        ("chat.json#0", "chat"),
        (chain["label"], "chat"),
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
