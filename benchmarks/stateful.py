"""Sending only what is new: one long real session replayed over ``/clear`` by a client
that sends only its new messages (``previous_revision``) and by one that sends its whole
context every time, each as its own conversation, against the production server of
``make serve``; the run fails unless their contexts are equal at every call.

The session: the longest ``mini-swe-agent/`` runs, ranked as ``benchmarks.soak`` ranks
them, one after another until ``--calls`` model calls (benchmarks/README.md says more).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import load_average
from benchmarks.loadgen import post_once
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block
from benchmarks.server import Server, temporary_server
from benchmarks.soak import Session, ranked_sessions, selected
from simulator.recordings_folder import RecordingsNotFound, require_recordings

__all__ = ["AGENT", "README_BLOCK", "README_BLOCKS", "chained", "main"]

RESULTS = Path(__file__).parent / "results" / "stateful.json"
PATH = "/api/v1/clear"
PACKAGES = ("Django", "django-ninja", "gunicorn", "psycopg")
README_BLOCK = "stateful"
README_BLOCKS = (README_BLOCK,)
"""The block of benchmarks/README.md that ``--readme`` writes."""
AGENT = "mini-swe-agent"
"""The folder of the recordings folder whose runs are chained."""
MARKS = (10, 100, 300, 497)
"""The calls whose latency the report compares."""
WINDOW = 12
"""A mark's latency is the median of the calls this many either side of it and itself."""
GOAL = 1.3
"""The most the slowest mark may take over the fastest, sending only what is new."""


@dataclass(frozen=True)
class Chained:
    labels: list[str]
    fmt: str
    system: Any
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    calls: list[int]
    """Indices of the assistant messages that were model calls."""


def chained(sessions: Sequence[Session], calls: int) -> Chained:
    """``sessions`` (ranked) one after another as one conversation, until ``calls``
    model calls; the first one's tools (the runs of one agent share them)."""
    picked = selected(sessions, calls)
    messages: list[dict[str, Any]] = []
    indices: list[int] = []
    for session in picked:
        indices += [len(messages) + i for i in session.calls]
        messages += session.messages
    first = picked[0]
    return Chained(
        [s.label for s in picked], first.fmt, first.system, messages, first.tools, indices[:calls]
    )


@dataclass
class Call:
    messages: int
    """The context's length, in messages, after the call."""
    new: int
    """The messages added since the last call."""
    new_bytes: int
    """Their JSON, as the client sends them."""
    whole_s: float
    whole_bytes: int
    stateful_s: float
    stateful_bytes: int
    answer_bytes: int
    """What the stateful call answered."""
    applied: bool


def _post(server: Server, body: dict[str, Any]) -> tuple[float, int, dict[str, Any]]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    data = json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"}
    status, seconds, answer = post_once(host, int(port), PATH, data, headers)
    if status != 200:
        raise SystemExit(f"/clear answered {status}: {answer[:500]!r}")
    return seconds, len(data), json.loads(answer)


def _digest(messages: list[Any]) -> str:
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


def _body(
    session: Chained, config: dict[str, Any], conversation_id: str, messages: list[Any]
) -> dict[str, Any]:
    """A ``/clear`` body sending the session's tools (and system) with ``messages``."""
    body: dict[str, Any] = {
        "format": session.fmt,
        "config": config,
        "conversation_id": conversation_id,
        "messages": messages,
        "tools": session.tools,
    }
    if session.system is not None:
        body["system"] = session.system
    return body


def replay_whole(
    server: Server, session: Chained, config: dict[str, Any]
) -> list[tuple[float, int, str, bool]]:
    """Every call of ``session`` with the whole context: each call's seconds, request
    bytes, the digest of the context it answered and whether it cleared."""
    out = []
    context: list[Any] = []
    previous = 0
    for number, index in enumerate(session.calls, 1):
        new = session.messages[previous:index]
        previous = index
        seconds, sent, answer = _post(server, _body(session, config, "whole", context + new))
        context = answer["messages"]
        out.append((seconds, sent, _digest(context), bool(answer["applied"])))
        if number % 100 == 0:
            print(f"whole context: call {number} of {len(session.calls)}", file=sys.stderr)
    return out


