"""Reading recordings: every format, detection, the real recordings, and error messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reduction_app.engine import AgenticMessage, Message, ToolInfo, formats
from simulator.importers import (
    FORMATS,
    RECORDING_FORMATS,
    ImportError_,
    conversation_from_json,
    detect_format,
    load_conversations,
    load_conversations_bytes,
    omitted_parts,
    openhands_to_openai,
    recording_files,
    recording_omits,
    recording_title,
)
from simulator.sources import ABOUT_CHARS
from simulator.sources.openhands import OBSERVATION_CUT_MARKER
from tests.conftest import CONVERSATIONS, needs_recordings

TAU = CONVERSATIONS / "tau-bench-airline-gpt-4o.json"
OPENHANDS = CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl"

CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    {"role": "assistant", "content": "One file."},
]
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {"name": "ls", "description": "List.", "parameters": {"type": "object"}},
    }
]
ANTHROPIC = {
    "system": "Be brief.",
    "messages": [
        {"role": "user", "content": "List the files."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}],
        },
        {"role": "assistant", "content": "One file."},
    ],
    "tools": [{"name": "ls", "description": "List.", "input_schema": {"type": "object"}}],
}
RESPONSES = {
    "input": [
        {"role": "user", "content": "List the files."},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "x"}]},
    ],
    "tools": [{"type": "function", "name": "ls", "description": "List.", "parameters": {}}],
}


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _roles(messages: Any) -> list[str]:
    return [m.role for m in messages]


def test_load_conversations_openai_chat_object_with_tools(tmp_path: Path) -> None:
    path = _write(tmp_path, "chat.json", json.dumps({"messages": CHAT, "tools": CHAT_TOOLS}))
    [conv] = load_conversations(path)
    assert conv.name == "chat.json"
    assert conv.format == "openai_chat"
    assert _roles(conv.messages) == ["system", "user", "assistant", "tool", "assistant"]
    assert all(isinstance(m, Message) for m in conv.messages)
    assert conv.messages[2].tool_calls[0].name == "ls"
    assert conv.messages[3].tool_call_id == "c1"
    assert conv.tools == [ToolInfo(name="ls", description="List.", parameters={"type": "object"})]


def test_load_conversations_openai_chat_bare_list_has_no_tools(tmp_path: Path) -> None:
    [conv] = load_conversations(_write(tmp_path, "bare.json", json.dumps(CHAT)))
    assert conv.format == "openai_chat"
    assert len(conv.messages) == 5
    assert conv.tools == []


@pytest.mark.parametrize("content", ["中 \\udcff", "中 é"], ids=["lone-surrogate", "wide"])
def test_load_conversations_reads_what_json_reads(tmp_path: Path, content: str) -> None:
    """Read from the file's bytes, as json.loads read its text: a duplicate key keeps the
    last value, a lone surrogate escape (which sends the file through json) is kept."""
    tool = '{"role": "tool", "tool_call_id": "c1", "content": "x", "content": "' + content + '"}'
    text = json.dumps(CHAT[:3])[:-1] + ", " + tool + ", " + json.dumps(CHAT[4]) + "]"
    [conv] = load_conversations(_write(tmp_path, "c.json", text))
    assert conv.messages == formats.messages_from_openai(json.loads(text))
    assert conv.messages[3].content == json.loads(f'"{content}"')


def test_conversation_from_json_uses_the_name_field() -> None:
    [conv] = conversation_from_json({"name": "demo", "messages": CHAT})
    assert conv.name == "demo"


def test_load_conversations_anthropic_with_system(tmp_path: Path) -> None:
    [conv] = load_conversations(_write(tmp_path, "a.json", json.dumps(ANTHROPIC)))
    assert conv.format == "anthropic"
    assert all(isinstance(m, AgenticMessage) for m in conv.messages)
    assert _roles(conv.messages) == ["system", "user", "assistant", "user", "assistant"]
    assert conv.messages[0].content_blocks[0].text == "Be brief."
    assert conv.messages[3].content_blocks[0].type == "function_tool_result"
    assert [t.name for t in conv.tools] == ["ls"]


def test_load_conversations_responses_input(tmp_path: Path) -> None:
    [conv] = load_conversations(_write(tmp_path, "r.json", json.dumps(RESPONSES)))
    assert conv.format == "openai_responses"
    assert _roles(conv.messages) == ["user", "assistant", "user", "assistant"]
    assert conv.messages[1].content_blocks[0].type == "function_tool_call"
    assert [t.name for t in conv.tools] == ["ls"]


def test_load_conversations_jsonl_one_conversation_per_line(tmp_path: Path) -> None:
    lines = [json.dumps({"messages": CHAT}), "", json.dumps(ANTHROPIC), json.dumps(CHAT)]
    convs = load_conversations(_write(tmp_path, "many.jsonl", "\n".join(lines) + "\n"))
    assert [(c.name, c.format, len(c.messages)) for c in convs] == [
        ("many.jsonl:1", "openai_chat", 5),
        ("many.jsonl:3", "anthropic", 5),
        ("many.jsonl:4", "openai_chat", 5),
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (CHAT, "openai_chat"),
        ({"messages": CHAT}, "openai_chat"),
        ([], "openai_chat"),
        (ANTHROPIC, "anthropic"),
        ({"messages": ANTHROPIC["messages"]}, "anthropic"),
        (RESPONSES, "openai_responses"),
        # A bare item list whose first item is an untyped message is still Responses.
        (RESPONSES["input"], "openai_responses"),
        ([{"traj": []}], "tau_bench"),
        ({"history": []}, "openhands"),
    ],
)
def test_detect_format(data: Any, expected: str) -> None:
    assert detect_format(data) == expected


def test_detect_format_refuses_a_scalar() -> None:
    with pytest.raises(ImportError_) as info:
        detect_format(3, where="x.json")
    assert str(info.value) == "x.json: expected a JSON object or list, got int"


def test_load_conversations_format_overrides_detection(tmp_path: Path) -> None:
    """Without ``system`` or tool blocks Anthropic looks like chat; ``fmt`` says otherwise."""
    data = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "?"}]}
    path = _write(tmp_path, "plain.json", json.dumps(data))
    assert load_conversations(path)[0].format == "openai_chat"
    [conv] = load_conversations(path, fmt="anthropic")
    assert conv.format == "anthropic"
    assert isinstance(conv.messages[0], AgenticMessage)


@needs_recordings
def test_load_conversations_tau_bench() -> None:
    convs = load_conversations(TAU)
    assert len(convs) == 200
    assert sum(len(c.messages) for c in convs) == 5308
    assert sum(len(m.tool_calls) for c in convs for m in c.messages) == 1164
    assert convs[0].name == "tau-bench-airline-gpt-4o.json#task0-trial0"
    assert len(convs[0].messages) == 32
    assert {c.format for c in convs} == {"openai_chat"}
    assert all(c.tools == () for c in convs)


@needs_recordings
def test_load_conversations_openhands_runs() -> None:
    convs = load_conversations(OPENHANDS)
    assert [len(c.messages) for c in convs] == [47, 67, 100]
    assert [c.name for c in convs] == [
        "openhands-multi-swe-bench-llama4.jsonl:1#ponylang__ponyc-4595",
        "openhands-multi-swe-bench-llama4.jsonl:2#ponylang__ponyc-4593",
        "openhands-multi-swe-bench-llama4.jsonl:3#ponylang__ponyc-4588",
    ]
    for conv in convs:
        assert [t.name for t in conv.tools] == [
            "execute_bash",
            "think",
            "finish",
            "str_replace_editor",
        ]
        assert _roles(conv.messages)[:2] == ["system", "user"]


@needs_recordings
def test_openhands_to_openai_one_assistant_message_per_model_response() -> None:
    runs = [json.loads(line) for line in OPENHANDS.read_text(encoding="utf-8").splitlines()]
    for run in runs:
        chat, _ = openhands_to_openai(run)
        responses = {
            e["tool_call_metadata"]["model_response"]["id"]
            for e in run["history"]
            if e.get("action") and e.get("tool_call_metadata")
        }
        assistants = [m for m in chat if m["role"] == "assistant"]
        assert len(assistants) == len(responses)
        # Recall events (action and observation) have no tool call and are left out.
        assert all("Added workspace context" not in str(m.get("content")) for m in chat)
    assert [sum(m["role"] == "assistant" for m in openhands_to_openai(r)[0]) for r in runs] == [
        23,
        33,
        49,
    ]


@needs_recordings
def test_load_conversations_openhands_finish_calls_have_no_result() -> None:
    unanswered = []
    for conv in load_conversations(OPENHANDS):
        answered = {m.tool_call_id for m in conv.messages if m.role == "tool"}
        unanswered += [
            (conv.name[-10:], c.id, c.name)
            for m in conv.messages
            for c in m.tool_calls
            if c.id not in answered
        ]
    assert unanswered == [
        ("ponyc-4595", "toolu_23", "finish"),
        ("ponyc-4593", "toolu_33", "finish"),
    ]


def test_openhands_to_openai_names_the_bad_event() -> None:
    run = {"history": [{"action": "run", "tool_call_metadata": {"tool_call_id": "t1"}}]}
    with pytest.raises(ImportError_) as info:
        openhands_to_openai(run, where="oh.jsonl:2")
    assert str(info.value) == "oh.jsonl:2: history[0]: missing field 'model_response'"


def test_openhands_to_openai_needs_history() -> None:
    with pytest.raises(ImportError_) as info:
        conversation_from_json({"history": 3}, name="oh.jsonl:1")
    assert str(info.value) == "oh.jsonl:1: an OpenHands run needs a 'history' list"


def _openhands_tool_run(observation: str, content: str, metadata: Any = None) -> dict[str, Any]:
    """One model call to a tool and its observation, with the run's metadata if given."""
    response = {
        "id": "r1",
        "choices": [
            {
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "t1",
                            "type": "function",
                            "function": {"name": "execute_bash", "arguments": "{}"},
                        }
                    ],
                }
            }
        ],
    }
    meta = {"tool_call_id": "t1", "function_name": "execute_bash", "model_response": response}
    run: dict[str, Any] = {
        "history": [
            {"action": "message", "source": "user", "args": {"content": "Go."}},
            {"action": "run", "tool_call_metadata": meta},
            {"observation": observation, "content": content, "tool_call_metadata": meta},
        ]
    }
    if metadata is not None:
        run["metadata"] = metadata
    return run


