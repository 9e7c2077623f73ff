"""Inspect AI eval logs: a real task's ``.eval`` and ``.json`` logs read as OpenAI chat
conversations, with their tools, usage and model; errors naming file, sample and field."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
import sys
import zipfile
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from simulator.cli import main
from simulator.importers import (
    ImportError_,
    RecordedConversation,
    detect_format,
    load_conversations,
    load_conversations_bytes,
    load_files,
)
from simulator.transcript import model_calls
from tests.simulator.inspect_logs import (
    ANSWER,
    EPOCHS,
    PATHS,
    SAMPLE_ID,
    TASK,
    big_text,
    call_id,
    write_log,
)


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The task run once per log format."""
    folder = tmp_path_factory.mktemp("inspect")
    return {fmt: write_log(folder / fmt, fmt) for fmt in ("eval", "json")}


def _without_times(conversations: list[RecordedConversation]) -> list[RecordedConversation]:
    """Two runs differ only in when each call was answered."""
    out = []
    for conv in conversations:
        assert conv.usage is not None
        usage = dataclasses.replace(conv.usage, call_times={})
        out.append(dataclasses.replace(conv, usage=usage))
    return out


@pytest.mark.parametrize("fmt", ["eval", "json"])
def test_inspect_log_reads_each_epoch_as_a_conversation(fmt: str, logs: dict[str, Path]) -> None:
    conversations = load_conversations(logs[fmt])
    assert [c.name for c in conversations] == [
        f"{TASK}#{SAMPLE_ID}-epoch{n}" for n in range(1, EPOCHS + 1)
    ]
    for conv in conversations:
        assert (conv.format, conv.source, conv.model) == ("openai_chat", "inspect", "mockllm/model")
        roles = [m.role for m in conv.messages]
        assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
        for k, path in zip((1, 3), PATHS, strict=True):
            [call] = conv.messages[k].tool_calls
            assert (call.id, call.name, json.loads(call.arguments)) == (
                call_id(path),
                "read_file",
                {"path": path},
            )
            result = conv.messages[k + 1]
            assert result.tool_call_id == call_id(path)
            assert result.content == big_text(path)  # whole: 61,600 bytes
        assert conv.messages[5].content == ANSWER
        assert model_calls(conv.messages) == [1, 3, 5]
        [tool] = conv.tools
        assert (tool.name, tool.description) == ("read_file", "Read a file of the repository.")
        assert tool.parameters["properties"] == {
            "path": {"type": "string", "description": "The file to read."}
        }
        assert conv.usage is not None
        # mockllm/model reports usage for each call; none from a cache.
        assert sorted(conv.usage.prompt_tokens) == [1, 3, 5]
        assert sorted(conv.usage.completion_tokens) == [1, 3, 5]
        assert sorted(conv.usage.call_times) == [1, 3, 5]
        assert conv.usage.cached_prompt_tokens == {}
        assert conv.usage.api_calls == 3
        # Each call's prompt holds the one before it and the 61,600-byte output after it.
        first, second, third = (conv.usage.prompt_tokens[k] for k in (1, 3, 5))
        assert first < second < third


def test_inspect_json_and_eval_logs_give_the_same_conversations(logs: dict[str, Path]) -> None:
    eval_log, json_log = (load_conversations(logs[fmt]) for fmt in ("eval", "json"))
    assert _without_times(eval_log) == _without_times(json_log)


def test_inspect_log_written_again_as_json_is_equal(logs: dict[str, Path], tmp_path: Path) -> None:
    """The same run, written out by Inspect in the other format: equal, times included."""
    from inspect_ai.log import read_eval_log, write_eval_log

    out = tmp_path / "again.json"
    write_eval_log(read_eval_log(str(logs["eval"])), str(out), format="json")
    assert load_conversations(out) == load_conversations(logs["eval"])


