"""Real-world recordings: SWE-agent trajectories, τ²-bench files, Claude Code logs, the long
OpenHands run, and the loud failure on a file with no model call."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from reduction_app.engine import AgenticMessage
from simulator.cli import main
from simulator.importers import ImportError_, detect_format, load_conversations
from simulator.sources import claude_code
from simulator.sources.openhands import OBSERVATION_CUT_MARKER
from simulator.transcript import model_calls
from tests.conftest import CONVERSATIONS, needs_recordings

SWE = CONVERSATIONS / "swe-agent"
TAU2 = CONVERSATIONS / "tau2"
CLAUDE = CONVERSATIONS / "claude-code"
FASTJSON2 = CONVERSATIONS / "openhands" / "fastjson2-2775-gpt-5.jsonl"


@needs_recordings
def test_swe_agent_1x_tool_call_history() -> None:
    [conv] = load_conversations(SWE / "gpt-4o-test-repo-1c2844.traj")
    assert (conv.format, conv.model) == ("openai_chat", "gpt-4o")
    assert conv.strategy == {"keep_last_observations": 5}
    assert conv.usage is not None
    assert (conv.usage.total_prompt_tokens, conv.usage.api_calls) == (7141, 5)
    roles = [m.role for m in conv.messages]
    assert roles[:2] == ["system", "user"] and "tool" in roles
    calls = [c for m in conv.messages for c in m.tool_calls]
    results = [m.tool_call_id for m in conv.messages if m.role == "tool"]
    assert results == [c.id for c in calls][: len(results)]


@needs_recordings
def test_swe_agent_old_form_actions_become_tool_calls() -> None:
    """The older form: each action is a call named by its first word, its observation
    (the next user message) that call's result; the thought stays the text."""
    [conv] = load_conversations(SWE / "gpt4-test-repo-i1.traj")
    assert conv.usage is not None
    assert (conv.usage.total_prompt_tokens, conv.usage.api_calls) == (52861, 5)
    assert len(model_calls(conv.messages)) == 5
    first = next(m for m in conv.messages if m.tool_calls)
    [call] = first.tool_calls
    assert call.id.startswith("swe-")
    assert json.loads(call.arguments)["command"].split()[0] == call.name
    answer = conv.messages[conv.messages.index(first) + 1]
    assert (answer.role, answer.tool_call_id) == ("tool", call.id)


@needs_recordings
def test_openhands_long_run_is_replayed_as_the_agent_sent_it() -> None:
    """The two build logs over max_message_chars (30,000) are cut as OpenHands cut them;
    every other output, file reads included (up to 19,111 characters), stays whole."""
    [conv] = load_conversations(FASTJSON2)
    assert conv.name == "fastjson2-2775-gpt-5.jsonl#alibaba__fastjson2-2775"
    assert len(model_calls(conv.messages)) == 20
    [run] = [json.loads(line) for line in FASTJSON2.read_text(encoding="utf-8").splitlines()]
    assert run["metadata"]["llm_config"]["max_message_chars"] == 30000
    recorded = [str(e["content"]) for e in run["history"] if e.get("observation")]
    long = sorted(len(c) for c in recorded if len(c) > 30000)
    assert long == [54997, 915640]
    results = [str(m.content) for m in conv.messages if m.role == "tool"]
    assert results == [
        c if len(c) <= 30000 else c[:15000] + OBSERVATION_CUT_MARKER + c[-15000:] for c in recorded
    ]
    assert max(len(r) for r in results) == 30000 + len(OBSERVATION_CUT_MARKER)


@needs_recordings
def test_swe_agent_is_not_taken_for_openhands() -> None:
    """Both have ``history``; a trajectory used to import as an empty OpenHands run."""
    data = json.loads((SWE / "gpt4-pydicom-1458.traj").read_text(encoding="utf-8"))
    assert detect_format(data) == "swe_agent"
    assert detect_format({"history": [{"action": "run", "observation": None}]}) == "openhands"


