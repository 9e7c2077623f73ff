"""``POST /api/v1/clear`` on a 100k-token conversation: latency and throughput of the
production server, and what the API costs over the engine run in-process.

The same request is timed in-process, through the test client, through gunicorn one at
a time beside a bare Django view (:mod:`benchmarks.stack_floor`) and under concurrent
clients, below the clear threshold and clearing; what each contender is:
benchmarks/README.md, "The REST API under load".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from benchmarks.api_report import markdown, print_report
from benchmarks.corpus import build_conversation, dump_openai
from benchmarks.loadgen import LoadResult, in_turn, post_once, run_for, run_load
from benchmarks.report import Stamp, add_readme_arguments, readme_path, write_block
from benchmarks.server import NOT_INHERITED, Server, fresh_postgres, production_server
from benchmarks.stack_floor import BODY_PATH, FLOOR_PATH, READY_PATH
from benchmarks.stack_floor import SETTINGS as FLOOR_SETTINGS
from reduction_app.engine import (
    ChatModelAgentState,
    InMemoryBackend,
    Message,
    config_from_dict,
    formats,
    get_token_counter,
    new,
)
from simulator.corpus import TOOLS_OPENAI

__all__ = [
    "PAYLOADS",
    "README_BLOCKS",
    "Payload",
    "block_name",
    "conversation",
    "in_process",
    "in_process_seconds",
    "main",
]

RESULTS = Path(__file__).parent / "results" / "api_load.json"
PATH = "/api/v1/clear"
PACKAGES = ("Django", "django-ninja", "gunicorn", "msgspec")
README_BLOCKS = (
    "api_load-sqlite",
    "api_load-sqlite-no-conversation-id",
    "api_load-postgres",
    "api_load-postgres-no-conversation-id",
)
"""The blocks of benchmarks/README.md that ``--readme`` writes (:func:`block_name`)."""


@dataclass(frozen=True)
class Payload:
    name: str
    config: dict[str, Any]
    """The body's engine config."""
    what: str


PAYLOADS = (
    Payload("below-threshold", {}, "defaults: counted, nothing cleared"),
    Payload("clearing", {"max_tokens_for_clear": 50_000}, "all but the last round offloaded"),
)


def conversation(tokens: int) -> list[Message]:
    """The longest prefix of the corpus that ends before a model call (an assistant
    message) and holds at most ``tokens`` cl100k tokens."""
    counter = get_token_counter("cl100k_base")
    min_chars = tokens * 6
    while True:
        messages = build_conversation(0, min_chars)
        if counter(messages, []) > tokens:
            break
        min_chars *= 2
    points = [i for i, m in enumerate(messages) if m.role == "assistant" and i > 0]
    end = max(i for i in points if counter(messages[:i], []) <= tokens)
    return messages[:end]


def body_for(wire: list[dict[str, Any]], payload: Payload, conversation_id: str | None) -> bytes:
    """The request body: the config, the messages and the agent's tools."""
    body: dict[str, Any] = {"config": payload.config, "messages": wire, "tools": list(TOOLS_OPENAI)}
    if conversation_id is not None:
        body["conversation_id"] = conversation_id
    return json.dumps(body).encode()


def in_process(body: bytes, backend: InMemoryBackend) -> tuple[float, dict[str, Any], bytes]:
    """What ``/clear`` computes for ``body``, in this process: seconds, the answer, and
    the answer encoded (the floor's view sends these bytes, encoding nothing again)."""
    start = time.perf_counter()
    data = formats.json_loads(body)
    messages = formats.parse("openai_chat", data["messages"])
    tools = formats.parse_tools("openai_chat", data["tools"])
    events: list[Any] = []
    config = config_from_dict(data["config"], backend=backend, on_event=events.append)
    state = new(config).before_model_rewrite_state(
        ChatModelAgentState(messages=messages, tool_infos=tools)
    )
    system, out = formats.dump("openai_chat", state.messages)
    answer = {"messages": out, "system": system, "events": [e.to_dict() for e in events]}
    encoded = msgspec.json.encode(answer)
    return time.perf_counter() - start, answer, encoded


def in_process_seconds(body: bytes, backend: InMemoryBackend) -> float:
    return in_process(body, backend)[0]


def median_of(run: Callable[[], float], repeat: int, warmup: int = 3) -> tuple[float, list[float]]:
    for _ in range(warmup):
        run()
    times = [run() for _ in range(repeat)]
    return statistics.median(times), times


class DjangoClient:
    """Django's test client in this process, on the server's database and settings."""

    def __init__(self, server: Server) -> None:
        # The server's environment, and nothing it was kept from: a TEST_DATABASE_URL left
        # here would win over the server's database in the settings.
        for name in NOT_INHERITED:
            os.environ.pop(name, None)
        os.environ.update(server.env)
        os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
        import django

        django.setup()
        from django.test import Client

        self.client = Client()
        self.headers = {"Authorization": f"Bearer {server.api_key}"}

    def post(self, body: bytes) -> float:
        start = time.perf_counter()
        response = self.client.post(
            PATH, body, content_type="application/json", headers=self.headers
        )
        elapsed = time.perf_counter() - start
        if response.status_code != 200:
            raise RuntimeError(f"test client: {response.status_code} {response.content[:300]!r}")
        return elapsed

    def profile(self, body: bytes, requests: int) -> None:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(requests):
            self.post(body)
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(30)


