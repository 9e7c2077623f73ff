"""The reused-ids benchmark runs end to end on tiny sizes, in a process of its own (it
sets Django up on a fresh database), and writes its block (figures are not checked:
timings are not unit tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import reused_ids
from tests.benchmarks.support import readme_copy, run_server_benchmark, written_block


def test_one_id_gives_every_round_the_id_dup_and_new_outputs() -> None:
    first, second = reused_ids.one_id(0, 3), reused_ids.one_id(1, 3)
    assert first[0] == {"role": "user", "content": "Look around."}
    assert [m["tool_call_id"] for m in first[2::2]] == ["dup", "dup", "dup"]
    outputs = [m["content"] for m in first[2::2]] + [m["content"] for m in second[2::2]]
    assert len(set(outputs)) == 6


def test_many_shares_the_even_calls_outputs_between_conversations() -> None:
    a, b = reused_ids.many(0, 4), reused_ids.many(1, 4)
    assert [m["tool_calls"][0]["id"] for m in a[1::2]] == ["call_0", "call_1", "call_2", "call_3"]
    same = [x["content"] == y["content"] for x, y in zip(a[2::2], b[2::2], strict=True)]
    assert same == [True, False, True, False]


def test_summary_compares_the_last_requests_with_the_first() -> None:
    figures = reused_ids.summary({"one_id": [2.0, 3.0], "many": [1.0, 1.0, 2.0, 4.0]}, 2)
    assert (figures["one_id_ratio"], figures["many_ratio"]) == (1.5, 3.0)


def test_main_refuses_a_single_call(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        reused_ids.main(["--calls", "1"])
    assert exited.value.code == 2
    assert "--calls must be at least 2" in capsys.readouterr().err


@pytest.mark.slow
def test_main_measures_both_cases_and_writes_its_block(tmp_path: Path) -> None:
    readme = readme_copy(tmp_path)
    sizes = [
        *("--dup-requests", "2", "--dup-results", "5"),
        *("--conversations", "6", "--calls", "3", "--window", "2"),
        *("--resend-calls", "4"),
    ]
    stdout, _ = run_server_benchmark(
        "reused_ids", [*sizes, "--readme-path", str(readme)], timeout=120
    )
    assert "one id, request 2:" in stdout
    block = written_block(readme, "reused_ids-sqlite")
    assert block[1] == f"`python -m benchmarks.reused_ids {' '.join(sizes)}`"
    assert block[3].startswith("SQLite. **One id**: 2 requests of 5 tool rounds")
    # Each table's header, then a row a request (one id), a row a conversation up to
    # each tenth of the six, the first included: 1 to 6, and the calls 1 and 4 sent again.
    assert sum(line.startswith("| ") for line in block) == (1 + 2) + (1 + 6) + (1 + 2)
    assert any(line.startswith("The last request of one id took **") for line in block)
    # Four calls of one round more each: rounds 1 to 3 are each cleared once, whatever the
    # client sends; a summary a call.
    assert block[-1] == (
        "Events recorded: 3 tool events and 4 summaries for the client that sends the "
        "answers back, 3 and 4 for the one that sends its originals."
    )
