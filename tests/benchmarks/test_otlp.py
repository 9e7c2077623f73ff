"""The live-traces benchmark runs end to end on a small generated session, in a process
of its own (it sets Django up on a fresh database), and writes its block (figures are
not checked: timings are not unit tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import otlp
from tests.benchmarks.support import readme_copy, run_server_benchmark, written_block


def test_generated_is_a_call_and_its_output_a_round_then_an_answer() -> None:
    session = otlp.generated(4)
    roles = [m["role"] for m in session.messages]
    assert roles == ["system", "user", *["assistant", "tool"] * 3, "assistant"]
    assert session.calls == [2, 4, 6, 8]
    assert session.messages[3]["tool_call_id"] == "call_1"
    assert otlp.generated(4) == session


def test_chat_spans_are_a_request_a_call_and_one_of_them_all() -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    session = otlp.generated(3)
    *singles, batch = otlp.chat_spans(session)
    requests = [ExportTraceServiceRequest.FromString(b) for b in [*singles, batch]]

    def spans(request: ExportTraceServiceRequest) -> list[Any]:
        return [s for r in request.resource_spans for c in r.scope_spans for s in c.spans]

    assert [len(spans(r)) for r in requests] == [1, 1, 1, 3]
    last = {a.key: a.value for a in spans(requests[2])[0].attributes}
    assert last["session.id"].string_value == "generated-3"
    # The last call was sent everything but the system message and its own answer.
    sent = json.loads(last["gen_ai.input.messages"].string_value)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "tool"]


def test_main_refuses_a_single_call(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        otlp.main(["--generated", "1"])
    assert exited.value.code == 2
    assert "--generated must be at least 2" in capsys.readouterr().err


@pytest.mark.slow
def test_main_sends_every_call_and_writes_its_block(tmp_path: Path) -> None:
    readme = readme_copy(tmp_path)
    out = tmp_path / "otlp.json"
    argv = ["--generated", "12", "--out", str(out), "--readme-path", str(readme)]
    run_server_benchmark("otlp", argv, timeout=120)
    block = written_block(readme, "otlp")
    assert block[1] == "`python -m benchmarks.otlp --generated 12`"
    # The benchmark fails unless both conversations equal the session's messages.
    assert block[3].startswith("generated, 12 calls: 12 model calls, each a chat span")
    assert block[3].endswith("equals the session's 25 messages.")
    # Two tables' rows: store and rebuild; the rebuild after call 10 and the last; the
    # batch's store, rebuild and both.
    rows = [line for line in block if line.startswith("| ") and not line.startswith("|---")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| call by call",
        "| store (`POST` of one span)",
        "| rebuild (`telemetry_process`)",
        "| rebuild after call",
        "| 10",
        "| 12",
        "| all spans at the end",
        "| store (one `POST` of " + rows[7].split("of ")[1].split(" | ")[0],
        "| rebuild (one `telemetry_process`)",
        "| both",
    ]
    assert block[-1].startswith("Over the whole run, storing and rebuilding call by call took")
    report = json.loads(out.read_text(encoding="utf-8"))
    assert (report["calls"], report["messages"]) == (12, 25)
    assert len(report["store_seconds"]) == len(report["rebuild_seconds"]) == 12
