"""mini-swe-agent trajectories: bash blocks as tool calls, their outputs as results, the
provider's figures kept, and the 43 shipped runs."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.importers import (
    ImportError_,
    conversation_from_json,
    detect_format,
    load_conversations,
)
from simulator.replay import replay
from simulator.sources.mini_swe_agent import BASH_TOOL
from simulator.transcript import model_calls
from tests.conftest import CONVERSATIONS, needs_recordings

MINI = CONVERSATIONS / "mini-swe-agent"

ONE = "THOUGHT: list the files.\n\n```bash\nls -la\n```"
TWO = "THOUGHT: two.\n\n```bash\nls\n```\n\n```bash\npwd\n```"
NONE = "THOUGHT: I am not sure what to run."


def _trajectory(*messages: dict[str, Any], version: Any = "mini-swe-agent-1") -> dict[str, Any]:
    return {
        "info": {
            "exit_status": "Submitted",
            "submission": "",
            "model_stats": {"instance_cost": 0.25, "api_calls": 2},
            "mini_version": "1.15.0",
            "config": {"model": {"model_name": "google/gemini-3-pro-preview"}},
        },
        "messages": [
            {"role": "system", "content": "Answer with one bash block."},
            {"role": "user", "content": "Fix the bug."},
            *messages,
        ],
        "trajectory_format": version,
        "instance_id": "repo__repo-1",
    }


def _assistant(content: Any, *, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    response = {"created": 1763510640, "usage": usage or {}}
    return {"role": "assistant", "content": content, "extra": {"response": response}}


def _user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def _write(tmp_path: Path, data: dict[str, Any]) -> Path:
    path = tmp_path / "t.traj.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_mini_swe_agent_one_block_is_a_call_and_the_next_message_its_result() -> None:
    output = "<returncode>0</returncode>\n<output>\na.py\n</output>"
    data = _trajectory(_assistant(ONE), _user(output), _assistant(NONE), _user("Go on."))
    [conv] = conversation_from_json(data, name="t.traj.json", require_calls=True)
    assert (conv.name, conv.format, conv.model) == (
        "repo__repo-1",
        "openai_chat",
        "google/gemini-3-pro-preview",
    )
    roles = [m.role for m in conv.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    answer = conv.messages[2]
    assert answer.content == ONE  # the whole of what the model wrote, block included
    [call] = answer.tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "call_2",
        "bash",
        {"command": "ls -la"},
    )
    assert (conv.messages[3].tool_call_id, conv.messages[3].content) == ("call_2", output)
    assert [t.name for t in conv.tools] == [BASH_TOOL["function"]["name"]]


def test_mini_swe_agent_without_a_block_stays_text() -> None:
    data = _trajectory(_assistant(NONE), _user("Please always provide EXACTLY ONE action"))
    [conv] = conversation_from_json(data, name="t.traj.json")
    assert [m.role for m in conv.messages[2:]] == ["assistant", "user"]
    assert conv.messages[2].tool_calls == ()
    assert conv.messages[3].content == "Please always provide EXACTLY ONE action"


def test_mini_swe_agent_two_blocks_stay_text() -> None:
    """mini-swe-agent runs no command of such a message: it answers with a format error."""
    data = _trajectory(_assistant(TWO), _user("found 2 actions"), _assistant(ONE), _user("ok"))
    [conv] = conversation_from_json(data, name="t.traj.json")
    assert [m.role for m in conv.messages[2:]] == ["assistant", "user", "assistant", "tool"]
    assert (conv.messages[2].content, conv.messages[2].tool_calls) == (TWO, ())
    assert conv.messages[5].tool_call_id == "call_4"


def test_mini_swe_agent_last_call_without_output_replays(tmp_path: Path) -> None:
    """A run stopped after its last call: the call keeps no result, and the engine
    replays it as a pending call."""
    data = _trajectory(
        _assistant(ONE), _user("a.py"), _assistant(ONE.replace("ls -la", "echo done"))
    )
    [conv] = load_conversations(_write(tmp_path, data))
    assert [m.role for m in conv.messages[2:]] == ["assistant", "tool", "assistant"]
    assert [c.id for c in conv.messages[4].tool_calls] == ["call_4"]
    assert model_calls(conv.messages) == [2, 4]
    result = replay(conv, {"max_tokens_for_clear": 1})
    assert [c.message_index for c in result.calls] == [2, 4]


def test_mini_swe_agent_text_parts() -> None:
    """Content as a list of text parts (mini-swe-agent's form when it marks prompts for
    caching) reads as its texts joined."""
    parts = [
        {"type": "text", "text": "THOUGHT: x\n\n"},
        {"type": "text", "text": "```bash\npwd\n```"},
    ]
    output = [{"type": "text", "text": "/testbed", "cache_control": {"type": "ephemeral"}}]
    [conv] = conversation_from_json(_trajectory(_assistant(parts), _user(output)), name="t")
    assert conv.messages[2].content == "THOUGHT: x\n\n```bash\npwd\n```"
    assert json.loads(conv.messages[2].tool_calls[0].arguments) == {"command": "pwd"}
    assert (conv.messages[3].role, conv.messages[3].content) == ("tool", "/testbed")


def test_mini_swe_agent_keeps_the_providers_figures() -> None:
    openai = {
        "prompt_tokens": 2090,
        "completion_tokens": 220,
        "prompt_tokens_details": {"cached_tokens": 1024},
    }
    anthropic = {"prompt_tokens": 2500, "completion_tokens": 30, "cache_read_input_tokens": 2000}
    data = _trajectory(
        _assistant(ONE, usage=openai), _user("a.py"), _assistant(NONE, usage=anthropic)
    )
    data["messages"][4]["extra"]["response"]["created"] = 1763510700.5
    [conv] = conversation_from_json(data, name="t.traj.json")
    usage = conv.usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.cached_prompt_tokens) == (
        {2: 2090, 4: 2500},
        {2: 1024, 4: 2000},
    )
    assert usage.completion_tokens == {2: 220, 4: 30}
    assert usage.call_times == {2: 1763510640.0, 4: 1763510700.5}
    assert (usage.cost, usage.api_calls, usage.total_prompt_tokens) == (0.25, 2, None)


def test_mini_swe_agent_label_is_the_file_name_without_instance_id() -> None:
    data = _trajectory(_assistant(ONE), _user("a.py"))
    del data["instance_id"]
    [conv] = conversation_from_json(data, name="t.traj.json")
    assert conv.name == "t.traj.json"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("mini-swe-agent-2", "unsupported 'mini-swe-agent-2'; expected 'mini-swe-agent-1'"),
        (None, "unsupported None; expected 'mini-swe-agent-1'"),
        ("swe-agent-9", "unsupported 'swe-agent-9'; expected 'mini-swe-agent-1'"),
    ],
)
def test_mini_swe_agent_other_versions_are_refused(
    tmp_path: Path, version: Any, message: str
) -> None:
    path = _write(tmp_path, _trajectory(_assistant(ONE), _user("a.py"), version=version))
    with pytest.raises(ImportError_) as info:
        load_conversations(path)
    assert str(info.value) == f"t.traj.json: trajectory_format: {message}"


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (_user(5), "messages[3].content: expected a string or a list of parts, got int"),
        (
            _user([{"type": "text", "text": 5}]),
            "messages[3].content[0].text: expected a string, got 5",
        ),
        ({"role": "tool", "content": "x"}, "messages[3].role: unknown role 'tool'"),
        ("hello", "messages[3]: expected an object, got str"),
    ],
)
def test_mini_swe_agent_bad_messages_name_the_field(
    tmp_path: Path, message: Any, error: str
) -> None:
    path = _write(tmp_path, _trajectory(_assistant(ONE), message))
    with pytest.raises(ImportError_) as info:
        load_conversations(path)
    assert str(info.value) == f"t.traj.json: {error}"


def test_mini_swe_agent_is_detected() -> None:
    assert detect_format(_trajectory()) == "mini_swe_agent"
    # an unknown version goes to the reader, which refuses it by name
    assert detect_format(_trajectory(version="v2")) == "mini_swe_agent"
    assert detect_format({"trajectory_format": "mini-swe-agent-1"}) == "mini_swe_agent"
    # without the key the object is another format
    assert detect_format({"info": {}, "simulations": []}) == "tau2"
    assert detect_format({"messages": []}) == "openai_chat"


@needs_recordings
def test_mini_swe_agent_shipped_runs() -> None:
    """Every run reads with a model call; the figures are counted here from the raw JSON
    (an assistant message is a call when it holds exactly one ```bash fence)."""
    paths = sorted(MINI.glob("*.traj.json"))
    assert len(paths) == 43
    assistant = multi = none = calls = results = api_calls = 0
    for path in paths:
        raw = json.loads(path.read_text(encoding="utf-8"))["messages"]
        fences = [m["content"].count("```bash") for m in raw if m["role"] == "assistant"]
        # a call's output is the next message, when there is one
        answered = sum(
            1
            for i, m in enumerate(raw)
            if m["role"] == "assistant" and m["content"].count("```bash") == 1 and i + 1 < len(raw)
        )
        [conv] = load_conversations(path)
        assert conv.name == path.name.removesuffix(".traj.json")
        got_calls = [c for m in conv.messages for c in m.tool_calls]
        got_results = [m for m in conv.messages if m.role == "tool"]
        assert len(got_calls) == fences.count(1)
        assert len(got_results) == answered
        assert conv.usage is not None and sorted(conv.usage.prompt_tokens) == model_calls(
            conv.messages
        )
        assistant += len(fences)
        multi += sum(1 for n in fences if n >= 2)
        none += fences.count(0)
        calls += len(got_calls)
        results += len(got_results)
        api_calls += conv.usage.api_calls or 0
    assert (assistant, multi, none) == (2439, 98, 2)
    assert calls == assistant - multi - none == 2339
    assert results == calls  # every run ends with the output of its last call
    assert api_calls == assistant  # one model call per assistant message, by the runs' count


@needs_recordings
def test_mini_swe_agent_run_replays_from_the_command_line(tmp_path: Path) -> None:
    """Its peak context is near 30,000 tokens: clearing from 20,000 has work to do."""
    config = tmp_path / "clear.json"
    config.write_text(json.dumps({"max_tokens_for_clear": 20000}), encoding="utf-8")
    path = MINI / "astropy__astropy-13033.traj.json"
    out, err = StringIO(), StringIO()
    argv = ["replay", str(path), "--config", str(config), "--baseline", "none", "--json"]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    whole, cleared = json.loads(out.getvalue())["results"]
    assert {whole["conversation"], cleared["conversation"]} == {"astropy__astropy-13033"}
    # one model call per assistant message (32 in the file, by its own count too)
    assert whole["totals"]["model_calls"] == cleared["totals"]["model_calls"] == 32
    assert cleared["totals"]["clears"] > 0
    assert cleared["totals"]["peak_context_tokens"] < whole["totals"]["peak_context_tokens"]