def replay(server: Server, session: Chained, config: dict[str, Any]) -> list[Call]:
    """Every call of ``session`` sending only what is new, then again with the whole
    context (each on its own, so neither waits on the other's writes); fails unless the
    two contexts are equal at every call."""
    mine: list[Any] = []
    revision = None
    previous = 0
    out: list[Call] = []
    digests = []
    for number, index in enumerate(session.calls, 1):
        new = session.messages[previous:index]
        previous = index
        if revision is None:
            body = _body(session, config, "stateful", new)
        else:
            body = {
                "format": session.fmt,
                "config": config,
                "conversation_id": "stateful",
                "previous_revision": revision,
                "messages": new,
            }
        seconds, sent, answer = _post(server, body)
        revision = answer["revision"]
        mine = mine[: answer["from_index"]] + answer["messages"]
        digests.append(_digest(mine))
        out.append(
            Call(
                messages=len(mine),
                new=len(new),
                new_bytes=len(json.dumps(new).encode()),
                whole_s=0.0,
                whole_bytes=0,
                stateful_s=seconds,
                stateful_bytes=sent,
                answer_bytes=len(json.dumps(answer["messages"]).encode()),
                applied=bool(answer["applied"]),
            )
        )
        if number % 100 == 0:
            print(f"only new: call {number} of {len(session.calls)}", file=sys.stderr)
    for number, (call, (seconds, sent, digest, applied)) in enumerate(
        zip(out, replay_whole(server, session, config), strict=True), 1
    ):
        if digest != digests[number - 1] or applied != call.applied:
            raise SystemExit(f"call {number}: the two clients' contexts differ")
        call.whole_s, call.whole_bytes = seconds, sent
    return out


def _near(calls: Sequence[Call], mark: int) -> list[Call]:
    """The ``2 * WINDOW + 1`` calls nearest to call ``mark`` (counted from 1) that cleared
    nothing: a call that clears also stores what it offloads, which costs the same early
    or late but more than a call that does not, so marks compare like with like."""
    plain = sorted((abs(i + 1 - mark), i) for i, c in enumerate(calls) if not c.applied)
    return [calls[i] for _, i in plain[: 2 * WINDOW + 1]]


