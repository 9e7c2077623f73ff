"""What live traces cost the Lab: a long agent session's chat spans sent to the OTLP/HTTP
endpoint one call at a time, each stored and its session rebuilt, as an agent's exporter
and the task workers do; then the same spans in one request, read once.

The conversation must equal the session's (benchmarks/README.md, "Live traces in").

    python -m benchmarks.otlp [--recordings DIR] [--generated N] [--readme]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import load_average, machine
from benchmarks.loadgen import percentile
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block
from reduction_app.engine import formats
from simulator.importers import load_conversations
from simulator.recordings_folder import recordings_dir

__all__ = [
    "MARKS",
    "README_BLOCKS",
    "Session",
    "chat_spans",
    "genai_parts",
    "generated",
    "longest",
    "main",
]

RESULTS = Path(__file__).parent / "results" / "otlp.json"
PACKAGES = ("Django", "opentelemetry-sdk")
README_BLOCKS = ("otlp",)
"""The block of benchmarks/README.md that ``--readme`` writes."""
MARKS = (10, 25, 50, 100)
"""The calls whose rebuild time the report names, beside the last."""
RUNS = "mini-swe-agent"
"""The folder of the recordings folder whose longest run is replayed."""
PATH = "/api/v1/otel/v1/traces"
PROTOBUF = "application/x-protobuf"


@dataclass(frozen=True)
class Session:
    """One agent session as OpenAI chat messages (its system message first)."""

    name: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    source: str
    """Where it came from, as the report says it."""

    @property
    def calls(self) -> list[int]:
        """The index of each model call's answer (every assistant message)."""
        return [i for i, m in enumerate(self.messages) if m["role"] == "assistant"]


def longest(folder: Path) -> Session | None:
    """The run of ``folder`` with the most model calls (then by file name), or ``None``."""
    best: tuple[int, str, Session] | None = None
    for path in sorted(folder.glob("*.json")):
        for recorded in load_conversations(path):
            if recorded.format != "openai_chat":
                continue
            system, wire = formats.dump(recorded.format, recorded.messages)
            if system:
                wire = [{"role": "system", "content": system}, *wire]
            tools = formats.dump_tools(recorded.format, recorded.tools)
            session = Session(recorded.name, wire, tools, f"{RUNS}/{path.name}")
            key = (-len(session.calls), path.name)
            if best is None or key < best[:2]:
                best = (*key, session)
    return None if best is None else best[2]