def test_swe_agent_multi_agent_run_is_one_conversation_per_agent() -> None:
    history = [
        {"role": "system", "content": "plan", "agent": "Manager"},
        {"role": "user", "content": "issue", "agent": "Manager"},
        {"role": "assistant", "content": "ok", "thought": "ok", "action": "", "agent": "Manager"},
        {"role": "system", "content": "code", "agent": "Programmer"},
        {"role": "user", "content": "issue", "agent": "Programmer"},
        {"role": "assistant", "content": "x", "thought": "look", "action": "ls -a",
         "agent": "Programmer"},
        {"role": "user", "content": "a.py", "agent": "Programmer"},
        {"role": "assistant", "content": "done", "agent": "Programmer"},
    ]  # fmt: skip
    from simulator.importers import conversation_from_json

    manager, programmer = conversation_from_json({"history": history, "info": {}}, name="t.traj")
    assert (manager.name, programmer.name) == ("t.traj#Manager", "t.traj#Programmer")
    assert manager.usage is None
    assert [m.role for m in programmer.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert programmer.messages[2].tool_calls[0].name == "ls"
    assert programmer.messages[3].content == "a.py"


@needs_recordings
def test_tau2_simulations_as_the_agent_saw_them() -> None:
    convs = load_conversations(TAU2 / "airline-gpt-4.1-mini.json")
    assert len(convs) == 5
    conv = convs[0]
    assert conv.model == "openai/gpt-4.1-mini"
    assert conv.messages[0].role == "system" and "Airline" in conv.messages[0].content
    # the greeting comes before any input: recorded, but no model call
    assert (conv.messages[1].role, conv.messages[1].content) == (
        "assistant",
        "Hi! How can I help you today?",
    )
    assert 1 not in model_calls(conv.messages)
    assert conv.usage is not None
    assert sorted(conv.usage.prompt_tokens) == model_calls(conv.messages)
    assert sum(sum(c.usage.prompt_tokens.values()) for c in convs if c.usage) == 190_364


@needs_recordings
def test_tau2_telecom_hides_the_users_own_tool_calls() -> None:
    data = json.loads((TAU2 / "telecom-gpt-4.1-mini.json").read_text(encoding="utf-8"))
    raw = data["simulations"][0]["messages"]
    user_side = [m for m in raw if m["role"] == "tool" and m.get("requestor") == "user"]
    assert user_side  # the file does have them
    [conv] = load_conversations(TAU2 / "telecom-gpt-4.1-mini.json")
    agent_calls = {c.id for m in conv.messages for c in m.tool_calls}
    results = {m.tool_call_id for m in conv.messages if m.role == "tool"}
    assert results <= agent_calls
    assert not {m["id"] for m in user_side} & results


@needs_recordings
def test_claude_code_session_joins_split_responses_and_skips_sidechains() -> None:
    [conv] = load_conversations(CLAUDE / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl")
    assert conv.format == "anthropic"
    assert conv.model == "claude-sonnet-4-20250514"
    assert all(isinstance(m, AgenticMessage) for m in conv.messages)
    roles = [m.role for m in conv.messages]
    assert all(a != b for a, b in itertools.pairwise(roles))  # joined
    # 18 main-thread assistant lines are 9 responses; 244 sub-agent lines are left out
    assert len(model_calls(conv.messages)) == 9
    assert conv.usage is not None and len(conv.usage.prompt_tokens) == 9


@needs_recordings
@pytest.mark.parametrize(
    "name",
    [
        "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
        "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
    ],
)
def test_claude_code_sessions_import(name: str) -> None:
    path = CLAUDE / name
    [conv] = load_conversations(path)
    assert model_calls(conv.messages)
    assert conv.name == f"{path.name}#{path.stem}"


def test_a_file_without_model_calls_fails_loudly(tmp_path: Path) -> None:
    path = tmp_path / "empty.traj"
    path.write_text(json.dumps({"history": [], "trajectory": [], "info": {}}), encoding="utf-8")
    with pytest.raises(ImportError_) as info:
        load_conversations(path)
    assert str(info.value) == "empty.traj: no conversation found, read as swe_agent"
    path.write_text(
        json.dumps({"history": [{"role": "system", "content": "x"}], "trajectory": []}),
        encoding="utf-8",
    )
    with pytest.raises(ImportError_) as info:
        load_conversations(path)
    assert str(info.value) == (
        "empty.traj: no model call found, read as swe_agent: 1 messages, 0 from the "
        "assistant, none after user input or a tool result (name the format with --format "
        "if it was detected wrongly)"
    )


def test_cli_exits_2_on_a_file_without_model_calls(tmp_path: Path) -> None:
    from io import StringIO

    path = tmp_path / "greeting.json"
    path.write_text(json.dumps([{"role": "assistant", "content": "Hi!"}]), encoding="utf-8")
    out, err = StringIO(), StringIO()
    assert main(["replay", str(path)], out=out, err=err) == 2
    assert out.getvalue() == ""
    assert err.getvalue().startswith("error: greeting.json: no model call found, read as ")


def test_claude_code_bookkeeping_lines_are_left_out(tmp_path: Path) -> None:
    """Claude Code 2.x writes snapshot and queue lines between the conversation's; a
    synthetic assistant notice (an interrupted request) is no model call."""
    session = {"sessionId": "s1", "uuid": "u"}
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 5}
    snapshot = {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}}
    bash = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    lines = [
        {**snapshot, "isSnapshotUpdate": False},
        {**session, "type": "user", "message": {"role": "user", "content": "list files"}},
        {**session, "type": "assistant", "message": {
            "id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage,
            "content": [{"type": "text", "text": "Listing."}]}},
        {**session, "type": "assistant", "message": {
            "id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage,
            "content": [bash]}},
        {**snapshot, "isSnapshotUpdate": True},
        {**session, "type": "user", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}]}},
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s1"},
        {**session, "type": "assistant", "message": {
            "id": "msg_2", "role": "assistant", "model": "<synthetic>",
            "content": [{"type": "text", "text": "[Request interrupted by user]"}]}},
        {**session, "type": "assistant", "message": {
            "id": "msg_3", "role": "assistant", "model": "claude-sonnet-4-5",
            "usage": {**usage, "cache_read_input_tokens": 215},
            "content": [{"type": "text", "text": "One file."}]}},
        {"type": "summary", "summary": "Listed files", "leafUuid": "u"},
    ]  # fmt: skip
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    [conv] = load_conversations(path)
    assert conv.name == "s1.jsonl#s1"
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant"]
    assert [b.type for b in conv.messages[1].content_blocks] == [
        "assistant_gen_text",
        "function_tool_call",
    ]
    assert conv.usage is not None and conv.usage.prompt_tokens == {1: 215, 3: 425}


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"role": "tool", "content": "x", "tool_call_ids": {"a": 1}}, "got {'a': 1}"),
        ({"role": "tool", "content": "x", "tool_call_ids": "abc"}, "got 'abc'"),
        ({"role": "tool", "content": "x"}, "got [None]"),
        (
            {"role": "user", "content": [{"type": "text", "text": 5}]},
            ".content[0].text: expected a string, got 5",
        ),
        ({"role": "wizard", "content": "x"}, ".role: unknown role 'wizard'"),
    ],
)
def test_swe_agent_bad_entries_name_the_field(tmp_path: Path, entry: dict, message: str) -> None:
    path = tmp_path / "bad.traj"
    data = {"history": [{"role": "system", "content": "s"}, entry], "trajectory": []}
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ImportError_) as info:
        load_conversations(path)
    assert str(info.value).startswith("bad.traj: history[1]")
    assert str(info.value).endswith(message)


