"""``manage.py import_recordings``: files, folders and globs, all or nothing, exit 2
naming the file at fault."""

from __future__ import annotations

import json
import re
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from reduction_app.models import Conversation, TranscriptMessage, Workspace
from tests.app.conversations.recordings import SWE_AGENT, sample
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = pytest.mark.django_db

# The SWE-agent folder's four runs, by file name, with their messages: the system prompt,
# the task (the 0.x runs send it in two user messages), then each model call's answer and
# its result: 5 calls (2 + 5 × 2 - 1 = 11, the last call's result is not kept), 12 calls
# (3 + 12 × 2 - 1 = 26), 8 calls (18) and 5 calls (12).
SWE_AGENT_RUNS = {
    "gpt-4o-test-repo-1c2844.traj": 11,
    "gpt4-pydicom-1458.traj": 26,
    "gpt4-test-repo-1c2844-old.traj": 18,
    "gpt4-test-repo-i1.traj": 12,
}
# Their ids: the agent, the task (the file's name) and the model, where the trajectory
# names it (the 0.x ones do not).
SWE_AGENT_IDS = {
    "gpt-4o-test-repo-1c2844.traj": "swe-agent--gpt-4o-test-repo-1c2844--gpt-4o",
    "gpt4-pydicom-1458.traj": "swe-agent--gpt4-pydicom-1458",
    "gpt4-test-repo-1c2844-old.traj": "swe-agent--gpt4-test-repo-1c2844-old",
    "gpt4-test-repo-i1.traj": "swe-agent--gpt4-test-repo-i1",
}