def check_answer(server: Server, body: bytes) -> dict[str, Any]:
    """One request, checked (:func:`answer_checked`); the figures the report shows."""
    answer, size = answer_checked(server, body, PATH)
    return {
        "applied": answer["applied"],
        "tokens_before": answer["tokens_before"],
        "tokens_after": answer["tokens_after"],
        "events": len(answer["events"]),
        "answer_bytes": size,
    }


def answer_checked(server: Server, body: bytes, path: str) -> tuple[dict[str, Any], int]:
    """One request to ``path``, checked: 200, and the messages and as many events as the
    engine gives in-process (so both sides do the same work); the answer and its size."""
    host, port = _address(server)
    status, _, data = post_once(host, port, path, body, _headers(server))
    if status != 200:
        raise RuntimeError(f"{path} answered {status}: {data[:500]!r}\n{server.log.read_text()}")
    answer = json.loads(data)
    _, expected, _ = in_process(body, InMemoryBackend())
    if answer["messages"] != expected["messages"] or len(answer["events"]) != len(
        expected["events"]
    ):
        raise RuntimeError(f"{path} answered other messages or events than the engine in-process")
    return answer, len(data)


def _address(server: Server) -> tuple[str, int]:
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def _headers(server: Server) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"}


def _load_figures(result: LoadResult) -> dict[str, Any]:
    return {
        "clients": result.clients,
        "seconds": result.seconds,
        "requests": result.requests,
        "errors": result.errors,
        "statuses": result.statuses,
        "p50_ms": 1000 * result.p(50),
        "p99_ms": 1000 * result.p(99),
        "max_ms": 1000 * max(result.latencies, default=float("nan")),
        "throughput_rps": result.throughput,
        "load_generator_cpu_share": result.client_cpu_seconds / result.seconds,
    }


def measure_payload(
    server: Server,
    wire: list[dict[str, Any]],
    payload: Payload,
    django_client: DjangoClient,
    args: argparse.Namespace,
    floor: Server | None = None,
) -> dict[str, Any]:
    """Every figure of one payload (the module docstring lists them)."""
    host, port = _address(server)
    headers = _headers(server)

    def body(client: str) -> bytes:
        # One conversation per client: eight agents, not one agent eight times over.
        conversation_id = None if args.no_conversation_id else f"load-{payload.name}-{client}"
        return body_for(wire, payload, conversation_id)

    solo_body = body("solo")
    checked = check_answer(server, solo_body)
    if floor is not None:
        answer_checked(floor, solo_body, FLOOR_PATH)
    backend = InMemoryBackend()
    client_body = body("test-client")
    test_client, _ = median_of(lambda: django_client.post(client_body), args.repeat)
    bodies = [body(str(c)) for c in range(args.clients)]
    # Every worker answers a few requests before anything is timed.
    run_load(
        host,
        port,
        PATH,
        clients=args.clients,
        seconds=args.warmup_seconds,
        request_for=lambda c: (bodies[c], headers),
    )

    def one_client(target: Server, path: str) -> Callable[[float], LoadResult]:
        target_host, target_port = _address(target)
        target_headers = _headers(target)
        return lambda seconds: run_load(
            target_host,
            target_port,
            path,
            clients=1,
            seconds=seconds,
            request_for=lambda _: (solo_body, target_headers),
        )

    contenders = {
        "in_process": lambda seconds: run_for(
            seconds, lambda: in_process_seconds(solo_body, backend)
        ),
        "api": one_client(server, PATH),
    }
    if floor is not None:
        contenders["floor"] = one_client(floor, FLOOR_PATH)
        contenders["body_in"] = one_client(floor, BODY_PATH)
    in_turn(contenders, args.warmup_seconds, args.slice_seconds)  # warm every side
    solo = in_turn(contenders, args.solo_seconds, args.slice_seconds)
    in_process, api = solo["in_process"].p(50), solo["api"]
    loaded = run_load(
        host,
        port,
        PATH,
        clients=args.clients,
        seconds=args.seconds,
        request_for=lambda c: (bodies[c], headers),
    )
    figures: dict[str, Any] = {
        "config": payload.config,
        "what": payload.what,
        "answer": checked,
        "in_process_ms": 1000 * in_process,
        "in_process_p99_ms": 1000 * solo["in_process"].p(99),
        "in_process_runs": solo["in_process"].requests,
        "test_client_ms": 1000 * test_client,
        "one_client": _load_figures(api),
        "loaded": _load_figures(loaded),
        "overhead_ratio": api.p(50) / in_process,
        "overhead_ms": 1000 * (api.p(50) - in_process),
        "floor": None,
    }
    if floor is not None:
        floor_run = solo["floor"]
        figures["floor"] = {
            "requests": floor_run.requests,
            "errors": floor_run.errors,
            "p50_ms": 1000 * floor_run.p(50),
            "p99_ms": 1000 * floor_run.p(99),
            "ratio": floor_run.p(50) / in_process,
            "api_over_floor": api.p(50) / floor_run.p(50),
            "body_in_p50_ms": 1000 * solo["body_in"].p(50),
        }
    return figures