def test_swe_agent_image_parts_are_skipped(tmp_path: Path) -> None:
    from simulator.importers import conversation_from_json

    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:"}},
            ],
        },
        {"role": "assistant", "content": "ok"},
    ]
    [conv] = conversation_from_json({"history": history, "trajectory": []}, name="m.traj")
    assert conv.messages[0].content == "look"


def test_claude_code_compaction_starts_a_new_conversation(tmp_path: Path) -> None:
    session = {"sessionId": "s2"}
    lines = [
        {**session, "type": "user", "message": {"role": "user", "content": "one"}},
        {
            **session,
            "type": "assistant",
            "message": {"id": "m1", "role": "assistant", "content": "a"},
        },
        {
            **session,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
        },
        {
            **session,
            "type": "user",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "summary"},
        },
        {
            **session,
            "type": "assistant",
            "message": {"id": "m2", "role": "assistant", "content": "b"},
        },
    ]
    path = tmp_path / "s2.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    first, second = load_conversations(path)
    assert (first.name, second.name) == ("s2.jsonl#s2-1", "s2.jsonl#s2-2")
    assert [len(c.messages) for c in (first, second)] == [2, 2]


@needs_recordings
def test_errors_name_the_field_in_the_file_not_the_reshaped_one(tmp_path: Path) -> None:
    """τ²-bench messages move (a system message is added, the user's own tool calls are
    dropped) and Claude Code lines are joined; errors still point into the file."""
    data = json.loads((TAU2 / "retail-gpt-4.1-mini.json").read_text(encoding="utf-8"))
    data["simulations"][0]["messages"][3]["content"] = 5
    tau = tmp_path / "t.json"
    tau.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ImportError_) as info:
        load_conversations(tau)
    assert str(info.value) == (
        "t.json: simulations[0].messages[3].content: expected a string or a list, got 5"
    )
    wizard = {"role": "assistant", "content": [{"type": "wizard"}]}
    lines = [
        {"sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}},
        {"sessionId": "s", "type": "assistant", "message": wizard},
    ]
    log = tmp_path / "c.jsonl"
    log.write_text("\n".join(json.dumps(line) for line in lines), encoding="utf-8")
    with pytest.raises(ImportError_) as info:
        load_conversations(log)
    assert str(info.value) == "c.jsonl:2: message.content[0].type: unknown block type 'wizard'"


def _claude_code_log(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_claude_code_interleaved_parallel_calls_are_one_call(tmp_path: Path) -> None:
    """From Claude Code 2.1.29 on, a response's parallel calls are written each followed by
    its result; from 2.1.17 on, some logs give each call ``caller``. The model was sent
    one assistant message with both calls, then one user message with both results."""
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 7}
    direct = {"caller": {"type": "direct"}}
    read = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a"}}
    grep = {"type": "tool_use", "id": "toolu_2", "name": "Grep", "input": {"pattern": "b"}}

    def said(
        message_id: str, block: dict[str, Any], tokens: dict[str, int] = usage
    ) -> dict[str, Any]:
        message = {
            "id": message_id,
            "role": "assistant",
            "model": "claude-opus-4-6",
            "usage": tokens,
            "content": [block],
        }
        return {"sessionId": "s3", "type": "assistant", "message": message}

    def result(call: str, text: str) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": call, "content": text}
        return {"sessionId": "s3", "type": "user", "message": {"role": "user", "content": [block]}}

    lines = [
        {"sessionId": "s3", "type": "user", "message": {"role": "user", "content": "look"}},
        said("msg_1", {"type": "text", "text": "Looking."}),
        said("msg_1", {**read, **direct}),
        {"type": "progress", "sessionId": "s3", "data": {"type": "hook_progress"}},
        result("toolu_1", "A"),
        said("msg_1", {**grep, **direct}),
        result("toolu_2", "B"),
        said("msg_2", {"type": "text", "text": "Done."}, {**usage, "input_tokens": 50}),
    ]  # fmt: skip
    path = _claude_code_log(tmp_path, lines)
    [converted] = claude_code.read(lines, name="c.jsonl")
    assert converted.payload["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}, read, grep]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "A"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "B"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]  # fmt: skip
    assert converted.prompt_tokens == {1: 110, 3: 157}
    [conv] = load_conversations(path)
    assert model_calls(conv.messages) == [1, 3]
    assert conv.usage is not None and conv.usage.prompt_tokens == {1: 110, 3: 157}
    assert [b.type for b in conv.messages[1].content_blocks] == [
        "assistant_gen_text",
        "function_tool_call",
        "function_tool_call",
    ]


@pytest.mark.parametrize(
    "field",
    [
        # a call made by code the model ran, not by the model: not what the log says
        {"caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}},
        {"input_hint": "x"},
    ],
)
def test_claude_code_fields_that_would_change_the_call_are_refused(
    tmp_path: Path, field: dict[str, Any]
) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}, **field}
    lines = [
        {"sessionId": "s", "type": "user", "message": {"role": "user", "content": "hi"}},
        {"sessionId": "s", "type": "assistant",
         "message": {"id": "m", "role": "assistant", "content": [call]}},
    ]  # fmt: skip
    with pytest.raises(ImportError_) as info:
        load_conversations(_claude_code_log(tmp_path, lines))
    [name] = field
    assert str(info.value) == f"c.jsonl:2: message.content[0]: unknown field {name!r}"


@needs_recordings
def test_every_shipped_claude_code_log_has_one_model_call_per_response() -> None:
    """A model call per distinct ``message.id`` of the main thread's assistant events,
    counted here from the raw lines (``<synthetic>`` events are Claude Code's own
    notices, not calls); the long logs include interleaved calls and ``caller``."""
    paths = sorted((CONVERSATIONS / "claude-code").glob("*.jsonl"))
    paths += sorted((CONVERSATIONS / "claude-code-long").glob("*.jsonl"))
    assert len(paths) == 28
    expected: dict[str, int] = {}
    read: dict[str, int] = {}
    for path in paths:
        ids: set[str] = set()
        for line in path.read_text(encoding="utf-8").splitlines():
            event = json.loads(line)
            message = event.get("message")
            if (
                event.get("type") == "assistant"
                and not event.get("isSidechain")
                and message["model"] != "<synthetic>"
            ):
                ids.add(message["id"])
        expected[path.name] = len(ids)
        read[path.name] = sum(len(model_calls(c.messages)) for c in load_conversations(path))
    assert read == expected
    assert sum(read.values()) == 26 + 1510