def _limit(chars: Any) -> dict[str, Any]:
    return {"llm_config": {"model": "m", "max_message_chars": chars}}


def test_openhands_to_openai_cuts_the_middle_of_a_long_run_observation() -> None:
    chat, _ = openhands_to_openai(_openhands_tool_run("run", "0123456789abcdefghij!", _limit(10)))
    assert chat[-1] == {
        "role": "tool",
        "tool_call_id": "t1",
        "name": "execute_bash",
        "content": "01234\n[... Observation truncated due to length ...]\nghij!",
    }


@pytest.mark.parametrize("observation", ["edit", "error", "run_ipython", "mcp", "think"])
def test_openhands_to_openai_cuts_other_tool_observations(observation: str) -> None:
    chat, _ = openhands_to_openai(_openhands_tool_run(observation, "abcdefghijk", _limit(4)))
    assert chat[-1]["content"] == f"ab{OBSERVATION_CUT_MARKER}jk"


def test_openhands_to_openai_keeps_an_observation_at_the_limit_whole() -> None:
    chat, _ = openhands_to_openai(_openhands_tool_run("run", "0123456789", _limit(10)))
    assert chat[-1]["content"] == "0123456789"


@pytest.mark.parametrize("observation", ["read", "browse"])
def test_openhands_to_openai_never_cuts_file_reads(observation: str) -> None:
    """openhands-aci cut file reads already; OpenHands sends them as they are."""
    chat, _ = openhands_to_openai(_openhands_tool_run(observation, "x" * 50, _limit(10)))
    assert chat[-1]["content"] == "x" * 50


