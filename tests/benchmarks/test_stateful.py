"""The stateful benchmark chains runs as its rule says, refuses a missing recordings
folder, and runs end to end on a short replay (figures are not checked: timings are not
unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import stateful
from benchmarks.soak import Session
from tests.benchmarks.support import readme_copy, run_server_benchmark, written_block
from tests.conftest import needs_recordings


def _session(name: str, calls: int) -> Session:
    messages = [{"role": "user", "content": name}] * (2 * calls)
    return Session(name, (name, 0), "openai_chat", None, messages, [], list(range(1, 2 * calls, 2)))


def test_chained_takes_runs_in_rank_order_as_one_conversation() -> None:
    ranked = [_session("a", 5), _session("b", 4), _session("c", 3)]
    chained = stateful.chained(ranked, 7)
    assert chained.labels == ["a", "b"]
    assert len(chained.messages) == 18
    # b's calls follow a's messages; only the first 7 calls are replayed.
    assert chained.calls == [1, 3, 5, 7, 9, 11, 13]


def test_main_refuses_a_missing_recordings_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    with pytest.raises(SystemExit) as exited:
        stateful.main(["--recordings", str(missing)])
    assert exited.value.code == 2
    assert f"error: no recordings at {missing}: pass --recordings DIR" in capsys.readouterr().err


@needs_recordings
@pytest.mark.slow
def test_main_replays_both_ways_and_writes_its_block(tmp_path: Path) -> None:
    """A real gunicorn server on SQLite: 12 calls sending only what is new and 12 sending
    the whole context, which must give the same contexts (the benchmark fails
    otherwise); the tables go into a copy of the README."""
    out, readme = tmp_path / "stateful.json", readme_copy(tmp_path)
    config = json.dumps({"max_tokens_for_clear": 3000, "clear_retention_suffix_limit": 1})
    argv = ["--calls", "12", "--config", config, "--out", str(out), "--readme-path", str(readme)]
    stdout, _ = run_server_benchmark("stateful", argv, timeout=240)
    assert "only new ms" in stdout
    report = json.loads(out.read_text())
    found = report["figures"]
    assert found["calls"] == 12
    assert found["calls_cleared"] > 0
    assert found["stateful_sent"] < found["whole_sent"]
    assert any("only new ms" in line for line in written_block(readme, "stateful"))
