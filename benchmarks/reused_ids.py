"""Time per request when agents reuse call ids, in one conversation and across many.

``POST /api/v1/clear`` through Django's test client on a fresh database: one id reused
across many results, thousands of conversations numbering their calls from ``call_0``,
and a client re-sending its original history beside one sending the answers back
(benchmarks/README.md, "Reused call ids").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from benchmarks.common import load_average
from benchmarks.report import (
    Stamp,
    add_readme_arguments,
    md_table,
    readme_path,
    verdict,
    write_block,
)

__all__ = ["CONFIG", "README_BLOCKS", "main", "rounds"]

PACKAGES = ("Django", "django-ninja", "psycopg")
README_BLOCKS = ("reused_ids-sqlite", "reused_ids-postgres")
"""The blocks of benchmarks/README.md that ``--readme`` writes, one per database."""
CONFIG: dict[str, Any] = {"max_tokens_for_clear": 10, "clear_retention_suffix_limit": 1}
"""Every round but the last is cleared and offloaded."""
GOAL = 1.5
"""The most the last requests may take, as a multiple of the first."""
RESULT_CHARS = 400


def _output(text: str) -> str:
    return (text + " ") * (RESULT_CHARS // (len(text) + 1))


def rounds(call_ids: Sequence[str], outputs: Sequence[str]) -> list[dict[str, Any]]:
    """An OpenAI chat conversation: a user's question, then one tool round per call id
    with its output."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Look around."}]
    for call_id, output in zip(call_ids, outputs, strict=True):
        function = {"name": "grep", "arguments": "{}"}
        call = {"id": call_id, "type": "function", "function": function}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": output},
        ]
    return messages


def one_id(request: int, results: int) -> list[dict[str, Any]]:
    """Request ``request`` of the one-id case: ``results`` rounds of the id ``dup``."""
    return rounds(
        ["dup"] * results, [_output(f"request {request} result {n}") for n in range(results)]
    )


def many(conversation: int, calls: int) -> list[dict[str, Any]]:
    """The request of conversation ``conversation``: ``call_0``... with shared and new
    outputs."""
    outputs = [
        _output(f"shared output {n}" if n % 2 == 0 else f"conversation {conversation} call {n}")
        for n in range(calls)
    ]
    return rounds([f"call_{n}" for n in range(calls)], outputs)


def _setup(folder: Path, database_url: str | None) -> Any:
    """Django on a new database (migrated) and a folder; a client with a fresh API key."""
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=database_url or f"sqlite:///{folder / 'db.sqlite3'}",
        REDUCTION_MEDIA_ROOT=str(folder / "media"),
    )
    for name in ("TEST_DATABASE_URL", "OFFLOAD_STORAGE"):
        os.environ.pop(name, None)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from reduction_app.workspaces.services import api_key_create, workspace_get_or_create

    call_command("migrate", "--noinput", verbosity=0)
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.REDUCTION_RATE_LIMIT = 0
    workspace = workspace_get_or_create(name="bench")
    _, raw = api_key_create(workspace=workspace, name="bench")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def _timed(client: Any, conversation_id: str, messages: list[dict[str, Any]]) -> float:
    """Seconds to the answer of one ``/clear``; fails unless every round but the last was
    cleared."""
    seconds, answer = _post(client, conversation_id, messages)
    cleared = answer["events"][-1]["calls_cleared"]
    expected = (len(messages) - 1) // 2 - 1
    if cleared != expected:
        raise RuntimeError(f"{conversation_id}: {cleared} calls cleared, not {expected}")
    return seconds


def _post(client: Any, conversation_id: str, messages: list[dict[str, Any]]) -> tuple[float, Any]:
    """Seconds to the answer of one ``/clear``, and the answer."""
    body = {"config": CONFIG, "conversation_id": conversation_id, "messages": messages}
    start = time.perf_counter()
    response = client.post("/api/v1/clear", body, content_type="application/json")
    seconds = time.perf_counter() - start
    if response.status_code != 200:
        raise RuntimeError(
            f"{conversation_id}: answered {response.status_code}: {response.content[:300]!r}"
        )
    return seconds, response.json()


