"""The corpus sweep benchmark: how long ``python -m simulator sweep`` takes over a corpus.

Each row runs in a fresh process, from reading the files to the corpus sums, on one and
then several processes, and the rows' sums are hashed to show they agree
(benchmarks/README.md, "Sweeping a corpus").
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT
from benchmarks.fresh import default_corpus, run_fresh, shown
from benchmarks.report import Stamp, add_readme_arguments, md_table, publish, readme_path

__all__ = ["GOAL_SECONDS", "README_BLOCKS", "main"]

GRID = ROOT / "simulator" / "grids" / "coding.json"
PRICING = "gpt-4o"
GOAL_SECONDS = 180.0
"""The whole sweep, files read to corpus sums, on two processes."""
PACKAGES = ("tiktoken",)
README_BLOCKS = ("corpus_sweep",)
RESULTS = ROOT / "benchmarks" / "results" / "corpus_sweep.json"

# What a fresh process runs: one sweep, printed as one JSON line.
_CHILD = r"""
import hashlib, json, sys
from benchmarks.fresh import Timer
from simulator.corpus_sweep import corpus_sweep
from simulator.importers import load_files
from simulator.pricing import pricing_for
job = json.loads(sys.argv[1])
with open(job["grid"], encoding="utf-8") as f:
    grid = json.load(f)
pricing = pricing_for(job["pricing"])
timer = Timer()
conversations = load_files(job["files"])
read = timer.elapsed()
result = corpus_sweep(conversations, grid, pricing=pricing, workers=job["workers"])
figures = timer.stop()
text = json.dumps(result.to_dict(), sort_keys=True)
print(json.dumps({
    **figures,
    "read_s": read,
    "runs": len(conversations),
    "messages": sum(len(c.messages) for c in conversations),
    "combinations": len(result.combinations),
    "digest": hashlib.sha256(text.encode()).hexdigest()[:16],
}))
"""


def measure(files: Sequence[Path], grid: Path, workers: int) -> dict[str, Any]:
    """One sweep in a fresh process: its figures, the load and the others' CPUs."""
    job = {
        "files": [str(f) for f in files],
        "grid": str(grid),
        "pricing": PRICING,
        "workers": workers,
    }
    row = run_fresh(_CHILD, job, f"the sweep on {workers} process(es)")
    row["workers"] = workers
    return row


def markdown(report: dict[str, Any]) -> list[str]:
    """The block's sections: the corpus, the table, the verdict."""
    rows = report["rows"]
    first = rows[0]
    corpus = (
        f"The corpus: {', '.join(f'`{p}`' for p in report['files_shown'])}, "
        f"{first['runs']} runs, {first['messages']:,} messages; the grid "
        f"`{report['grid_shown']}`, {first['combinations']} combinations "
        f"({first['combinations'] * first['runs']:,} replays, and no reduction on each "
        f"run); priced as {report['pricing']}; every row in a fresh process."
    )
    table = md_table(
        ["processes", "read s", "sweep s", "total s", "CPU s", "load", "others"],
        [
            [
                r["workers"],
                f"{r['read_s']:.2f}",
                f"{r['seconds'] - r['read_s']:.1f}",
                f"**{r['seconds']:.1f}**",
                f"{r['cpu_s']:.1f}",
                f"{r['load']:.2f}",
                "-" if r["others"] is None else f"{r['others']:.2f}",
            ]
            for r in rows
        ],
    )
    two = [r for r in rows if r["workers"] == 2]
    if two:
        verdict = "met" if two[0]["seconds"] <= GOAL_SECONDS else "not met"
        goal = (
            f"Goal ≤ {GOAL_SECONDS:.0f} s for the whole sweep on 2 processes: "
            f"**{two[0]['seconds']:.1f} s** ({verdict})."
        )
    else:
        goal = f"Goal ≤ {GOAL_SECONDS:.0f} s on 2 processes: not measured (no row on 2)."
    same = len({r["digest"] for r in rows}) == 1
    return [corpus, table, f"{goal} Same corpus sums in every row: {'yes' if same else 'NO'}."]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.corpus_sweep", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        help="recordings (files and folders) to sweep (default: the recordings' "
        "mini-swe-agent folder)",
    )
    parser.add_argument("--grid", type=Path, default=GRID, help="default: the coding grid")
    parser.add_argument(
        "--workers",
        default=f"1,{os.cpu_count() or 1}",
        help="numbers of processes to time, comma-separated (default: 1 and one per CPU)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    if not args.files:
        args.files = [default_corpus()]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.corpus_sweep", argv, PACKAGES)
    missing = [str(f) for f in args.files if not f.exists()]
    if missing:
        raise SystemExit(f"no such file or folder: {', '.join(missing)}")
    print(f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()}", flush=True)
    rows = []
    for workers in (int(w) for w in args.workers.split(",")):
        row = measure(args.files, args.grid, workers)
        rows.append(row)
        print(
            f"{workers} process(es): {row['seconds']:.1f} s ({row['read_s']:.2f} s reading "
            f"{row['runs']} runs), {row['combinations']} combinations, CPU {row['cpu_s']:.1f} s, "
            f"load {row['load']}, others {row['others']}",
            flush=True,
        )
    report: dict[str, Any] = {
        "files": [str(f) for f in args.files],
        "files_shown": [shown(f) for f in args.files],
        "grid": str(args.grid),
        "grid_shown": shown(args.grid),
        "pricing": PRICING,
        "rows": rows,
        "load_at_end": list(os.getloadavg()),
    }
    publish(
        markdown(report), report, out=args.out, readme=readme, block="corpus_sweep", stamp=stamp
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
