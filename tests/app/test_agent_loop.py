"""examples/agent_loop.py against a live server: both phases happen, and all is recorded."""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from reduction_app.client import ReductionClient
from reduction_app.models import Conversation, EventRecord, OffloadedFile
from reduction_app.workspaces.services import api_key_create, workspace_get_or_create

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "agent_loop.py"
CONVERSATION = "loop-test"
# What the scripted model names its calls in conversation CONVERSATION.
PREFIX = hashlib.sha256(CONVERSATION.encode()).hexdigest()[:8]
CALLS = [f"call_{PREFIX}_{n}" for n in range(1, 5)]


def _load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_loop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # dataclasses look their module up in sys.modules while the class is being made.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


agent_loop = _load_example()


@pytest.fixture
def raw_key(transactional_db: None) -> str:
    _, raw = api_key_create(workspace=workspace_get_or_create(name="loop"), name="agent loop")
    return raw


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with the files the scripted model asks for, of sizes fixed here (the
    real ones change with every commit): a small manage.py, the clear phase over the
    truncation limit, and 300 functions to grep. With the demo config, the conversation
    goes over 2,000 tokens before the fourth model call (about 2,500), not before (1,500)."""
    root = tmp_path / "repo"
    (root / "reduction_app" / "engine" / "_clear").mkdir(parents=True)
    (root / "manage.py").write_text('"""A fixture."""\nimport sys\n' + "# padding\n" * 30)
    (root / "reduction_app" / "engine" / "_clear" / "_phase.py").write_text(
        "".join(f"CLEAR_{n:04} = {n}  # a module constant\n" for n in range(400))
    )
    (root / "reduction_app" / "functions.py").write_text(
        "".join(f"def function_{n:03}() -> int:\n    return {n}\n\n" for n in range(300))
    )
    return root


@pytest.fixture
def report(live_server: Any, raw_key: str, repo: Path) -> Any:
    client = ReductionClient(live_server.url, api_key=raw_key)
    lines: list[str] = []
    out = agent_loop.run(client, conversation_id=CONVERSATION, repo=repo, say=lines.append)
    out.lines = lines
    return out


def test_agent_loop_calls_tools_in_order_and_answers(report: Any) -> None:
    calls = [
        (m["tool_calls"][0]["id"], m["tool_calls"][0]["function"]["name"])
        for m in report.messages
        if m["role"] == "assistant" and m.get("tool_calls")
    ]
    assert calls == list(zip(CALLS, ["read_file", "read_file", "grep", "read_file"], strict=True))
    first_match = report.tool_outputs[CALLS[2]].split("\n", 1)[0]
    assert report.answer == (
        f"The grep found the module-level functions; the first one is {first_match}"
    )


def test_agent_loop_tools_read_and_grep_the_repository(report: Any, repo: Path) -> None:
    manage = (repo / "manage.py").read_text(encoding="utf-8")
    assert report.tool_outputs[CALLS[0]] == agent_loop.numbered(manage, 0, 2000)[0]
    grep = report.tool_outputs[CALLS[2]].splitlines()
    assert len(grep) == 300
    assert grep[0] == "reduction_app/functions.py:1:def function_000() -> int:"
    assert grep[-1] == "reduction_app/functions.py:898:def function_299() -> int:"


def test_agent_loop_records_truncation_events(report: Any) -> None:
    """The small file stays whole; the large file and the grep are truncated and offloaded."""
    rows = EventRecord.objects.filter(
        conversation__client_id=CONVERSATION, phase="truncation"
    ).order_by("id")
    assert [(e.kind, e.tool_name, e.call_id, e.offload_path) for e in rows] == [
        ("tool", "read_file", CALLS[1], f"/tmp/trunc/{CALLS[1]}"),
        ("tool", "grep", CALLS[2], f"/tmp/trunc/{CALLS[2]}"),
    ]
    for event in rows:
        assert event.chars_before == len(report.tool_outputs[event.call_id])
        assert event.chars_after < event.chars_before


def test_agent_loop_records_a_clear_before_the_fourth_model_call(report: Any) -> None:
    summaries = EventRecord.objects.filter(
        conversation__client_id=CONVERSATION, phase="clear", kind="summary"
    ).order_by("id")
    assert [(s.applied, s.threshold) for s in summaries] == [
        (False, 2000),
        (False, 2000),
        (False, 2000),
        (True, 2000),
        (False, 2000),
    ]
    applied = summaries[3]
    assert applied.calls_cleared == 2
    assert applied.tokens_after < 2000 < applied.tokens_before
    cleared = EventRecord.objects.filter(
        conversation__client_id=CONVERSATION, phase="clear", kind="tool"
    ).order_by("id")
    # The truncated result already has a file, so clearing it points at that one.
    assert [(e.call_id, e.offload_path) for e in cleared] == [
        (CALLS[0], f"/tmp/clear/{CALLS[0]}"),
        (CALLS[1], f"/tmp/trunc/{CALLS[1]}"),
    ]
    assert report.offload_paths == [
        f"/tmp/trunc/{CALLS[1]}",
        f"/tmp/trunc/{CALLS[2]}",
        f"/tmp/clear/{CALLS[0]}",
    ]


def test_agent_loop_offloads_hold_the_original_outputs(
    report: Any, raw_key: str, live_server: Any
) -> None:
    client = ReductionClient(live_server.url, api_key=raw_key)
    for call_id, path in [
        (CALLS[0], f"/tmp/clear/{CALLS[0]}"),
        (CALLS[1], f"/tmp/trunc/{CALLS[1]}"),
        (CALLS[2], f"/tmp/trunc/{CALLS[2]}"),
    ]:
        original = report.tool_outputs[call_id]
        assert client.raw_file(path) == original
        row = OffloadedFile.objects.get(path=path)
        assert (row.call_id, row.size_chars) == (call_id, len(original))
        assert row.sha256 == hashlib.sha256(original.encode("utf-8")).hexdigest()
        assert row.conversation == Conversation.objects.get(client_id=CONVERSATION)


def test_agent_loop_reads_the_offload_back_through_read_file(report: Any) -> None:
    """The model's read_file call on the grep's offload returns the grep's own first lines."""
    path = f"/tmp/trunc/{CALLS[2]}"
    expected = agent_loop.numbered(report.tool_outputs[CALLS[2]], 0, 5)[0]
    assert report.read_backs == [{"path": path, "offset": 0, "limit": 5, "content": expected}]
    assert report.tool_outputs[CALLS[3]].startswith(expected)
    assert OffloadedFile.objects.get(path=path).read_count == 1


