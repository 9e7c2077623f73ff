"""The soak benchmark picks its sessions by its rule, finds the original of each offload,
refuses a missing recordings folder, and runs end to end on a short replay with one
killed request (figures are not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import soak
from benchmarks.soak import Session, selected
from tests.benchmarks.support import readme_copy, run_server_benchmark, written_block
from tests.conftest import needs_recordings


def _session(name: str, calls: int) -> Session:
    return Session(name, (name, 0), "openai_chat", None, [], [], list(range(calls)))


def test_selected_takes_the_longest_session_alone_when_it_is_long_enough() -> None:
    ranked = [_session("a", 300), _session("b", 200)]
    assert [s.label for s in selected(ranked, 300)] == ["a"]


def test_selected_adds_sessions_in_rank_order_until_there_are_enough_calls() -> None:
    ranked = [_session("a", 49), _session("b", 33), _session("c", 30), _session("d", 30)]
    # 49 + 33 = 82 calls are fewer than 100; with c, 112 are enough.
    assert [s.label for s in selected(ranked, 100)] == ["a", "b", "c"]
    assert [s.label for s in selected(ranked, 1_000)] == ["a", "b", "c", "d"]


def test_originals_match_a_path_that_begins_another_to_its_own_notice() -> None:
    sent = [{"role": "tool", "content": "first"}, {"role": "tool", "content": "second"}]
    answered = [
        {"role": "tool", "content": "saved to: /tmp/clear/call_1\nuse read_file"},
        {"role": "tool", "content": "saved to: /tmp/clear/call_1-2\nuse read_file"},
    ]
    found: dict[str, object] = {}
    soak._originals(sent, answered, {"/tmp/clear/call_1", "/tmp/clear/call_1-2"}, found)
    assert found == {"/tmp/clear/call_1": "first", "/tmp/clear/call_1-2": "second"}


def test_main_refuses_a_missing_recordings_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none"
    with pytest.raises(SystemExit) as exited:
        soak.main(["--recordings", str(missing)])
    assert exited.value.code == 2
    assert f"error: no recordings at {missing}: pass --recordings DIR" in capsys.readouterr().err


@needs_recordings
@pytest.mark.slow
def test_main_replays_a_session_deletes_a_sharer_and_kills_requests(tmp_path: Path) -> None:
    """A real gunicorn server on SQLite: 20 calls or more, a twin conversation sharing the
    first one's files, which is then deleted, and two requests killed while storing, each
    sent again; the benchmark itself fails on a file that does not read back, a killed
    request that recorded anything or a retry not answered. The tables go into a copy of
    the README."""
    out, readme = tmp_path / "soak.json", readme_copy(tmp_path)
    sizes = ["--calls", "20", "--twin-calls", "15", "--kills", "2", "--kill-rounds", "1000"]
    argv = [*sizes, "--out", str(out), "--readme-path", str(readme)]
    stdout, _ = run_server_benchmark("soak", argv, timeout=240)
    assert "latency of /clear" in stdout
    report = json.loads(out.read_text())
    assert report["figures"]["calls"] >= 20
    assert report["figures"]["offloads"] > 0
    assert report["rows"]["events"] > 0
    shared = report["shared"]
    assert shared["twin_calls"] == 15
    assert shared["shared_paths"] > 0
    assert shared["delete_status"] == 204
    back = report["read_back"]
    assert back["checked"] > 0
    assert back["equal"] == back["checked"]
    assert back["no original"] == 0
    first, second = report["kills"]
    # The n-th of N kills lands once n/(N+1) of the 999 offloads are stored.
    assert (first["killed_at"], second["killed_at"]) == (333, 666)
    for kill in (first, second):
        assert kill["client_saw"] != 200
        assert kill["events_recorded"] == 0
        assert kill["files_left"] >= kill["killed_at"]
        assert kill["retry_status"] == 200
        assert kill["retry_offloads"] == 999
    end = report["end"]
    # The retries stored and named all that the killed requests had stored.
    assert end["check_before_status"] == 0, end["check_before"]
    assert end["check_status"] == 0, end["check"]
    assert end["check"].endswith(": consistent"), end["check"]
    block = written_block(readme, "soak-sqlite")
    assert any("offload_check --deep" in line for line in block)
