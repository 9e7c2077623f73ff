"""The API load benchmark runs end to end, with its Django floor, on a small conversation
and prints its tables (figures are not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks import api_load
from benchmarks.loadgen import LoadResult, in_turn, run_for
from tests.benchmarks.support import readme_copy, run_server_benchmark, written_block


def test_in_turn_gives_every_contender_its_slices_round_after_round() -> None:
    order: list[str] = []

    def contender(name: str, latency: float) -> Callable[[float], LoadResult]:
        def run(seconds: float) -> LoadResult:
            order.append(name)
            return LoadResult(1, seconds, latencies=[latency], statuses={200: 1})

        return run

    results = in_turn({"a": contender("a", 1.0), "b": contender("b", 2.0)}, 3.0, 1.0)
    assert order == ["a", "b", "a", "b", "a", "b"]
    assert results["a"].latencies == [1.0, 1.0, 1.0]
    assert (results["b"].seconds, results["b"].statuses) == (3.0, {200: 3})


def test_run_for_keeps_every_measured_time() -> None:
    result = run_for(0.05, lambda: 0.001)
    assert result.requests >= 1
    assert set(result.latencies) == {0.001}
    assert result.seconds >= 0.05


@pytest.mark.parametrize("flag", ["--slice-seconds", "--solo-seconds", "--seconds"])
def test_main_refuses_a_time_that_is_not_positive(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        api_load.main([flag, "0"])
    assert exited.value.code == 2
    assert f"{flag} must be more than 0" in capsys.readouterr().err


@pytest.mark.slow
def test_main_measures_the_api_and_the_floor(tmp_path: Path) -> None:
    """Two real gunicorn servers: the API's and the floor's. Their answers are checked
    against the engine in-process by the benchmark itself, so a floor that did other
    work, or none, fails it. The tables go into a copy of the README."""
    out, readme = tmp_path / "api_load.json", readme_copy(tmp_path)
    sizes = [
        *("--tokens", "4000", "--workers", "1", "--clients", "2", "--repeat", "2"),
        *("--seconds", "0.5", "--solo-seconds", "0.6", "--slice-seconds", "0.3"),
        *("--warmup-seconds", "0.2"),
    ]
    argv = [*sizes, "--out", str(out), "--readme-path", str(readme)]
    stdout, _ = run_server_benchmark("api_load", argv, timeout=300)
    assert "The Django floor" in stdout
    report = json.loads(out.read_text())
    for figures in report["figures"].values():
        floor = figures["floor"]
        assert floor["requests"] > 0
        assert floor["errors"] == 0
        assert figures["one_client"]["errors"] == 0
        assert floor["body_in_p50_ms"] > 0
        assert figures["in_process_runs"] > 0
    block = written_block(readme, "api_load-sqlite")
    assert block[1] == f"`python -m benchmarks.api_load {' '.join(sizes)}`"
    for title in ("One request at a time", "The Django floor", "2 concurrent clients"):
        assert any(line.startswith(title) for line in block), title
    assert block[-3].startswith("- API p50 / in-process: **")
    assert block[-1] == "- Errors (any status but 200): 0."