@pytest.mark.parametrize(
    "metadata",
    [None, {}, {"llm_config": None}, {"llm_config": {"model": "m"}}, _limit(None), _limit(-1)],
)
def test_openhands_to_openai_cuts_nothing_without_a_limit(metadata: Any) -> None:
    """No limit recorded (or OpenHands' negative "no limit"): the observation stays whole."""
    chat, _ = openhands_to_openai(_openhands_tool_run("run", "x" * 50, metadata))
    assert chat[-1]["content"] == "x" * 50


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (
            _limit("30000"),
            "oh.jsonl:1: 'metadata.llm_config.max_message_chars' must be an integer, got '30000'",
        ),
        (
            _limit(30000.0),
            "oh.jsonl:1: 'metadata.llm_config.max_message_chars' must be an integer, got 30000.0",
        ),
        (
            _limit(True),
            "oh.jsonl:1: 'metadata.llm_config.max_message_chars' must be an integer, got True",
        ),
        (
            {"llm_config": [30000]},
            "oh.jsonl:1: 'metadata.llm_config' must be an object, got [30000]",
        ),
        ("v1", "oh.jsonl:1: 'metadata' must be an object, got 'v1'"),
    ],
)
def test_openhands_to_openai_refuses_a_bad_limit(metadata: Any, message: str) -> None:
    with pytest.raises(ImportError_) as info:
        openhands_to_openai(_openhands_tool_run("run", "x", metadata), where="oh.jsonl:1")
    assert str(info.value) == message