def test_inspect_log_detected_and_read_from_bytes(logs: dict[str, Path]) -> None:
    data = json.loads(logs["json"].read_text(encoding="utf-8"))
    assert detect_format(data) == "inspect"
    raw = logs["eval"].read_bytes()
    named = load_conversations_bytes(raw, name="upload.eval", fmt="inspect")
    assert load_conversations_bytes(raw, name="upload.eval") == named
    assert named == load_conversations(logs["eval"])


def test_inspect_eval_log_read_without_inspect_installed(logs: dict[str, Path]) -> None:
    """The reader decompresses Zstandard members itself: no Inspect, no zipfile patch."""
    code = (
        "import sys; from simulator.importers import load_conversations; "
        "n = len(load_conversations(sys.argv[1])); "
        "assert not {'inspect_ai', 'zipfile_zstd'} & set(sys.modules); print(n)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(logs["eval"])], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{EPOCHS}\n", "")


def test_inspect_eval_log_in_a_folder_is_read(logs: dict[str, Path]) -> None:
    assert len(load_files([logs["eval"].parent])) == EPOCHS


def _json_log(logs: dict[str, Path]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(logs["json"].read_text(encoding="utf-8"))
    return data


def _error(path: Path) -> str:
    with pytest.raises(ImportError_) as caught:
        load_conversations(path)
    return str(caught.value)


def test_inspect_json_error_names_sample_and_field(logs: dict[str, Path], tmp_path: Path) -> None:
    data = _json_log(logs)
    data["samples"][1]["messages"][1]["tool_calls"][0]["arguments"] = "path=a.txt"
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _error(path) == (
        "log.json: samples[1].messages[1].tool_calls[0].arguments: expected an object, got str"
    )
    data = _json_log(logs)
    data["samples"][0]["messages"][2]["role"] = "robot"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _error(path) == "log.json: samples[0].messages[2].role: unknown role 'robot'"


def _rewritten(source: Path, target: Path, member: str, change: Any) -> None:
    """``source`` copied to ``target`` (deflated), ``member`` changed by ``change``."""
    # Inspect's patch of the standard zipfile, so that it reads Zstandard members here.
    from inspect_ai._util import zipfile as _zstd  # noqa: F401

    with zipfile.ZipFile(source) as before:
        names = before.namelist()
        contents = {n: before.read(n) for n in names}
    data = json.loads(contents[member])
    change(data)
    contents[member] = json.dumps(data).encode()
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as after:
        for name in names:
            after.writestr(name, contents[name])


def test_inspect_eval_error_names_file_member_and_field(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    def bad(sample: dict[str, Any]) -> None:
        sample["messages"][3]["tool_calls"][0]["arguments"] = ["b.txt"]

    path = tmp_path / "log.eval"
    member = f"samples/{SAMPLE_ID}_epoch_2.json"
    _rewritten(logs["eval"], path, member, bad)
    assert _error(path) == (
        f"log.eval: {member}: messages[3].tool_calls[0].arguments: expected an object, got list"
    )


def test_inspect_eval_deflated_reads_as_zstandard(logs: dict[str, Path], tmp_path: Path) -> None:
    """Older Inspect wrote DEFLATE members, current Inspect Zstandard: both read alike."""
    path = tmp_path / "deflated.eval"
    _rewritten(logs["eval"], path, "header.json", lambda header: None)
    assert load_conversations(path) == load_conversations(logs["eval"])


def test_inspect_truncated_eval_is_named(logs: dict[str, Path], tmp_path: Path) -> None:
    raw = logs["eval"].read_bytes()
    path = tmp_path / "cut.eval"
    path.write_bytes(raw[: len(raw) // 2])
    assert _error(path) == (
        "cut.eval: not a readable .eval log (a ZIP archive): File is not a zip file"
    )


def test_inspect_corrupt_member_is_named(logs: dict[str, Path], tmp_path: Path) -> None:
    """A member whose compressed bytes are damaged (the archive's index intact)."""
    raw = bytearray(logs["eval"].read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as archive:
        info = archive.getinfo(f"samples/{SAMPLE_ID}_epoch_1.json")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for i in range(start + 10, start + 60):
        raw[i] ^= 0xFF
    path = tmp_path / "bad.eval"
    path.write_bytes(bytes(raw))
    assert _error(path).startswith(
        f"bad.eval: samples/{SAMPLE_ID}_epoch_1.json: cannot read from the archive: "
    )


def test_inspect_eval_without_header_is_named(tmp_path: Path) -> None:
    path = tmp_path / "other.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("readme.txt", "not a log")
    assert _error(path) == "other.eval: not an Inspect AI log: no header.json in the archive"


def test_inspect_log_replays_and_sweeps_from_the_command_line(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    """Each call after a read reads 61,600 bytes more: clearing from 10,000 tokens has
    work to do on the third call."""
    config = tmp_path / "clear.json"
    config.write_text(json.dumps({"max_tokens_for_clear": 10000}), encoding="utf-8")
    out, err = StringIO(), StringIO()
    argv = ["replay", str(logs["eval"]), "--config", str(config), "--baseline", "none", "--json"]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    results = json.loads(out.getvalue())["results"]
    names = {f"{TASK}#{SAMPLE_ID}-epoch{n}" for n in range(1, EPOCHS + 1)}
    assert {r["conversation"] for r in results} == names
    assert all(r["totals"]["model_calls"] == 3 for r in results)
    cleared = [r for r in results if r["totals"]["clears"] > 0]
    assert cleared

    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"max_tokens_for_clear": [10000, 100000]}), encoding="utf-8")
    out, err = StringIO(), StringIO()
    argv = ["sweep", str(logs["eval"]), "--grid", str(grid), "--json", "--quiet"]
    assert main(argv, out=out, err=err) == 0, err.getvalue()
    sweeps = json.loads(out.getvalue())["sweeps"]
    assert {s["conversation"] for s in sweeps} == names
    assert all(len(s["results"]) == 2 for s in sweeps)


def test_inspect_details_errors_parts_attachments_cache_and_cost(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    """The real log, edited where the mock run has nothing to show: a failed call, content
    parts (reasoning dropped, text resolved from the sample's attachments), a provider's
    cache figures and cost."""
    data = _json_log(logs)
    sample = data["samples"][0]
    sample["attachments"] = {"abc123": "the answer, kept aside by Inspect"}
    sample["messages"][2]["error"] = {"type": "timeout", "message": "timed out after 30s"}
    sample["messages"][5]["content"] = [
        {"type": "reasoning", "reasoning": "think first", "signature": "sig"},
        {"type": "text", "text": "attachment://abc123"},
    ]
    [first] = [
        e
        for e in sample["events"]
        if e["event"] == "model"
        and e["output"]["choices"][0]["message"]["id"] == sample["messages"][1]["id"]
    ]
    first["output"]["usage"] = {
        "input_tokens": 100,
        "output_tokens": 7,
        "input_tokens_cache_read": 900,
        "input_tokens_cache_write": 50,
    }
    sample["model_usage"] = {"mockllm/model": {"input_tokens": 1, "total_cost": 0.125}}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    conv = load_conversations(path)[0]
    assert conv.messages[2].content == "Error: timed out after 30s"
    assert conv.messages[5].content == "the answer, kept aside by Inspect"
    assert conv.usage is not None
    # Inspect counts input_tokens without the cache: 100 + 900 read + 50 written.
    assert (conv.usage.prompt_tokens[1], conv.usage.cached_prompt_tokens) == (1050, {1: 900})
    assert conv.usage.completion_tokens[1] == 7
    assert conv.usage.cost == 0.125


def test_inspect_usage_paired_by_order_without_message_ids(
    logs: dict[str, Path], tmp_path: Path
) -> None:
    """Messages without ids: the model events pair with the assistant messages in order."""
    data = _json_log(logs)
    expected = load_conversations(logs["json"])
    for sample in data["samples"]:
        for message in sample["messages"]:
            message.pop("id", None)
    path = tmp_path / "log.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert load_conversations(path) == expected