def _run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_recordings", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def _chat_file(path: Path, *contents: str) -> Path:
    roles = ("user", "assistant")
    messages = [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    return path


@needs_recordings
def test_import_recordings_a_whole_folder(workspace: Workspace) -> None:
    folder = CONVERSATIONS / "swe-agent"
    out, err = _run(str(folder), "--workspace", workspace.slug)
    lines = []
    for name, messages in SWE_AGENT_RUNS.items():
        made = SWE_AGENT_IDS[name]
        lines += [f"{folder / name}: swe_agent, 1 conversation", f"  {made} ({messages} messages)"]
        if name.startswith("gpt-4o"):  # 1.x: function calling, its tool schemas not kept
            lines.append("    leaves out the tool schemas")
    lines.append("Imported 4 conversations from 4 files into workspace 'alpha-team'.")
    assert out.splitlines() == lines
    # The bar, redrawn after each file read, ends with a newline.
    assert err.split("\r")[1:] == [
        "[#######.......................] 1/4 files read",
        "[###############...............] 2/4 files read",
        "[######################........] 3/4 files read",
        "[##############################] 4/4 files read\n",
    ]
    rows = Conversation.objects.filter(workspace=workspace).order_by("client_id")
    assert [(c.client_id, c.source, c.imported_from, c.message_count) for c in rows] == [
        (SWE_AGENT_IDS[name], "swe_agent", name, messages)
        for name, messages in sorted(SWE_AGENT_RUNS.items(), key=lambda i: SWE_AGENT_IDS[i[0]])
    ]


def test_import_recordings_a_glob_in_the_only_workspace(
    workspace: Workspace, tmp_path: Path
) -> None:
    _chat_file(tmp_path / "a.json", "q", "a")
    _chat_file(tmp_path / "b.json", "q", "a", "q2", "a2")
    (tmp_path / "notes.txt").write_text("not a recording", encoding="utf-8")
    out, _ = _run(str(tmp_path / "*.json"), "--quiet")
    assert out.splitlines() == [
        f"{tmp_path / 'a.json'}: openai_chat, 1 conversation",
        "  a (2 messages)",
        f"{tmp_path / 'b.json'}: openai_chat, 1 conversation",
        "  b (4 messages)",
        "Imported 2 conversations from 2 files into workspace 'alpha-team'.",
    ]


@needs_recordings
def test_import_recordings_exits_2_naming_the_file_and_imports_nothing(
    workspace: Workspace, tmp_path: Path
) -> None:
    shutil.copy(CONVERSATIONS / SWE_AGENT, tmp_path / "1-good.traj")
    (tmp_path / "2-broken.json").write_text(
        '{"messages": [{"role": "user", "content": "hi"}, {"role": "robot"}]}',
        encoding="utf-8",
    )
    with pytest.raises(CommandError) as caught:
        _run(str(tmp_path), "--quiet")
    assert caught.value.returncode == 2
    assert str(caught.value) == (
        "2-broken.json: messages[1].role: unknown role 'robot'; nothing was imported"
    )
    assert not Conversation.objects.exists()


def test_import_recordings_refuses_a_taken_id_unless_replace(
    workspace: Workspace, tmp_path: Path
) -> None:
    path = _chat_file(tmp_path / "run.json", "q", "a")
    _run(str(path), "--quiet")
    with pytest.raises(CommandError) as caught:
        _run(str(path), "--quiet")
    assert (caught.value.returncode, str(caught.value)) == (
        2,
        "run.json: conversation 'run' already exists in this workspace "
        "(import with replace to overwrite it); nothing was imported",
    )
    _chat_file(path, "q", "a", "q2", "a2")
    _run(str(path), "--quiet", "--replace")
    assert Conversation.objects.get(client_id="run").message_count == 4


def test_import_recordings_needs_a_workspace_among_several(
    workspace: Workspace, tmp_path: Path
) -> None:
    Workspace.objects.create(name="Beta", slug="beta")
    path = _chat_file(tmp_path / "run.json", "q", "a")
    with pytest.raises(CommandError) as caught:
        _run(str(path))
    assert (caught.value.returncode, str(caught.value)) == (
        2,
        "name the workspace with --workspace SLUG (there are several)",
    )
    _run(str(path), "--workspace", "beta", "--quiet")
    assert Conversation.objects.get().workspace.slug == "beta"


def test_import_recordings_names_a_path_that_matches_nothing(
    workspace: Workspace, tmp_path: Path
) -> None:
    with pytest.raises(CommandError) as caught:
        _run(str(tmp_path / "missing-*.json"))
    assert (caught.value.returncode, str(caught.value)) == (
        2,
        f"{tmp_path / 'missing-*.json'}: no such file",
    )


@needs_recordings
def test_import_recordings_every_mini_swe_agent_run(workspace: Workspace) -> None:
    """The 43 shipped mini-swe-agent runs import as 43 conversations; each assistant
    message with exactly one bash block is a call whose result is the next message, and
    messages with none or several stay text (counted here from the raw files)."""
    folder = CONVERSATIONS / "mini-swe-agent"
    calls = messages = 0
    for path in folder.glob("*.traj.json"):
        raw = json.loads(path.read_text(encoding="utf-8"))["messages"]
        messages += len(raw)
        calls += sum(
            1
            for i, m in enumerate(raw)
            if m["role"] == "assistant"
            and len(re.findall(r"```bash\s*\n.*?\n```", _text(m["content"]), re.DOTALL)) == 1
            and i + 1 < len(raw)
        )
    out, _ = _run(str(folder), "--workspace", workspace.slug, "--quiet")
    assert out.splitlines()[-1] == (
        f"Imported 43 conversations from 43 files into workspace '{workspace.slug}'."
    )
    rows = Conversation.objects.filter(workspace=workspace)
    assert {c.source for c in rows} == {"mini_swe_agent"}
    assert sum(c.message_count for c in rows) == messages
    stored = TranscriptMessage.objects.filter(conversation__workspace=workspace)
    tool_results = [json.loads(m.data) for m in stored if '"role":"tool"' in m.data]
    assert len(tool_results) == calls == 2339
    assert {m["tool_call_id"].startswith("call_") for m in tool_results} == {True}


def _text(content: str | list[dict[str, str]]) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content)


def test_import_recordings_reads_the_eval_logs_of_a_folder(
    workspace: Workspace, tmp_path: Path
) -> None:
    """An Inspect AI ``.eval`` log in a folder is one of its recordings (two epochs of one
    sample: two conversations of 6 messages)."""
    log = sample("inspect", tmp_path / "logs")
    out, _ = _run(str(log.parent), "--workspace", workspace.slug)
    assert out.splitlines() == [
        f"{log}: inspect, 2 conversations",
        "  inspect-ai--read_files-sample-fix-1-epoch-1--mockllm-model (6 messages)",
        "  inspect-ai--read_files-sample-fix-1-epoch-2--mockllm-model (6 messages)",
        "Imported 2 conversations from 1 file into workspace 'alpha-team'.",
    ]
