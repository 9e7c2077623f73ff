"""Importing recordings as conversations: every format the simulator reads, from the real
recordings; all or nothing; ids, duplicates and replacing; the limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reduction_app.conversations.imports import (
    DuplicateConversation,
    RecordingImportError,
    conversation_slug,
    recording_id,
    recordings_import,
)
from reduction_app.conversations.selectors import conversation_transcript
from reduction_app.conversations.timeline import ENGINE_MEASURE
from reduction_app.engine import formats
from reduction_app.errors import LimitExceeded
from reduction_app.models import Conversation, RecordingImport, TranscriptMessage, Workspace
from simulator.importers import FORMATS, RecordedConversation, load_conversations
from simulator.prefix import omitted_tokens
from tests.app.conversations.recordings import ALL_FORMATS, CLAUDE_CODE, SWE_AGENT, sample
from tests.conftest import CONVERSATIONS, needs_recordings


def _files(*paths: Path) -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in paths]


def test_conversation_slug_of_each_kind_of_label() -> None:
    assert conversation_slug("gpt-4o-test-repo-1c2844.traj") == "gpt-4o-test-repo-1c2844"
    assert conversation_slug("a.traj.json") == "a"
    assert conversation_slug("run.jsonl:3") == "run-3"
    assert (
        conversation_slug("openhands-llama4.jsonl:1#ponylang__ponyc-4595")
        == "openhands-llama4-1-ponylang__ponyc-4595"
    )
    assert conversation_slug("retail-gpt-4.1-mini.json#task0-trial0") == (
        "retail-gpt-4.1-mini-task0-trial0"
    )
    # A Claude Code log is named after its session: the id is said once.
    assert conversation_slug("1af7fc5e.jsonl#1af7fc5e") == "1af7fc5e"
    assert conversation_slug("My Run (final)!.json") == "my-run-final"
    assert conversation_slug("..json") == "recording"
    assert len(conversation_slug("x" * 300 + ".json")) == 200


def test_recording_id_names_agent_task_and_model() -> None:
    def rec(name: str, **facts: str) -> RecordedConversation:
        return RecordedConversation(name, [], **facts)

    full = rec("x.traj.json", agent="mini-swe-agent", task="django__django-1", model="a/B c")
    assert recording_id(full, "x.traj.json") == "mini-swe-agent--django__django-1--a-b-c"
    # No model named: the file's name stands for it, so two files of one task differ.
    tau = rec("tau.json#task3-trial0", agent="tau-bench agent", task="task 3, trial 0")
    assert recording_id(tau, "tau.json") == "tau-bench-agent--task-3-trial-0--tau"
    # A wire format names no agent; without a task the label is the task, the file's
    # name not said twice. Runs of "-" are one: "--" only parts the three.
    assert recording_id(rec("run.json"), "run.json") == "run"
    odd = rec("f.json", agent="A -- B", task="t  -  u", model="m")
    assert recording_id(odd, "f.json") == "a-b--t-u--m"


pytestmark = pytest.mark.django_db


@needs_recordings
@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_recordings_import_reads_every_format_from_real_recordings(
    fmt: str, workspace: Workspace, tmp_path: Path
) -> None:
    """Each conversation is stored as the simulator reads it, in its wire format, detected
    without being named (and the same named)."""
    path = sample(fmt, tmp_path)
    expected = load_conversations(path, fmt=fmt)
    [result] = recordings_import(workspace=workspace, files=_files(path))
    assert result["filename"] == path.name
    assert result["format"] == fmt
    ids = [c["conversation_id"] for c in result["conversations"]]
    assert ids == [recording_id(r, path.name) for r in expected]
    for recorded, client_id in zip(expected, ids, strict=True):
        row = Conversation.objects.get(workspace=workspace, client_id=client_id)
        system, messages = formats.dump(recorded.format, recorded.messages)
        assert (row.source, row.imported_from, row.message_format) == (
            fmt,
            path.name,
            recorded.format,
        )
        assert conversation_transcript(conversation=row) == messages
        assert row.message_count == len(messages)
        assert row.system == system
        assert row.tools == formats.dump_tools(recorded.format, recorded.tools)


@needs_recordings
def test_recordings_import_names_the_ids_of_known_recordings(
    workspace: Workspace, tmp_path: Path
) -> None:
    """Ids and titles name the task, the agent and the model; a format that leaves part of
    the model's input out says what, and how much where the provider's counts show it."""
    swe, claude = CONVERSATIONS / SWE_AGENT, CONVERSATIONS / CLAUDE_CODE
    results = recordings_import(workspace=workspace, files=_files(swe, claude))
    # gpt-4o-test-repo-1c2844.traj: 11 messages; the Claude Code session: 7 prompts
    # or tool results, each answered (14 messages, no system prompt in the log).
    (recorded,) = load_conversations(claude)
    prefix = omitted_tokens(recorded, ENGINE_MEASURE)
    assert prefix is not None and prefix > 10_000  # Claude Code's own prompt and tools
    assert [(r["format"], r["conversations"]) for r in results] == [
        (
            "swe_agent",
            [
                {
                    "conversation_id": "swe-agent--gpt-4o-test-repo-1c2844--gpt-4o",
                    "title": "gpt-4o-test-repo-1c2844 · SWE-agent · gpt-4o",
                    "message_count": 11,
                    # SWE-agent 1.x called its tools by function calling: their schemas
                    # were sent, and the trajectory kept only their bundles' names.
                    "omits": ["the tool schemas"],
                    "omitted_tokens": None,  # one total for the run, no per-call counts
                }
            ],
        ),
        (
            "claude_code",
            [
                {
                    "conversation_id": "claude-code--session-1af7fc5e--claude-sonnet-4-20250514",
                    "title": "session 1af7fc5e: /init · Claude Code · claude-sonnet-4-20250514",
                    "message_count": 14,
                    "omits": ["the system prompt", "the tool schemas", "the CLAUDE.md files"],
                    "omitted_tokens": prefix,
                }
            ],
        ),
    ]
    rows = Conversation.objects.filter(workspace=workspace).order_by("id")
    assert [(c.title, c.omits) for c in rows] == [
        ("gpt-4o-test-repo-1c2844 · SWE-agent · gpt-4o", ["the tool schemas"]),
        (
            "session 1af7fc5e: /init · Claude Code · claude-sonnet-4-20250514",
            ["the system prompt", "the tool schemas", "the CLAUDE.md files"],
        ),
    ]


@needs_recordings
def test_recordings_import_writes_nothing_when_the_second_file_fails(
    workspace: Workspace,
) -> None:
    broken = b'{"messages": [{"role": "user", "content": "hi"}, {"role": "robot"}]}'
    with pytest.raises(RecordingImportError) as caught:
        recordings_import(
            workspace=workspace,
            files=[*_files(CONVERSATIONS / SWE_AGENT), ("broken.json", broken)],
        )
    assert str(caught.value) == "broken.json: messages[1].role: unknown role 'robot'"
    assert caught.value.field == "file"
    assert not Conversation.objects.exists()
    assert not TranscriptMessage.objects.exists()


def test_recordings_import_names_the_line_of_a_jsonl_file(workspace: Workspace) -> None:
    good = json.dumps(
        {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
    )
    raw = f"{good}\n{good}\n{{not json\n".encode()
    with pytest.raises(RecordingImportError) as caught:
        recordings_import(workspace=workspace, files=[("runs.jsonl", raw)])
    assert str(caught.value) == (
        "runs.jsonl:3: not JSON: Expecting property name enclosed in double quotes at column 2"
    )
    assert not Conversation.objects.exists()


def _chat(*contents: str) -> bytes:
    roles = ("user", "assistant")
    return json.dumps(
        {"messages": [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]}
    ).encode()


def test_recordings_import_refuses_an_id_taken_unless_replacing(workspace: Workspace) -> None:
    recordings_import(workspace=workspace, files=[("run.json", _chat("a", "b"))])
    with pytest.raises(DuplicateConversation) as caught:
        recordings_import(
            workspace=workspace,
            files=[("other.json", _chat("x", "y")), ("run.json", _chat("c", "d", "e", "f"))],
        )
    assert str(caught.value) == (
        "run.json: conversation 'run' already exists in this workspace "
        "(import with replace to overwrite it)"
    )
    assert list(Conversation.objects.values_list("client_id", flat=True)) == ["run"]

    [result] = recordings_import(
        workspace=workspace, files=[("run.json", _chat("c", "d"))], replace=True
    )
    assert result["conversations"] == [
        {
            "conversation_id": "run",
            "title": "run.json",
            "message_count": 2,
            "omits": [],
            "omitted_tokens": None,
        }
    ]
    row = Conversation.objects.get(client_id="run")
    assert [m["content"] for m in conversation_transcript(conversation=row)] == ["c", "d"]


def test_recordings_import_numbers_ids_that_collide_within_one_import(
    workspace: Workspace,
) -> None:
    results = recordings_import(
        workspace=workspace,
        files=[("run.json", _chat("a", "b")), ("RUN.json", _chat("c", "d"))],
    )
    assert [r["conversations"][0]["conversation_id"] for r in results] == ["run", "run-2"]


def test_recordings_import_other_workspaces_are_untouched(workspace: Workspace) -> None:
    other = Workspace.objects.create(name="Beta", slug="beta")
    recordings_import(workspace=other, files=[("run.json", _chat("a", "b"))])
    recordings_import(workspace=workspace, files=[("run.json", _chat("c", "d"))])
    assert Conversation.objects.filter(client_id="run").count() == 2


def test_recordings_import_over_the_message_limit(workspace: Workspace, settings: Any) -> None:
    settings.REDUCTION_MAX_MESSAGES = 3
    with pytest.raises(LimitExceeded) as caught:
        recordings_import(
            workspace=workspace,
            files=[("small.json", _chat("a", "b")), ("big.json", _chat("a", "b", "c", "d"))],
        )
    assert str(caught.value) == (
        "big.json: big.json: 4 messages is over the limit of 3 messages per request "
        "(REDUCTION_MAX_MESSAGES)"
    )
    assert not Conversation.objects.exists()


def test_recordings_import_refuses_an_unknown_format(workspace: Workspace) -> None:
    with pytest.raises(RecordingImportError) as caught:
        recordings_import(workspace=workspace, files=[("a.json", b"{}")], fmt="csv")
    assert str(caught.value) == f"format: unknown format 'csv'; expected one of {list(FORMATS)}"
    assert caught.value.field == "format"


def test_recordings_import_with_a_wrong_format_named(workspace: Workspace) -> None:
    with pytest.raises(RecordingImportError) as caught:
        recordings_import(workspace=workspace, files=[("a.json", _chat("a", "b"))], fmt="tau2")
    assert str(caught.value).startswith("a.json: ")
    assert not RecordingImport.objects.exists()


@needs_recordings
def test_two_models_runs_of_one_task_import_side_by_side(workspace: Workspace) -> None:
    """Files named after the task alone (mini-swe-agent's ``<instance>.traj.json``): the ids
    name agent and model, so a second model's run is no duplicate."""
    name = "django__django-14017.traj.json"
    raw = (CONVERSATIONS / "mini-swe-agent" / name).read_bytes()
    other = json.loads(raw)
    other["info"]["config"]["model"]["model_name"] = "anthropic/claude-sonnet-4-5"
    recordings_import(workspace=workspace, files=[(name, raw)])
    recordings_import(workspace=workspace, files=[(name, json.dumps(other).encode())])
    rows = Conversation.objects.filter(workspace=workspace).order_by("id")
    assert [(c.client_id, c.title) for c in rows] == [
        (
            "mini-swe-agent--django__django-14017--google-gemini-3-pro-preview",
            "django__django-14017 · mini-swe-agent · google/gemini-3-pro-preview",
        ),
        (
            "mini-swe-agent--django__django-14017--anthropic-claude-sonnet-4-5",
            "django__django-14017 · mini-swe-agent · anthropic/claude-sonnet-4-5",
        ),
    ]


@needs_recordings
def test_a_recording_imported_under_its_old_id_keeps_it(workspace: Workspace) -> None:
    """A conversation imported before ids named agent and model is the same recording
    again: a duplicate, and replaced under its old id."""
    path = CONVERSATIONS / SWE_AGENT
    [recorded] = load_conversations(path)
    old = conversation_slug(recorded.name)
    assert old == "gpt-4o-test-repo-1c2844"
    Conversation.objects.create(
        workspace=workspace,
        client_id=old,
        title=f"{recorded.name} (gpt-4o)",  # the title imports then gave it
        source="swe_agent",
        imported_from=path.name,
    )
    with pytest.raises(DuplicateConversation) as caught:
        recordings_import(workspace=workspace, files=_files(path))
    assert str(caught.value) == (
        f"{path.name}: conversation {old!r} already exists in this workspace "
        "(import with replace to overwrite it)"
    )
    [result] = recordings_import(workspace=workspace, files=_files(path), replace=True)
    assert [c["conversation_id"] for c in result["conversations"]] == [old]
    row = Conversation.objects.get(workspace=workspace)
    assert (row.client_id, row.title, row.message_count) == (
        old,
        "gpt-4o-test-repo-1c2844 · SWE-agent · gpt-4o",
        11,
    )
    # A conversation of that id from another file is another recording.
    Conversation.objects.filter(pk=row.pk).update(imported_from="elsewhere.traj", title="x")
    [result] = recordings_import(workspace=workspace, files=_files(path))
    assert [c["conversation_id"] for c in result["conversations"]] == [
        "swe-agent--gpt-4o-test-repo-1c2844--gpt-4o"
    ]