def measure(
    server: Server, wire: list[dict[str, Any]], args: argparse.Namespace, floor: Server | None
) -> dict[str, Any]:
    django_client = DjangoClient(server)
    figures: dict[str, Any] = {}
    chosen = [p for p in PAYLOADS if p.name in args.payloads]
    for payload in chosen:
        print(f"{payload.name}...", file=sys.stderr)
        figures[payload.name] = measure_payload(server, wire, payload, django_client, args, floor)
    if args.profile:
        print(f"\ncProfile of {args.profile} test-client requests ({chosen[0].name}):")
        django_client.profile(body_for(wire, chosen[0], "load-profile"), args.profile)
    return figures


# Driving ------------------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients")
    parser.add_argument("--seconds", type=float, default=20.0, help="concurrent phase, each")
    parser.add_argument(
        "--solo-seconds",
        type=float,
        default=6.0,
        help="1-client phase, each of in-process, API, floor and body in (taken in turn)",
    )
    parser.add_argument(
        "--slice-seconds",
        type=float,
        default=1.0,
        help="1-client phase: each contender's turn, in seconds",
    )
    parser.add_argument("--warmup-seconds", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=30, help="test-client runs")
    parser.add_argument("--tokens", type=int, default=100_000, help="cl100k tokens, at most")
    parser.add_argument(
        "--payloads",
        type=lambda v: v.split(","),
        default=[p.name for p in PAYLOADS],
        help="comma-separated: " + ", ".join(p.name for p in PAYLOADS),
    )
    parser.add_argument(
        "--no-conversation-id",
        action="store_true",
        help="send no conversation_id (the transcript is then not recorded)",
    )
    parser.add_argument(
        "--profile", type=int, default=0, metavar="N", help="cProfile N test-client requests"
    )
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="serve from a fresh database made (and dropped) on this PostgreSQL server, "
        "e.g. postgres://postgres@127.0.0.1:5432/postgres; SQLite by default",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="do not measure the Django floor (benchmarks.stack_floor) beside the API",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    unknown = set(args.payloads) - {p.name for p in PAYLOADS}
    if unknown:
        parser.error(f"unknown payloads: {sorted(unknown)}")
    for name in ("solo_seconds", "slice_seconds", "seconds"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be more than 0")
    return args


def block_name(args: argparse.Namespace) -> str:
    """The README block of a run: its database, and whether it sends a conversation_id."""
    database = "postgres" if args.postgres else "sqlite"
    return f"api_load-{database}" + ("-no-conversation-id" if args.no_conversation_id else "")


def _gunicorn_version() -> str:
    from importlib.metadata import version

    return version("gunicorn")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    readme = readme_path(args, block_name(args))
    packages = (*PACKAGES, "psycopg") if args.postgres else PACKAGES
    stamp = Stamp.take("benchmarks.api_load", argv, packages)
    print("building the conversation...", file=sys.stderr)
    messages = conversation(args.tokens)
    wire = dump_openai(messages)
    load_before = list(os.getloadavg())
    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="api-load-"))
        database_url = stack.enter_context(fresh_postgres(args.postgres)) if args.postgres else None
        server = stack.enter_context(
            production_server(Path(folder), workers=args.workers, database_url=database_url)
        )
        print(f"server on {server.url}", file=sys.stderr)
        floor = None
        if not args.no_floor:
            floor = stack.enter_context(
                production_server(
                    Path(folder) / "floor",
                    workers=args.workers,
                    settings=FLOOR_SETTINGS,
                    ready_path=READY_PATH,
                )
            )
            print(f"Django floor on {floor.url}", file=sys.stderr)
        figures = measure(server, wire, args, floor)
    report = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "server": {
            "gunicorn": _gunicorn_version(),
            "workers": args.workers,
            "database": "PostgreSQL" if args.postgres else "SQLite",
        },
        "conversation": {
            "messages": len(messages),
            "tool_results": sum(1 for m in messages if m.role == "tool"),
            "cl100k_tokens": get_token_counter("cl100k_base")(messages, []),
            "approx_tokens": get_token_counter("approx")(messages, []),
            "body_bytes": len(body_for(wire, PAYLOADS[0], "load-x")),
        },
        "conversation_id": not args.no_conversation_id,
        "load_before": load_before,
        "load_after": list(os.getloadavg()),
        "args": {k: v for k, v in vars(args).items() if k not in ("out", "readme_path")},
        "figures": figures,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_report(report)
    print(f"\nwrote {args.out}")
    if readme is not None:
        name = block_name(args)
        write_block(readme, name, stamp.block(markdown(report), report["load_after"]))
        print(f"wrote its block {name} of {readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