# --- errors ------------------------------------------------------------------------------


def _error(path: Path, fmt: str | None = None) -> str:
    with pytest.raises(ImportError_) as info:
        load_conversations(path, fmt=fmt)
    return str(info.value)


def test_load_conversations_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    assert _error(path) == f"{path}: cannot read: No such file or directory"


def test_load_conversations_directory(tmp_path: Path) -> None:
    assert _error(tmp_path) == f"{tmp_path}: cannot read: Is a directory"


def test_load_conversations_not_utf8(tmp_path: Path) -> None:
    path = _write(tmp_path, "bin.json", b'{"messages": "\xff"}')
    assert _error(path) == f"{path}: not UTF-8 text (invalid start byte at byte 14)"


def test_load_conversations_not_json_gives_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.json", '{"messages": [}')
    assert _error(path) == f"{path}: not JSON: Expecting value at line 1, column 15"


def test_load_conversations_pretty_printed_json_error_is_not_read_as_jsonl(tmp_path: Path) -> None:
    """A multi-line JSON document with a trailing comma: the document's line and column,
    not a complaint about its first line as JSONL."""
    text = '{\n  "messages": [\n    {"role": "user", "content": "hi"},\n  ]\n}\n'
    path = _write(tmp_path, "pretty.json", text)
    assert _error(path) == f"{path}: not JSON: Expecting value at line 4, column 3"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_load_conversations_counts_lines_as_a_text_file_does(tmp_path: Path, newline: str) -> None:
    """Universal newlines, as reading the file as text gave: a "\r" alone ends a line too."""
    text = '{\n  "messages": [\n    {"role": "user", "content": "hi"},\n  ]\n}\n'
    path = _write(tmp_path, "pretty.json", text.replace("\n", newline).encode())
    assert _error(path) == f"{path}: not JSON: Expecting value at line 4, column 3"


def test_load_conversations_byte_order_mark_is_refused_as_before(tmp_path: Path) -> None:
    path = _write(tmp_path, "bom.json", b"\xef\xbb\xbf" + json.dumps(CHAT).encode())
    assert _error(path) == (
        f"{path}: not JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1, column 1"
    )


def test_load_conversations_surrogate_encoded_in_utf8_is_not_utf8(tmp_path: Path) -> None:
    path = _write(tmp_path, "s.json", b'{"messages": "\xed\xa0\x80"}')
    assert _error(path) == f"{path}: not UTF-8 text (invalid continuation byte at byte 14)"


def test_load_conversations_bad_jsonl_line_gives_its_number(tmp_path: Path) -> None:
    text = json.dumps({"messages": CHAT}) + "\n\n" + '{"messages": [}\n'
    path = _write(tmp_path, "bad.jsonl", text)
    assert _error(path) == f"{path}:3: not JSON: Expecting value at column 15"


def test_load_conversations_unknown_format(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.json", json.dumps(CHAT))
    assert _error(path, fmt="gemini") == (
        "unknown format 'gemini'; expected one of "
        "['openai_chat', 'anthropic', 'openai_responses', 'tau_bench', 'tau2', 'openhands', "
        "'swe_agent', 'mini_swe_agent', 'claude_code', 'inspect', 'otel']"
    )


def test_formats_are_the_registry_formats_then_the_recordings() -> None:
    names = formats.FORMAT_NAMES
    assert FORMATS[: len(names)] == names
    assert FORMATS[len(names) :] == (
        "tau_bench",
        "tau2",
        "openhands",
        "swe_agent",
        "mini_swe_agent",
        "claude_code",
        "inspect",
        "otel",
    )


def test_load_conversations_unknown_role_names_the_field_path(tmp_path: Path) -> None:
    data = {"messages": [*CHAT[:3], {"role": "wizard", "content": "x"}]}
    path = _write(tmp_path, "c.json", json.dumps(data))
    assert _error(path) == "c.json: messages[3].role: unknown role 'wizard'"


def test_load_conversations_bare_list_error_path_starts_at_the_list(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.json", json.dumps([CHAT[0], {"role": "wizard", "content": ""}]))
    assert _error(path) == "c.json: [1].role: unknown role 'wizard'"


def test_load_conversations_deep_error_in_a_jsonl_line(tmp_path: Path) -> None:
    bad = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "x"}]}]
    }
    text = json.dumps({"messages": CHAT}) + "\n" + json.dumps(bad) + "\n"
    path = _write(tmp_path, "two.jsonl", text)
    assert _error(path) == "two.jsonl:2: messages[0].content[1].type: unknown part type 'x'"