RESENT = ("answers", "originals")
"""The two clients of the sent-again case, as their conversations are named."""


def sent_again(client: Any, calls: int) -> dict[str, Any]:
    """The sent-again case: seconds and request bytes per call of each client, and the
    events each conversation recorded."""
    from reduction_app.models import EventRecord

    ids = [f"call_{n}" for n in range(calls)]
    outputs = [_output(f"history output {n}") for n in range(calls)]
    found: dict[str, Any] = {name: {"seconds": [], "bytes": []} for name in RESENT}
    carried: list[dict[str, Any]] = []
    for k in range(1, calls + 1):
        originals = rounds(ids[:k], outputs[:k])
        answers = carried + originals[len(carried) :] if carried else originals
        for name, messages in zip(RESENT, (answers, originals), strict=True):
            seconds, answer = _post(client, f"sent-again-{name}", messages)
            found[name]["seconds"].append(seconds)
            found[name]["bytes"].append(len(json.dumps(messages)))
            if name == "answers":
                carried = answer["messages"]
        if k % max(1, calls // 10) == 0:
            last = ", ".join(f"{n} {found[n]['seconds'][-1] * 1000:.1f} ms" for n in RESENT)
            print(f"sent again, call {k}: {last}", flush=True)
    for name in RESENT:
        rows = EventRecord.objects.filter(conversation__client_id=f"sent-again-{name}")
        found[name]["tool_events"] = rows.exclude(kind="summary").count()
        found[name]["summaries"] = rows.filter(kind="summary").count()
    return found


@contextmanager
def _database(url: str | None) -> Iterator[str | None]:
    if url is None:
        yield None
        return
    from benchmarks.server import fresh_postgres

    with fresh_postgres(url) as fresh:
        yield fresh


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds per request of both cases."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        database_url = stack.enter_context(_database(args.database_url))
        client = _setup(folder, database_url)
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", flush=True)
        _timed(client, "warm-up", many(-1, args.calls))
        dup = []
        for request in range(args.dup_requests):
            dup.append(_timed(client, "one-id", one_id(request, args.dup_results)))
            print(f"one id, request {request + 1}: {dup[-1] * 1000:.0f} ms", flush=True)
        spread = []
        step = max(1, args.conversations // 10)
        for n in range(args.conversations):
            spread.append(_timed(client, f"conversation-{n}", many(n, args.calls)))
            if (n + 1) % step == 0:
                recent = statistics.median(spread[-min(args.window, len(spread)) :])
                last = f"median of the last {args.window} {recent * 1000:.1f} ms"
                print(f"conversation {n + 1}: {last}", flush=True)
        again = sent_again(client, args.resend_calls)
    return {"one_id": dup, "many": spread, "sent_again": again}


def summary(times: dict[str, Any], window: int) -> dict[str, float]:
    """The ratios the goal reads: last against first."""
    dup, spread = times["one_id"], times["many"]
    window = min(window, max(1, len(spread) // 2))
    return {
        "one_id_first": dup[0],
        "one_id_last": dup[-1],
        "one_id_ratio": dup[-1] / dup[0],
        "many_first": statistics.median(spread[:window]),
        "many_last": statistics.median(spread[-window:]),
        "many_ratio": statistics.median(spread[-window:]) / statistics.median(spread[:window]),
        "window": window,
    }


def markdown(args: argparse.Namespace, times: dict[str, Any], database: str) -> list[str]:
    """The figures as the README shows them."""
    figures = summary(times, args.window)
    dup, spread = times["one_id"], times["many"]
    window = int(figures["window"])
    dup_rows = [[f"{n + 1}", f"{seconds * 1000:.0f}"] for n, seconds in enumerate(dup)]
    marks = sorted({1, *(len(spread) * k // 10 for k in range(1, 11))} - {0})
    spread_rows = []
    for mark in marks:
        near = spread[max(0, mark - window) : mark] or spread[:1]
        spread_rows.append(
            [f"{mark:,}", f"{statistics.median(near) * 1000:.1f}", f"{max(near) * 1000:.1f}"]
        )
    ratios = [figures["one_id_ratio"], figures["many_ratio"]]
    return [
        f"{database}. **One id**: {args.dup_requests} requests of {args.dup_results:,} tool "
        f"rounds all with the id `dup`, in one conversation; ms per request:",
        md_table(["request", "ms"], dup_rows),
        f"**Many conversations**: {args.conversations:,} conversations, one request each of "
        f"{args.calls} rounds (`call_0` ... `call_{args.calls - 1}`, the even calls' outputs "
        f"shared by all); ms per request, over the {window} requests up to the one named:",
        md_table(["conversation", "median ms", "slowest ms"], spread_rows),
        f"The last request of one id took **{figures['one_id_ratio']:.2f}×** the first "
        f"({figures['one_id_last'] * 1000:.0f} against {figures['one_id_first'] * 1000:.0f} ms); "
        f"the last {window} conversations took **{figures['many_ratio']:.2f}×** the first "
        f"{window} ({figures['many_last'] * 1000:.1f} against "
        f"{figures['many_first'] * 1000:.1f} ms, median). Goal, at most {GOAL}×: "
        f"{verdict(ratios, GOAL)}.",
        *_sent_again_sections(times["sent_again"]),
    ]


def _sent_again_sections(again: dict[str, Any]) -> list[str]:
    answers, originals = again["answers"], again["originals"]
    calls = len(answers["seconds"])
    marks = sorted({m for m in (1, 10, 100, 300, calls) if m <= calls})
    rows = [
        [
            f"{mark:,}",
            f"{answers['seconds'][mark - 1] * 1000:.1f}",
            f"{answers['bytes'][mark - 1]:,}",
            f"{originals['seconds'][mark - 1] * 1000:.1f}",
            f"{originals['bytes'][mark - 1]:,}",
        ]
        for mark in marks
    ]
    headers = ["call", "answers ms", "answers bytes", "originals ms", "originals bytes"]
    return [
        f"**Sent again**: one conversation each of {calls:,} calls, a tool round more at "
        "each; one client sends back what `/clear` answered, the other its original "
        "history every time:",
        md_table(headers, rows),
        f"Events recorded: {answers['tool_events']:,} tool events and "
        f"{answers['summaries']:,} summaries for the client that sends the answers back, "
        f"{originals['tool_events']:,} and {originals['summaries']:,} for the one that "
        "sends its originals.",
    ]


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dup-requests", type=_positive, default=10)
    parser.add_argument("--dup-results", type=_positive, default=1_000)
    parser.add_argument("--conversations", type=_positive, default=6_000)
    parser.add_argument("--calls", type=_positive, default=10)
    parser.add_argument("--window", type=_positive, default=50)
    parser.add_argument("--resend-calls", type=_positive, default=300)
    parser.add_argument(
        "--database-url",
        help="a PostgreSQL server (postgres://user@host:port/db) to make a fresh database on",
    )
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    if args.calls < 2:
        parser.error("--calls must be at least 2: the last round is never cleared")
    block = README_BLOCKS[1] if args.database_url else README_BLOCKS[0]
    readme = readme_path(args, block)
    stamp = Stamp.take("benchmarks.reused_ids", argv, PACKAGES)
    times = measure(args)
    database = "PostgreSQL" if args.database_url else "SQLite"
    sections = markdown(args, times, database)
    print("\n\n".join(sections))
    if readme is not None:
        write_block(readme, block, stamp.block(sections, load_average()))
        print(f"wrote its block of {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
