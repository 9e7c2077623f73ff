"""What the largest requests the bounds of one request let through cost, through the
production server (:mod:`benchmarks.server`), on SQLite and PostgreSQL.

``REDUCTION_MAX_MESSAGES`` and ``REDUCTION_MAX_OFFLOADS`` exist so that no request runs
past gunicorn's worker timeout; this times the largest requests they admit, and the two
they refuse (benchmarks/README.md, "The work one request may ask for").
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.common import load_average
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block
from benchmarks.server import Server, fresh_postgres, production_server

__all__ = ["README_BLOCKS", "main"]

PACKAGES = ("Django", "gunicorn", "psycopg")
README_BLOCKS = ("bounds",)
"""The block of benchmarks/README.md that ``--readme`` writes."""
WORKER_TIMEOUT = 30.0
"""gunicorn's default worker timeout, seconds; the goal is under half of it."""
GOAL = WORKER_TIMEOUT / 2
TURN_CHARS = 200
RESULT_CHARS = 4096
REFUSED_MESSAGES_TIMES = 30
TIMEOUT = 120.0
"""Seconds the client waits for an answer (past the worker timeout: a killed worker's
request shows as a dropped connection, not a client timeout)."""


def _turn(n: int, run: str) -> dict[str, Any]:
    role = "user" if n % 2 == 0 else "assistant"
    text = f"{run} turn {n} "
    return {"role": role, "content": text + "w" * (TURN_CHARS - len(text))}


def _round(n: int, run: str) -> list[dict[str, Any]]:
    call_id = f"call_{n}"
    call = {"id": call_id, "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    head = f"{run} result {n}\n"
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {
            "role": "tool",
            "tool_call_id": call_id,
            "content": head + "r" * (RESULT_CHARS - len(head)),
        },
    ]


def conversation(messages: int, rounds: int, run: str) -> list[dict[str, Any]]:
    """``messages`` messages (at least ``2 * rounds + 1``): short turns, starting with the
    user's, then ``rounds`` tool rounds; content made unique by ``run``."""
    turns = messages - 2 * rounds
    out = [_turn(n, run) for n in range(turns)]
    for n in range(rounds):
        out += _round(n, run)
    return out


def _post(server: Server, body: bytes) -> tuple[float, int, Any]:
    """Seconds to the whole answer of ``POST /api/v1/clear``, its status and JSON."""
    connection = http.client.HTTPConnection(
        urllib.parse.urlsplit(server.url).netloc, timeout=TIMEOUT
    )
    headers = {"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"}
    try:
        start = time.perf_counter()
        connection.request("POST", "/api/v1/clear", body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        return time.perf_counter() - start, response.status, json.loads(data)
    finally:
        connection.close()


def _limits(server: Server) -> tuple[int, int]:
    code = (
        "from django.conf import settings; "
        "print(settings.REDUCTION_MAX_MESSAGES, settings.REDUCTION_MAX_OFFLOADS)"
    )
    messages, offloads = server.manage("shell", "-c", code).splitlines()[-1].split()
    return int(messages), int(offloads)


def measure(server: Server, runs: int) -> dict[str, Any]:
    """Seconds of each case, ``runs`` times each, on ``server``; the limits it ran with."""
    max_messages, max_offloads = _limits(server)
    if not (max_messages and max_offloads):
        raise SystemExit("the server runs with a limit off: nothing to measure")
    times: dict[str, list[float]] = {}

    def timed(case: str, payload: dict[str, Any], status: int) -> Any:
        body = json.dumps(payload).encode()
        seconds, got, answer = _post(server, body)
        if got != status:
            raise RuntimeError(f"{case}: answered {got}, not {status}: {answer}")
        times.setdefault(case, []).append(seconds)
        print(f"  {case}: {seconds:.2f} s ({len(body) / 1e6:.1f} MB)", flush=True)
        return answer

    for run in range(runs):
        tag = f"r{run}"
        timed(
            "messages",
            {"conversation_id": f"messages-{tag}", "messages": conversation(max_messages, 0, tag)},
            200,
        )
        largest = {
            "conversation_id": f"largest-{tag}",
            "messages": conversation(max_messages, max_offloads + 1, tag),
        }
        answer = timed("largest", largest, 200)
        offloaded = sum(1 for e in answer["events"] if e["offload_path"])
        if offloaded != max_offloads:
            raise RuntimeError(f"largest: {offloaded} results offloaded, not {max_offloads}")
        timed("largest, again", largest, 200)
        many = [{"role": "user", "content": "hi"}] * (REFUSED_MESSAGES_TIMES * max_messages)
        timed("refused: messages", {"messages": many}, 422)
        over = conversation(2 * (max_offloads + 2) + 1, max_offloads + 2, f"over-{tag}")
        timed("refused: offloads", {"conversation_id": f"over-{tag}", "messages": over}, 422)
    return {"max_messages": max_messages, "max_offloads": max_offloads, "times": times}


@contextmanager
def _server(folder: Path, database_url: str | None, env: dict[str, str]) -> Iterator[Server]:
    with ExitStack() as stack:
        if database_url is not None:
            database_url = stack.enter_context(fresh_postgres(database_url))
        yield stack.enter_context(production_server(folder, database_url=database_url, env=env))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also measure on a fresh database of this PostgreSQL server "
        "(postgres://user@host:port/any; the user needs CREATEDB)",
    )
    for name in ("messages", "offloads"):
        parser.add_argument(
            f"--max-{name}",
            type=int,
            metavar="N",
            help=f"run the server with REDUCTION_MAX_{name.upper()}=N, not the default",
        )
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.bounds", argv, PACKAGES)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    env = {
        f"REDUCTION_MAX_{name.upper()}": str(value)
        for name, value in (("messages", args.max_messages), ("offloads", args.max_offloads))
        if value is not None
    }
    results: list[tuple[str, dict[str, Any]]] = []
    databases = [("SQLite", None)] + ([("PostgreSQL", args.postgres)] if args.postgres else [])
    with tempfile.TemporaryDirectory() as tmp:
        for label, url in databases:
            print(label, flush=True)
            with _server(Path(tmp) / label, url, env) as server:
                results.append((label, measure(server, args.runs)))
    print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if readme is not None:
        write_block(readme, README_BLOCKS[0], stamp.block(markdown(results), load_average()))
        print(f"wrote its block of {readme}")
    return 0


def markdown(results: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """The figures as the README shows them: each case's median and slowest run, per
    database, against half the worker timeout."""
    first = results[0][1]
    rows = []
    slowest_accepted = 0.0
    for label, result in results:
        for case, seconds in result["times"].items():
            rows.append([label, case, f"{statistics.median(seconds):.2f}", f"{max(seconds):.2f}"])
            if not case.startswith("refused"):
                slowest_accepted = max(slowest_accepted, max(seconds))
    runs = len(next(iter(first["times"].values())))
    return [
        f"`REDUCTION_MAX_MESSAGES` {first['max_messages']:,}, `REDUCTION_MAX_OFFLOADS` "
        f"{first['max_offloads']:,}; seconds to the whole answer, "
        f"{runs} runs each:",
        md_table(["database", "request", "median", "slowest"], rows, left=2),
        f"The slowest request let through took **{slowest_accepted:.2f} s**, against "
        f"{GOAL:.0f} s, half of gunicorn's worker timeout.",
    ]


if __name__ == "__main__":
    sys.exit(main())
