"""The sweep benchmark: what a 50-combination sweep costs, against one replay.

Every figure is measured in a fresh process, one replay against the plain loop, each
sharing step and the shared sweep on one and two processes; ``--tasks`` times the same
grid on django-tasks workers (:mod:`benchmarks.taskworkers`). What each row is:
benchmarks/README.md, "Sweeping a grid".
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block

__all__ = ["GRID", "README_BLOCKS", "main"]

GRID: dict[str, list[int]] = {
    "max_tokens_for_clear": [10_000, 20_000, 40_000, 80_000, 160_000],
    "clear_retention_suffix_limit": [1, 3],
    "max_length_for_trunc": [2_000, 4_000, 8_000, 16_000, 50_000],
}
PRICING = "gpt-4o"
SINGLES = (0, 6, 12, 18, 24, 25, 31, 37, 43, 49)
"""Combinations timed alone (in grid order: retention, then truncation, then threshold):
the two diagonals, so every threshold and truncation limit is there twice."""
REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results" / "sweep.json"
GOAL_SHARE = 4
"""A sweep of K combinations takes at most K / this many single replays."""
PACKAGES = ("tiktoken", "Django", "django-tasks")
README_BLOCKS = ("sweep", "sweep-tasks-sqlite", "sweep-tasks-postgres")
"""The blocks of benchmarks/README.md that ``--readme`` writes: in-process sweeps, and
sweeps on django-tasks workers over each database."""

# What a fresh process runs: one measure, printed as one JSON line. Written against the
# simulator's public functions only, so it runs on an earlier checkout too (--before).
_CHILD = r"""
import hashlib, json, pickle, resource, sys, time
job = json.loads(sys.argv[1])
with open(job["conversation"], "rb") as f:
    conversation = pickle.load(f)
from reduction_app.engine import get_token_counter
from simulator.compare import grid_configs, sweep
from simulator.pricing import pricing_for, with_cache_prices
from simulator.replay import replay
get_token_counter("o200k_base").encoding
pricing = pricing_for(job["pricing"])
grid = job["grid"]
mode = job["mode"]