def generated(calls: int, seed: int = 0) -> Session:
    """A made-up session of ``calls`` model calls: a shell command a call and its output,
    most a few hundred characters, some tens of thousands (as a coding agent's are: a
    median near 500, a mean near 1,500), and a plain answer at the end."""
    rng = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the bash tool."},
        {"role": "user", "content": "Fix the failing test in tests/test_dates.py."},
    ]
    for n in range(1, calls):
        call = {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": f"step {n}"})},
        }
        messages.append({"role": "assistant", "content": f"Step {n}.", "tool_calls": [call]})
        size = min(int(rng.lognormvariate(6.2, 1.3)), 40_000)
        line = f"output line of step {n} "
        output = (line * (size // len(line) + 1))[:size]
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": output})
    messages.append({"role": "assistant", "content": "The test passes now."})
    tool = {"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}
    return Session(f"generated-{calls}", messages, [tool], f"generated, {calls} calls")


def genai_parts(message: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message in the current GenAI conventions' shape (``role`` and
    ``parts``), as instrumentations write ``gen_ai.input.messages``."""
    if message["role"] == "tool":
        part = {"type": "tool_call_response", "id": message["tool_call_id"]}
        return {"role": "tool", "parts": [{**part, "response": message["content"]}]}
    parts: list[dict[str, Any]] = []
    if message.get("content"):
        parts.append({"type": "text", "content": message["content"]})
    for call in message.get("tool_calls", ()):
        fn = call["function"]
        parts.append(
            {
                "type": "tool_call",
                "id": call["id"],
                "name": fn["name"],
                "arguments": fn["arguments"],
            }
        )
    return {"role": message["role"], "parts": parts}


def _tokens(messages: Sequence[dict[str, Any]]) -> int:
    """About four characters a token: the figures only need to be there and plausible."""
    return sum(len(json.dumps(m)) for m in messages) // 4


def chat_spans(session: Session) -> list[bytes]:
    """Each model call of ``session`` as an OTLP/protobuf export request of its one chat
    span (each its own trace, ``session.id`` on it), made by the OpenTelemetry SDK."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("benchmarks.otlp")
    messages = session.messages
    system = messages[0]["content"] if messages[0]["role"] == "system" else None
    first = 1 if system is not None else 0
    tools = json.dumps([t["function"] for t in session.tools])
    for index in session.calls:
        sent, answer = messages[:index], messages[index]
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps([genai_parts(m) for m in sent[first:]]),
            "gen_ai.output.messages": json.dumps([genai_parts(answer)]),
            "gen_ai.tool.definitions": tools,
            "gen_ai.usage.input_tokens": _tokens(sent),
            "gen_ai.usage.output_tokens": _tokens([answer]),
            "session.id": session.name,
        }
        if system is not None:
            attributes["gen_ai.system_instructions"] = json.dumps(
                [{"type": "text", "content": system}]
            )
        with tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
            pass
    spans = list(memory.get_finished_spans())
    return [encode_spans([span]).SerializeToString() for span in spans] + [
        encode_spans(spans).SerializeToString()
    ]


# Running it -------------------------------------------------------------------------------


def _setup(folder: Path) -> None:
    for name in ("TEST_DATABASE_URL", "OFFLOAD_STORAGE"):
        os.environ.pop(name, None)
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'db.sqlite3'}"
    os.environ["REDUCTION_MEDIA_ROOT"] = str(folder / "media")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.REDUCTION_RATE_LIMIT = 0


def _lab(name: str) -> tuple[Any, Any]:
    """A new workspace and a client holding one of its keys."""
    from django.test import Client

    from reduction_app.workspaces.services import api_key_create, workspace_get_or_create

    workspace = workspace_get_or_create(name=name)
    _, raw = api_key_create(workspace=workspace, name="bench")
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    # Django loads the API's modules on the first request: not a cost of the first span.
    client.get("/api/v1/otel/sessions")
    return workspace, client


def _send(client: Any, body: bytes) -> float:
    start = time.perf_counter()
    response = client.post(PATH, body, content_type=PROTOBUF)
    seconds = time.perf_counter() - start
    if response.status_code != 200:
        raise SystemExit(f"{PATH} answered {response.status_code}: {response.content[:300]!r}")
    return seconds


def _process(workspace: Any) -> float:
    from reduction_app.telemetry.services import telemetry_process

    start = time.perf_counter()
    telemetry_process(workspace=workspace)
    return time.perf_counter() - start


def _check(client: Any, session: Session) -> int:
    """The number of messages of the conversation the spans made, after checking that they
    are the session's up to its last call, and its tools the session's."""
    expected = session.messages[: session.calls[-1] + 1]
    response = client.get(f"/api/v1/conversations/{session.name}")
    if response.status_code != 200:
        raise SystemExit(f"no conversation {session.name!r}: {response.status_code}")
    got = response.json()
    if got["messages"] != expected:
        differ = next(
            (i for i, (a, b) in enumerate(zip(got["messages"], expected, strict=False)) if a != b),
            min(len(got["messages"]), len(expected)),
        )
        raise SystemExit(
            f"the conversation has {len(got['messages'])} messages, the session "
            f"{len(expected)}; they differ from message {differ}"
        )
    return len(expected)


def measure(session: Session) -> dict[str, Any]:
    """Every call's span sent and processed in turn, then all of them in one request."""
    bodies = chat_spans(session)
    *singles, batch = bodies
    workspace, client = _lab("bench")
    store, rebuild = [], []
    for body in singles:
        store.append(_send(client, body))
        rebuild.append(_process(workspace))
    messages = _check(client, session)
    batch_workspace, batch_client = _lab("bench-batch")
    batch_store = _send(batch_client, batch)
    batch_rebuild = _process(batch_workspace)
    if _check(batch_client, session) != messages:
        raise SystemExit("the batch made another conversation")
    return {
        "session": session.source,
        "calls": len(singles),
        "messages": messages,
        "recorded_messages": len(session.messages),
        "span_bytes": sum(len(b) for b in singles),
        "last_bytes": len(singles[-1]),
        "batch_bytes": len(batch),
        "store_seconds": store,
        "rebuild_seconds": rebuild,
        "batch_store_seconds": batch_store,
        "batch_rebuild_seconds": batch_rebuild,
    }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


def sections(report: dict[str, Any]) -> list[str]:
    """The README block's sections after the stamp: what ran, then the tables."""
    calls, store, rebuild = report["calls"], report["store_seconds"], report["rebuild_seconds"]
    marks = [m for m in MARKS if m < calls] + [calls]
    base = rebuild[marks[0] - 1]
    trailing = report["recorded_messages"] - report["messages"]
    what = (
        f"{report['session']}: {calls:,} model calls, each a chat span of its own trace "
        f"(`session.id` on it) sent in a request of its own, {report['span_bytes']:,} bytes "
        f"of OTLP/protobuf in all (the last call's {report['last_bytes']:,}); SQLite. The "
        f"conversation read from them equals the session's {report['messages']:,} messages"
        + (f" up to its last call, of {report['recorded_messages']:,}." if trailing else ".")
    )
    per_call = md_table(
        ["call by call", "median", "p95", "max", "total"],
        [
            [
                "store (`POST` of one span)",
                _ms(statistics.median(store)),
                _ms(percentile(store, 95)),
                _ms(max(store)),
                f"{sum(store):,.2f} s",
            ],
            [
                "rebuild (`telemetry_process`)",
                _ms(statistics.median(rebuild)),
                _ms(percentile(rebuild, 95)),
                _ms(max(rebuild)),
                f"{sum(rebuild):,.2f} s",
            ],
        ],
    )
    growth = md_table(
        ["rebuild after call", "time", f"× call {marks[0]}"],
        [[f"{m:,}", _ms(rebuild[m - 1]), f"{rebuild[m - 1] / base:.1f}×"] for m in marks],
    )
    batch = md_table(
        ["all spans at the end", "time"],
        [
            [
                f"store (one `POST` of {report['batch_bytes']:,} bytes)",
                _ms(report["batch_store_seconds"]),
            ],
            ["rebuild (one `telemetry_process`)", _ms(report["batch_rebuild_seconds"])],
            ["both", _ms(report["batch_store_seconds"] + report["batch_rebuild_seconds"])],
        ],
    )
    live = sum(store) + sum(rebuild)
    batched = report["batch_store_seconds"] + report["batch_rebuild_seconds"]
    summary = (
        f"Over the whole run, storing and rebuilding call by call took **{live:,.2f} s**, "
        f"{live / batched:.0f}× reading the same spans once at the end ({batched:,.2f} s)."
    )
    return [what, per_call, growth, batch, summary]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--recordings",
        type=Path,
        metavar="DIR",
        help=f"the recordings folder, whose {RUNS}/ longest run is sent (default: "
        "$REDUCTION_RECORDINGS_DIR or shared/data/conversations)",
    )
    parser.add_argument(
        "--generated",
        type=int,
        metavar="N",
        help="send a generated session of N calls instead (also where there are no recordings)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    if args.generated is not None and args.generated < 2:
        parser.error("--generated must be at least 2")
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.otlp", argv, PACKAGES)
    print(machine())
    session = None
    if args.generated is None:
        folder = (args.recordings or recordings_dir()) / RUNS
        session = longest(folder) if folder.is_dir() else None
        if session is None:
            print(f"no run in {folder}: a generated session of 150 calls instead")
    if session is None:
        session = generated(args.generated or 150)
    with tempfile.TemporaryDirectory(prefix="otlp-bench-") as scratch:
        _setup(Path(scratch))
        report = measure(session)
    out = sections(report)
    print("\n\n".join(out))
    report["load_at_end"] = load_average()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    if readme is not None:
        write_block(readme, README_BLOCKS[0], stamp.block(out, report["load_at_end"]))
        print(f"wrote its block of {readme}")
    return report


if __name__ == "__main__":
    main()