def figures(calls: Sequence[Call]) -> dict[str, Any]:
    marks = [m for m in MARKS if m <= len(calls)]
    at = {}
    for m in marks:
        near = _near(calls, m)
        at[m] = {
            "messages": calls[m - 1].messages,
            "whole_s": statistics.median(c.whole_s for c in near),
            "stateful_s": statistics.median(c.stateful_s for c in near),
            "whole_bytes": calls[m - 1].whole_bytes,
            "stateful_bytes": calls[m - 1].stateful_bytes,
        }
    spread = max(a["stateful_s"] for a in at.values()) / min(a["stateful_s"] for a in at.values())
    cleared = [c for c in calls if c.applied]
    clearing = (
        {
            "count": len(cleared),
            "first": calls.index(cleared[0]) + 1,
            "stateful_s": statistics.median(c.stateful_s for c in cleared),
            "whole_s": statistics.median(c.whole_s for c in cleared),
        }
        if cleared
        else None
    )
    tenths = []
    for tenth in range(10):
        part = calls[len(calls) * tenth // 10 : len(calls) * (tenth + 1) // 10]
        if part:
            first = len(calls) * tenth // 10 + 1
            tenths.append(
                {
                    "calls": f"{first}-{first + len(part) - 1}",
                    "messages": part[-1].messages,
                    "whole_ms": 1000 * statistics.median(c.whole_s for c in part),
                    "stateful_ms": 1000 * statistics.median(c.stateful_s for c in part),
                    "cleared": sum(c.applied for c in part),
                    "whole_kb": statistics.fmean(c.whole_bytes for c in part) / 1024,
                    "stateful_kb": statistics.fmean(c.stateful_bytes for c in part) / 1024,
                    "new_kb": statistics.fmean(c.new_bytes for c in part) / 1024,
                }
            )
    overhead = [c.stateful_bytes - c.new_bytes for c in calls[1:]]
    return {
        "calls": len(calls),
        "calls_cleared": sum(c.applied for c in calls),
        "at": at,
        "spread": spread,
        "clearing": clearing,
        "whole_spread": max(a["whole_s"] for a in at.values())
        / min(a["whole_s"] for a in at.values()),
        "whole_sent": sum(c.whole_bytes for c in calls),
        "stateful_sent": sum(c.stateful_bytes for c in calls),
        "stateful_answered": sum(c.answer_bytes for c in calls),
        "overhead_bytes": {"min": min(overhead), "max": max(overhead)} if overhead else None,
        "tenths": tenths,
    }


def markdown(report: dict[str, Any]) -> list[str]:
    found = report["figures"]
    chain = ", ".join(f"`{label}`" for label in report["session"]["labels"])
    intro = (
        f"{report['database']}, gunicorn with {report['workers']} workers. "
        f"The session: {found['calls']} model calls of {len(report['session']['labels'])} "
        f"runs of {AGENT} chained as one conversation ({chain}); "
        f"{report['session']['messages']:,} messages. Config: `{json.dumps(report['config'])}` "
        f"({found['calls_cleared']} calls cleared). The contexts of the two clients were "
        "equal at every call."
    )
    at_rows = [
        [
            f"call {m}",
            f"{a['messages']:,}",
            f"{1000 * a['whole_s']:.1f}",
            f"{1000 * a['stateful_s']:.1f}",
            f"{a['whole_bytes']:,}",
            f"{a['stateful_bytes']:,}",
        ]
        for m, a in found["at"].items()
    ]
    at_table = md_table(
        [
            "call",
            "context msgs",
            "whole ms",
            "only new ms",
            "whole request bytes",
            "only new request bytes",
        ],
        at_rows,
    )
    tenth_rows = [
        [
            t["calls"],
            f"{t['messages']:,}",
            f"{t['cleared']}",
            f"{t['whole_ms']:.1f}",
            f"{t['stateful_ms']:.1f}",
            f"{t['whole_kb']:,.1f}",
            f"{t['stateful_kb']:,.2f}",
            f"{t['new_kb']:,.2f}",
        ]
        for t in found["tenths"]
    ]
    tenth_table = md_table(
        [
            "calls",
            "context msgs at end",
            "calls that cleared",
            "whole median ms",
            "only new median ms",
            "whole KB sent",
            "only new KB sent",
            "new messages KB",
        ],
        tenth_rows,
    )
    overhead = found["overhead_bytes"]
    sent = (
        f"Sent over the session: **{found['whole_sent']:,} bytes** with the whole context, "
        f"**{found['stateful_sent']:,} bytes** with only what is new "
        f"({found['whole_sent'] / found['stateful_sent']:.0f}× less); "
        f"a call that continues sends its new messages' JSON plus "
        f"{overhead['min']:,} to {overhead['max']:,} bytes."
        if overhead
        else ""
    )
    verdict = "met" if found["spread"] <= GOAL else "not met"
    spread = (
        f"Latency at calls {', '.join(str(m) for m in found['at'])} (each the median of the "
        f"{2 * WINDOW + 1} calls nearest to it that cleared nothing), slowest over fastest: "
        f"**{found['spread']:.2f}×** sending only what is new (goal ≤ {GOAL}×: {verdict}), "
        f"{found['whole_spread']:.2f}× sending the whole context."
    )
    clearing = found["clearing"]
    if clearing:
        spread += (
            f" The {clearing['count']} calls that cleared (from call {clearing['first']} on) "
            f"took {1000 * clearing['stateful_s']:.1f} ms (median) sending only what is new, "
            f"{1000 * clearing['whole_s']:.1f} ms sending the whole context."
        )
    return [intro, at_table, spread, sent, "By tenth of the session:", tenth_table]


def problems(report: dict[str, Any]) -> list[str]:
    found = report["figures"]
    if found["spread"] > GOAL:
        return [f"the latency spread {found['spread']:.2f}x is over {GOAL}x"]
    return []


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recordings", type=Path, metavar="DIR", help="the recordings folder")
    parser.add_argument("--calls", type=int, default=497, help="model calls to replay")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="serve from a fresh database made (and dropped) on this PostgreSQL server, "
        "e.g. postgres://postgres@127.0.0.1:5432/postgres; SQLite by default",
    )
    parser.add_argument(
        "--config",
        type=json.loads,
        default={},
        help="the engine config both clients send, as JSON (default: the defaults)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    if args.calls < 2:
        parser.error("--calls must be 2 or more")
    try:
        args.recordings = require_recordings(args.recordings, option="--recordings")
    except RecordingsNotFound as error:
        parser.error(str(error))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    readme = readme_path(args, README_BLOCK)
    stamp = Stamp.take("benchmarks.stateful", argv, PACKAGES)
    folder = args.recordings / AGENT
    ranked, _ = ranked_sessions(folder) if folder.is_dir() else ([], [])
    if not ranked:
        raise SystemExit(f"no run the simulator reads in {folder}")
    session = chained(ranked, args.calls)
    print(
        f"{len(session.calls)} calls of {len(session.labels)} runs, "
        f"{len(session.messages):,} messages",
        file=sys.stderr,
    )
    with temporary_server(
        "stateful-", workers=args.workers, database_url=args.database_url
    ) as server:
        print(f"server on {server.url}", file=sys.stderr)
        calls = replay(server, session, args.config)
    report = {
        "database": "PostgreSQL" if args.database_url else "SQLite",
        "workers": args.workers,
        "config": args.config,
        "session": {
            "labels": [f"{AGENT}/{label}" for label in session.labels],
            "messages": len(session.messages),
        },
        "figures": figures(calls),
        "load_after": load_average(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("\n\n".join(markdown(report)))
    print(f"\nwrote {args.out}")
    if readme is not None:
        write_block(readme, README_BLOCK, stamp.block(markdown(report), report["load_after"]))
        print(f"wrote its block {README_BLOCK} of {readme}")
    failed = problems(report)
    if failed:
        print("FAILED: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