def digest(result):
    text = json.dumps(result.to_dict(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def alone(share_truncation):
    from simulator.compare import SweepResult, sweep_configs
    from simulator.parallel import totals_only
    from simulator.replay import Prepared, replay_many
    prepared = Prepared(conversation, pricing, share_truncation=share_truncation)
    named = [*sweep_configs(grid, pricing), ("no reduction", None)]
    results = [
        totals_only(replay_many(conversation, [one], pricing=pricing, prepared=prepared)[0])
        for one in named
    ]
    baseline = results.pop()
    return SweepResult.of(results, baseline)


clock, cpu = time.perf_counter(), time.process_time()
if mode == "replay":
    config = with_cache_prices(grid_configs(grid)[job["combination"]], pricing)
    replay(conversation, config, pricing=pricing)
    check = ""
elif mode == "sweep":
    options = job.get("options")
    result = sweep(conversation, grid, pricing=pricing, **(options or {}))
    check = digest(result)
else:
    check = digest(alone(mode == "alone, truncation shared"))
seconds = time.perf_counter() - clock
children = resource.getrusage(resource.RUSAGE_CHILDREN)
me = resource.getrusage(resource.RUSAGE_SELF)
cpu = time.process_time() - cpu + children.ru_utime + children.ru_stime
total = me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime
print(json.dumps({"seconds": seconds, "cpu": cpu, "process_cpu": total, "check": check}))
"""


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _busy_seconds() -> float | None:
    """CPU seconds every process of the machine has used since boot (Linux only)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields]
    idle = ticks[3] + ticks[4]  # idle, iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (workers and shells included)."""
    import resource

    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def child(job: dict[str, Any], *, tree: Path = REPO) -> dict[str, Any]:
    """Run one measure in a fresh process with the code in ``tree``.

    Beside the figures: ``load``, the 1-minute load average as it started (which this
    benchmark's previous measure still weighs on), and ``others``, how many CPUs other
    processes kept busy on average while it ran (from /proc/stat, less its own time)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    load = _load()
    busy, clock = _busy_seconds(), time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(job)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - clock
    if done.returncode != 0:
        raise RuntimeError(f"measure {job['mode']} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.splitlines()[-1])
    after = _busy_seconds()
    others = None
    if busy is not None and after is not None:
        others = round(max(0.0, after - busy - out["process_cpu"]) / wall, 2)
    return {**out, "load": load, "others": others}


def _conversation(scale: int, folder: Path) -> tuple[Path, dict[str, Any]]:
    from reduction_app.engine.formats import parse_tools
    from simulator.corpus import TOOLS_OPENAI, build_conversation, conversation_chars
    from simulator.recording import RecordedConversation
    from simulator.transcript import model_calls

    messages = build_conversation(1000 * scale, 1_000_000 * scale)
    conversation = RecordedConversation(
        f"corpus x{scale}", messages, parse_tools("openai_chat", TOOLS_OPENAI)
    )
    path = folder / f"corpus-{scale}.pickle"
    path.write_bytes(pickle.dumps(conversation))
    info = {
        "messages": len(messages),
        "model_calls": len(model_calls(messages)),
        "chars": conversation_chars(messages),
    }
    return path, info


SWEEPS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("plain loop, 1 process", "sweep", {"workers": 1, "share": False}),
    ("prepared conversation and meter shared, one at a time", "alone", None),
    ("  + truncation shared", "alone, truncation shared", None),
    ("  + prefixes shared (share=True), 1 process", "sweep", {"workers": 1, "share": True}),
    ("share=True, 2 processes", "sweep", {"workers": 2, "share": True}),
    ("plain loop, 2 processes", "sweep", {"workers": 2, "share": False}),
]


def measure_scale(scale: int, folder: Path, runs: int, before: Path | None) -> dict[str, Any]:
    path, info = _conversation(scale, folder)
    print(
        f"\n## Scale {scale}: {info['messages']:,} messages, {info['model_calls']} model calls, "
        f"{info['chars']:,} characters",
        flush=True,
    )
    base = {"conversation": str(path), "pricing": PRICING, "grid": GRID}
    k = len(SINGLES)
    singles = [child({**base, "mode": "replay", "combination": c}) for c in SINGLES]
    one = statistics.mean(s["seconds"] for s in singles)
    report: dict[str, Any] = {"scale": scale, "conversation": info, "singles": singles}
    others = [s["others"] for s in singles if s["others"] is not None]
    print(
        f"one replay (mean of {k}, each in a fresh process): {one:.3f} s "
        f"(min {min(s['seconds'] for s in singles):.3f}, "
        f"max {max(s['seconds'] for s in singles):.3f}; load {singles[0]['load']}, "
        f"others {max(others, default=None)} at most)",
        flush=True,
    )
    rows = []
    for label, mode, options in SWEEPS:
        measures = [child({**base, "mode": mode, "options": options}) for _ in range(runs)]
        best = min(measures, key=lambda m: m["seconds"])
        rows.append({"label": label, "mode": mode, "options": options, **best})
    if before is not None:
        old = [child({**base, "mode": "replay", "combination": c}, tree=before) for c in SINGLES]
        report["before_one_replay_s"] = statistics.mean(s["seconds"] for s in old)
        measures = [child({**base, "mode": "sweep"}, tree=before) for _ in range(runs)]
        best = min(measures, key=lambda m: m["seconds"])
        rows.insert(0, {"label": f"before ({before.name}), plain loop", "mode": "sweep", **best})
    checks = {r["check"] for r in rows}
    report.update(one_replay_s=one, sweeps=rows, same_results=len(checks) == 1)
    print(f"\n{scale_table(report)}")
    if before is not None:
        print(f"one replay before: {report['before_one_replay_s']:.3f} s")
    combinations = _combinations()
    print(f"goal: ≤ {combinations / GOAL_SHARE:.1f} × one replay (K/{GOAL_SHARE})")
    print(f"same results every way: {'yes' if len(checks) == 1 else 'NO: ' + str(checks)}")
    return report


def _combinations() -> int:
    count = 1
    for values in GRID.values():
        count *= len(values)
    return count


def scale_table(scale: dict[str, Any]) -> str:
    """The sweeps of one scale as a markdown table (printed as it is, too)."""
    one, rows = scale["one_replay_s"], scale["sweeps"]
    plain = next(r for r in rows if r["label"] == "plain loop, 1 process")["seconds"]
    lines = [
        f"| sweep of {_combinations()} combinations, scale {scale['scale']} | s | CPU s "
        "| × one replay | vs plain | load | others |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['label'].strip()} | {row['seconds']:.2f} | {row['cpu']:.2f} | "
            f"{row['seconds'] / one:.1f} | {plain / row['seconds']:.2f}× | {row['load']} "
            f"| {row['others']} |"
        )
    return "\n".join(lines)


def _scale_markdown(scale: dict[str, Any]) -> list[str]:
    c, one = scale["conversation"], scale["one_replay_s"]
    singles = [s["seconds"] for s in scale["singles"]]
    goal = _combinations() / GOAL_SHARE
    verdicts = []
    for label, short in (
        ("share=True, 2 processes", "share=True on 2 processes"),
        ("  + prefixes shared (share=True), 1 process", "share=True in 1 process"),
    ):
        row = next((r for r in scale["sweeps"] if r["label"] == label), None)
        if row is not None:
            times = row["seconds"] / one
            met = "met" if times <= goal else "not met"
            verdicts.append(f"{short}: **{times:.1f}** × one replay ({met})")
    before = scale.get("before_one_replay_s")
    return [
        f"Scale {scale['scale']}: {c['messages']:,} messages, {c['model_calls']} model calls, "
        f"{c['chars']:,} characters. One replay: **{one:.3f} s** (the mean of "
        f"{len(singles)} combinations replayed alone, {min(singles):.3f} to "
        f"{max(singles):.3f} s)" + (f"; before: {before:.3f} s." if before is not None else "."),
        scale_table(scale),
        f"Goal ≤ {goal:g} × one replay (K/{GOAL_SHARE}): " + "; ".join(verdicts) + ". "
        f"Same results every way: {'yes' if scale['same_results'] else 'no'}.",
    ]


def growth_rows(first: dict[str, Any], last: dict[str, Any]) -> list[list[str]]:
    """How each figure grew from the first scale to the last."""
    messages = last["conversation"]["messages"] / first["conversation"]["messages"]
    rows = [
        ["conversation (messages)", f"{messages:.2f}"],
        ["one replay", f"{last['one_replay_s'] / first['one_replay_s']:.2f}"],
    ]
    for a, b in zip(first["sweeps"], last["sweeps"], strict=True):
        rows.append([a["label"].strip(), f"{b['seconds'] / a['seconds']:.2f}"])
    return rows


def markdown(report: dict[str, Any]) -> list[str]:
    """The figures as the README shows them."""
    if "tasks" in report:
        return _tasks_markdown(report["tasks"])
    grid = ", ".join(f"`{k}` {', '.join(f'{v:,}' for v in vs)}" for k, vs in GRID.items())
    sections = [
        f"The grid: {grid}; priced as {PRICING}; every figure in a fresh process, the best "
        f"of {report['runs']} run(s)."
    ]
    for scale in report["scales"]:
        sections += _scale_markdown(scale)
    if len(report["scales"]) > 1:
        first, last = report["scales"][0], report["scales"][-1]
        sections.append(
            md_table(["growth from the first scale to the last", "×"], growth_rows(first, last))
        )
    return sections


def _tasks_markdown(tasks: dict[str, Any]) -> list[str]:
    rows = [
        [
            run["workers"],
            f"{run['seconds']:.2f}",
            ", ".join(str(n) for n in run["parts_per_worker"]),
            run["status"],
            run["load"],
            run["others"],
        ]
        for run in tasks["runs"]
    ]
    headers = [f"workers ({tasks['database']})", "s", "parts per worker", "status"]
    return [
        f"The grid of {_combinations()} combinations as one task per combination (and one "
        "for the baseline), timed from the first part taken to the sweep gathered:",
        md_table([*headers, "load", "others"], rows),
        f"Speed-up from 1 to 2 workers: **{tasks['speedup']:.2f}×**; results the same as an "
        f"in-process sweep's: {'yes' if tasks['same_results'] else 'no'}.",
    ]


def measure_tasks(database_url: str | None, folder: Path) -> dict[str, Any]:
    """The grid as one task per combination on 1 then 2 ``db_worker`` processes."""
    from benchmarks.taskworkers import Site
    from simulator.corpus import TOOLS_OPENAI, build_conversation, dump_openai

    site = Site(database_url or f"sqlite:///{folder / 'tasks.sqlite3'}", folder / "media")
    engine = "PostgreSQL" if not site.is_sqlite else "SQLite"
    print(f"\n## django-tasks workers ({engine})", flush=True)
    site.migrate()
    messages = build_conversation()
    conversation_id = site.store_conversation(dump_openai(messages), TOOLS_OPENAI, "corpus")
    path, _ = _conversation(1, folder)
    job = {"conversation": str(path), "pricing": PRICING, "grid": GRID, "mode": "sweep"}
    in_process = child(job)["check"]
    runs = []
    for count in (1, 2):
        workers = site.start_workers(count)
        time.sleep(3)  # each worker imports Django and starts polling
        load = _load()
        busy, mine, own = _busy_seconds(), _children_cpu(), time.process_time()
        try:
            queued = time.perf_counter()
            simulation_id = site.queue_sweep(conversation_id, GRID, PRICING)
            finished = site.wait(simulation_id, timeout=1800)
            seen = time.perf_counter() - queued
        finally:
            site.stop_workers(workers)
        # Other processes than this benchmark's (the database server's included).
        after, wall = _busy_seconds(), time.perf_counter() - queued
        others = None
        if busy is not None and after is not None:
            spent = _children_cpu() - mine + time.process_time() - own
            others = round(max(0.0, after - busy - spent) / wall, 2)
        parts = site.parts(simulation_id)
        taken: dict[str, int] = {}
        for part in parts:
            taken[part["worker"]] = taken.get(part["worker"], 0) + 1
        seconds = _seconds(finished["started_at"], finished["finished_at"])
        runs.append(
            {
                "workers": count,
                "status": finished["status"],
                "seconds": seconds,
                "seen_s": seen,
                "parts_per_worker": sorted(taken.values(), reverse=True),
                "load": load,
                "others": others,
                "results": finished["results"],
            }
        )
        print(
            f"{count} worker(s): {seconds:.2f} s from the first part taken to the sweep "
            f"gathered ({finished['status']}; parts per worker {sorted(taken.values())}; "
            f"load {load}, others {others})",
            flush=True,
        )
    speedup = runs[0]["seconds"] / runs[1]["seconds"]
    same = all(_digest(run["results"]) == in_process for run in runs)
    print(f"speed-up from 1 to 2 workers: {speedup:.2f}×")
    print(f"results the same as an in-process sweep's: {'yes' if same else 'NO'}")
    for run in runs:
        del run["results"]
    return {"database": engine, "runs": runs, "speedup": speedup, "same_results": same}


def _digest(results: Any) -> str:
    """As the measuring processes hash a sweep's ``to_dict()``."""
    import hashlib

    text = json.dumps(results, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _seconds(start: Any, end: Any) -> float:
    from datetime import datetime

    def parse(value: Any) -> datetime:
        return datetime.fromisoformat(value) if isinstance(value, str) else value

    return (parse(end) - parse(start)).total_seconds()


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sweep", description=__doc__)
    parser.add_argument(
        "--scales", default="1,2", help="conversation sizes, comma-separated (1: 1,010 messages)"
    )
    parser.add_argument("--runs", type=int, default=1, help="runs of each sweep; the best is kept")
    parser.add_argument("--before", type=Path, help="also time the code in this checkout")
    parser.add_argument("--tasks", action="store_true", help="measure django-tasks workers")
    parser.add_argument(
        "--database-url",
        help="with --tasks: a PostgreSQL server, on which a fresh database is made (and "
        "dropped), e.g. postgres://postgres@127.0.0.1:5432/postgres; SQLite by default",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    return parser.parse_args(argv)


def block_name(args: argparse.Namespace) -> str:
    """The README block this run's figures go to."""
    if not args.tasks:
        return "sweep"
    return "sweep-tasks-postgres" if args.database_url else "sweep-tasks-sqlite"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    readme = readme_path(args, block_name(args))
    stamp = Stamp.take("benchmarks.sweep", argv, PACKAGES)
    report: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "grid": GRID,
        "pricing": PRICING,
        "load_at_start": list(os.getloadavg()),
        "runs": args.runs,
    }
    print(f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        folder = Path(tmp)
        if args.tasks and args.database_url:
            from benchmarks.server import fresh_postgres

            with fresh_postgres(args.database_url) as url:
                report["tasks"] = measure_tasks(url, folder)
        elif args.tasks:
            report["tasks"] = measure_tasks(None, folder)
        else:
            report["scales"] = [
                measure_scale(int(s), folder, args.runs, args.before)
                for s in args.scales.split(",")
            ]
    if "scales" in report and len(report["scales"]) > 1:
        first, last = report["scales"][0], report["scales"][-1]
        print("\n| growth from the first scale to the last | × |\n|---|---:|")
        for label, times in growth_rows(first, last):
            print(f"| {label} | {times} |")
    report["load_at_end"] = list(os.getloadavg())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    if readme is not None:
        name = block_name(args)
        write_block(readme, name, stamp.block(markdown(report), report["load_at_end"]))
        print(f"wrote its block {name} of {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