def test_load_conversations_tau_bench_error_names_run_and_message(tmp_path: Path) -> None:
    runs = [{"traj": CHAT}, {"traj": [CHAT[0], CHAT[1], {"role": "bot", "content": "b"}]}]
    path = _write(tmp_path, "tau.json", json.dumps(runs))
    assert _error(path) == "tau.json: [1].traj[2].role: unknown role 'bot'"


def test_load_conversations_unknown_top_level_field(tmp_path: Path) -> None:
    path = _write(tmp_path, "c.json", json.dumps({"messages": CHAT, "temperature": 0}))
    assert _error(path) == "c.json: unknown field 'temperature'"


def test_recording_files_expand_folders_sorted(tmp_path: Path) -> None:
    """A folder gives its recording files, sorted; a file is taken as given."""
    (tmp_path / "b.traj.json").write_text("{}", encoding="utf-8")
    (tmp_path / "a.jsonl").write_text("{}", encoding="utf-8")
    (tmp_path / "README.md").write_text("# not a recording", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.json").write_text("{}", encoding="utf-8")  # not read
    one = tmp_path / "sub" / "c.json"
    assert recording_files([tmp_path, one]) == [tmp_path / "a.jsonl", tmp_path / "b.traj.json", one]
    missing = tmp_path / "missing.json"
    assert recording_files([missing]) == [missing]  # left for the reader to name


@needs_recordings
@pytest.mark.parametrize(
    "relative",
    [
        "swe-agent/gpt4-test-repo-i1.traj",
        "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
        "openhands-multi-swe-bench-llama4.jsonl",
        "tau2/retail-gpt-4.1-mini.json",
        "mini-swe-agent/astropy__astropy-13033.traj.json",
    ],
)
def test_load_conversations_bytes_reads_as_the_file_is_read(relative: str) -> None:
    """An upload's bytes give the conversations its file gives, each with the format it
    was read as."""
    path = CONVERSATIONS / relative
    from_bytes = load_conversations_bytes(path.read_bytes(), name=path.name)
    assert from_bytes == load_conversations(path)
    source = {
        "swe-agent": "swe_agent",
        "claude-code": "claude_code",
        "tau2": "tau2",
        "mini-swe-agent": "mini_swe_agent",
    }.get(relative.split("/")[0], "openhands")
    assert {c.source for c in from_bytes} == {source}


def test_load_conversations_bytes_names_the_upload_in_errors() -> None:
    with pytest.raises(ImportError_, match=r"^upload\.jsonl:2: not JSON: Expecting value"):
        load_conversations_bytes(b'{"messages": []}\nnope\n', name="upload.jsonl")
    with pytest.raises(ImportError_, match=r"^upload\.json: the file is empty$"):
        load_conversations_bytes(b"  \n", name="upload.json")
    with pytest.raises(ImportError_, match=r"^unknown format 'csv'; expected one of "):
        load_conversations_bytes(b"{}", name="upload.json", fmt="csv")


# What a recording says it is: titles and what it left out ----------------------------------

# Per real recording: its first conversation's title (task, agent, model as far as the
# file names them) and what it leaves out of what the model was sent.
SAYS = {
    "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": (
        "session 1af7fc5e: /init · Claude Code · claude-sonnet-4-20250514",
        ("the system prompt", "the tool schemas", "the CLAUDE.md files"),
    ),
    "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl": (
        # Its summary line says what the session was about.
        "session fe5e1c67: Empty Repo Setup: CLAUDE.md Foundation Created · Claude Code · "
        "claude-sonnet-4-20250514",
        ("the system prompt", "the tool schemas", "the CLAUDE.md files"),
    ),
    "openhands-multi-swe-bench-llama4.jsonl": (
        "ponylang__ponyc-4595 · OpenHands CodeActAgent · llama-4-maverick",
        (),  # its `system` event holds the prompt and the tool schemas
    ),
    "openhands/fastjson2-2775-gpt-5.jsonl": (
        "alibaba__fastjson2-2775 · OpenHands CodeActAgent · gpt-5-ca",
        ("the system prompt", "the tool schemas"),  # OpenHands 0.25 recorded no `system`
    ),
    "swe-agent/gpt-4o-test-repo-1c2844.traj": (
        "gpt-4o-test-repo-1c2844 · SWE-agent · gpt-4o",
        ("the tool schemas",),  # 1.x: function calling, schemas not kept
    ),
    "swe-agent/gpt4-pydicom-1458.traj": (
        "gpt4-pydicom-1458 · SWE-agent",
        (),  # 0.x: actions written as text, no schemas sent
    ),
    "tau2/airline-gpt-4.1-mini.json": (
        "airline task 0, trial 0 · tau2-bench agent · openai/gpt-4.1-mini",
        ("the agent's instructions around the domain policy", "the tool schemas"),
    ),
    "mini-swe-agent/django__django-14017.traj.json": (
        "django__django-14017 · mini-swe-agent · google/gemini-3-pro-preview",
        (),
    ),
}


@needs_recordings
@pytest.mark.parametrize("name", SAYS)
def test_recordings_name_task_agent_and_model_and_what_they_leave_out(name: str) -> None:
    recorded = load_conversations(CONVERSATIONS / name)[0]
    assert (recording_title(recorded), recording_omits(recorded)) == SAYS[name]


@needs_recordings
def test_tau_bench_titles_name_the_task_and_the_customers_opening() -> None:
    first = json.loads(TAU.read_text(encoding="utf-8"))[0]
    opening = " ".join(next(m["content"] for m in first["traj"] if m["role"] == "user").split())
    recorded = load_conversations(TAU)[0]
    # The opening is 70 characters or fewer here, so it is whole.
    assert len(opening) <= ABOUT_CHARS
    assert recording_title(recorded) == f"task 0, trial 0: {opening} · tau-bench agent"
    # gpt-4o was sent the tool schemas in every run, whether it called a tool or not.
    assert {recording_omits(r) for r in load_conversations(TAU)} == {("the tool schemas",)}


def test_wire_formats_leave_out_nothing_and_keep_their_names() -> None:
    [recorded] = conversation_from_json({"name": "my run", "messages": CHAT})
    assert (recording_title(recorded), recording_omits(recorded)) == ("my run", ())
    assert all(not RECORDING_FORMATS[f].omits for f in formats.FORMAT_NAMES)


def test_omitted_parts_follow_what_a_recording_holds() -> None:
    assert omitted_parts("openhands", has_system=True, has_tools=True) == ()
    assert omitted_parts("openhands", has_system=False, has_tools=True) == ("the system prompt",)
    # What is never recorded is left out whatever the recording holds.
    assert omitted_parts("claude_code", has_system=True, has_tools=True) == ("the CLAUDE.md files",)
    assert omitted_parts("unknown", has_system=False, has_tools=False) == ()


def test_the_registry_lists_every_format_once_in_the_order_format_takes() -> None:
    assert tuple(RECORDING_FORMATS) == FORMATS
    assert FORMATS[: len(formats.FORMAT_NAMES)] == tuple(formats.FORMAT_NAMES)
    assert [f.name for f in RECORDING_FORMATS.values()] == list(FORMATS)


def test_the_manual_lists_what_each_format_leaves_out_as_the_registry_declares() -> None:
    """docs/simulator.md's table of what each format leaves out is the registry's."""
    manual = (Path(__file__).parents[2] / "docs" / "simulator.md").read_text(encoding="utf-8")
    section = manual.split("| format | what it leaves out | replays add it |")[1]
    rows = {}
    for line in section.splitlines()[2:]:
        if not line.startswith("|"):
            break
        name, omits, added = (cell.strip() for cell in line.strip("|").split("|"))
        rows[name.strip("`")] = (omits.split("; "), added.startswith("yes"))
    assert rows == {
        f.name: ([o.what for o in f.omits], f.prefix_inferred)
        for f in RECORDING_FORMATS.values()
        if f.omits
    }