def test_agent_loop_prints_what_each_step_sent_and_saved(report: Any) -> None:
    text = "\n".join(report.lines)
    assert f"/truncate: {len(report.tool_outputs[CALLS[0]]):,} chars, kept as is" in text
    assert f"offloaded /tmp/trunc/{CALLS[2]}" in text
    assert f"offloaded /tmp/clear/{CALLS[0]}" in text
    assert "(cleared, saved " in text
    assert report.lines[-1] == f"        model answers: {report.answer}"
    # The first call sends the opening; each one after it only the model's call and the
    # tool's result added since (the server continues its last answer).
    sent = [
        line.split("(", 1)[1].split(" ", 1)[0] for line in text.splitlines() if "/clear:" in line
    ]
    assert sent == ["2", "2", "2", "2", "2"]


def test_agent_loop_runs_as_a_script_on_this_repository(live_server: Any, raw_key: str) -> None:
    """The command the README gives, in a process of its own (no Django there), on this
    repository's real files; their sizes change, so only what they cannot change is checked."""
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            "--url",
            live_server.url,
            "--key",
            raw_key,
            "--conversation-id",
            "loop-script",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    lines = done.stdout.splitlines()
    assert lines[0] == f"conversation loop-script on {live_server.url}"
    assert lines[-1].endswith(
        f"events at {live_server.url}/api/v1/events?conversation_id=loop-script"
    )
    calls = [f"call_{hashlib.sha256(b'loop-script').hexdigest()[:8]}_{n}" for n in range(1, 5)]
    events = EventRecord.objects.filter(conversation__client_id="loop-script")
    # The clear phase's module and the grep over reduction_app/ are far over 4,000 characters.
    assert sorted(events.filter(phase="truncation").values_list("call_id", flat=True)) == [
        calls[1],
        calls[2],
    ]
    assert events.filter(phase="clear", kind="summary", applied=True).exists()
    grep = OffloadedFile.objects.get(path=f"/tmp/trunc/{calls[2]}")
    assert grep.read_count == 1
    client = ReductionClient(live_server.url, api_key=raw_key)
    first_match = client.raw_file(grep.path).split("\n", 1)[0]
    assert first_match.startswith("reduction_app/")
    answer = f"The grep found the module-level functions; the first one is {first_match}"
    assert f"        model answers: {answer}" in lines


def test_agent_loop_script_reports_a_refused_key(live_server: Any, transactional_db: None) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--url", live_server.url, "--key", "rl_wrong"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "the API refused: HTTP 401: missing or invalid API key\n",
    )
