"""The recommend benchmark: how long ``python -m simulator recommend`` takes over a corpus,
and what it recommends.

The search runs in a fresh process (:mod:`benchmarks.fresh`), from reading the files to
the answer; its goal is to stay within ``--max-seconds`` on two cores
(benchmarks/README.md, "Recommending a config").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT
from benchmarks.fresh import default_corpus, run_fresh, shown
from benchmarks.report import Stamp, add_readme_arguments, md_table, publish, readme_path

__all__ = ["README_BLOCKS", "main"]

PRICING = "claude-sonnet-4.5"
PACKAGES = ("tiktoken",)
README_BLOCKS = ("recommend",)
RESULTS = ROOT / "benchmarks" / "results" / "recommend.json"

# What a fresh process runs: one search, printed as one JSON line.
_CHILD = r"""
import json, sys
from benchmarks.fresh import Timer
from simulator.importers import load_files
from simulator.pricing import pricing_for
from simulator.recommend import recommend
job = json.loads(sys.argv[1])
with open(job["grid"], encoding="utf-8") as f:
    grid = json.load(f)
pricing = pricing_for(job["pricing"])
timer = Timer()
conversations = load_files(job["files"])
read = timer.elapsed()
result = recommend(
    conversations,
    pricing=pricing,
    grid=grid,
    max_seconds=job["max_seconds"],
    workers=job["workers"],
)
figures = timer.stop()
print(json.dumps({
    **figures,
    "read_s": read,
    "runs": len(conversations),
    "messages": sum(len(c.messages) for c in conversations),
    "configs": len(result.configs),
    "rounds": list(result.rounds),
    "timed_out": result.timed_out,
    "name": None if result.best is None else result.configs[result.best].name,
    "answer": result.to_dict(),
}))
"""


def measure(files: Sequence[Path], grid: Path, max_seconds: float, workers: int) -> dict[str, Any]:
    """One search in a fresh process: its figures, the load and the others' CPUs."""
    job = {
        "files": [str(f) for f in files],
        "grid": str(grid),
        "pricing": PRICING,
        "max_seconds": max_seconds,
        "workers": workers,
    }
    row = run_fresh(_CHILD, job, f"the search on {workers} process(es)")
    row["workers"] = workers
    return row


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def markdown(report: dict[str, Any]) -> list[str]:
    """The block's sections: the corpus, the search, the answer, the verdict."""
    row, limit = report["row"], report["max_seconds"]
    corpus = (
        f"The corpus: {', '.join(f'`{p}`' for p in report['files_shown'])}, "
        f"{row['runs']} runs, {row['messages']:,} messages; the coarse grid "
        f"`{report['grid_shown']}`; priced as {report['pricing']}; `--max-seconds "
        f"{limit:g}` on {row['workers']} processes; in a fresh process."
    )
    rounds = row["rounds"]
    ended = "the time limit" if row["timed_out"] else "no neighbour left"
    search = md_table(
        [
            *("processes", "read s", "search s", "total s", "CPU s", "configs", "rounds"),
            *("ended by", "load", "others"),
        ],
        [
            [
                row["workers"],
                f"{row['read_s']:.2f}",
                f"{row['seconds'] - row['read_s']:.1f}",
                f"**{row['seconds']:.1f}**",
                f"{row['cpu_s']:.1f}",
                row["configs"],
                f"{len(rounds)} ({' + '.join(str(n) for n in rounds)})",
                ended,
                f"{row['load']:.2f}",
                "-" if row["others"] is None else f"{row['others']:.2f}",
            ]
        ],
    )
    answer = row["answer"]
    budget = answer["budget"]
    within = (
        f"{budget['misses_per_100_calls']:g} misses and {budget['refetches_per_100_calls']:g} "
        f"re-fetches per 100 calls, runs at most {100 * budget['max_run_loss']:g}% above"
    )
    if row["name"] is None:
        found = f"Recommended: none (no config searched within the budget of {within} saves)."
    else:
        found = md_table(
            [
                *("recommended", "saved", "saved with recovery", "misses / 100 calls"),
                *("re-fetches / 100 calls", "worst run", "runs worse", "budget"),
            ],
            [
                [
                    row["name"],
                    _share(answer["saved"]),
                    _share(answer["saved_with_recovery"]),
                    f"{answer['misses_per_100_calls']:.1f}",
                    f"{answer['refetches_per_100_calls']:.1f}",
                    f"{100 * answer['run_loss']:+.1f}%",
                    f"{answer['runs_worse']} of {row['runs']}",
                    within,
                ]
            ],
        )
        found += f"\n\nThe config: `{json.dumps(answer['config'], sort_keys=True)}`."
    expected = answer.get("expected")
    if expected is not None:
        found += (
            f"\n\nExpected on runs not seen ({expected['folds']}-fold): saves "
            f"{_share(expected['saved_with_recovery'])} with recovery (folds "
            f"{_share(expected['low'])} to {_share(expected['high'])}), "
            f"{expected['misses_per_100_calls']:.1f} misses per 100 calls."
        )
    ceiling = answer.get("ceiling")
    if ceiling is not None:
        found += f" The ceiling: {_share(ceiling['saved'])}."
    verdict = "met" if row["seconds"] <= limit else "not met"
    goal = (
        f"Goal: the search within its `--max-seconds` ({limit:g} s) on {row['workers']} "
        f"processes, files read to answer: **{row['seconds']:.1f} s** ({verdict})."
    )
    return [corpus, search, found, goal]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    from simulator.recommend import DEFAULT_GRID

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.recommend", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "files",
        nargs="*",
        type=Path,
        help="recordings (files and folders) to search over (default: the recordings' "
        "mini-swe-agent folder)",
    )
    parser.add_argument(
        "--grid", type=Path, default=DEFAULT_GRID, help="default: the recommend grid"
    )
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=300.0,
        metavar="S",
        help="the search's time limit, as recommend takes it (default: 300)",
    )
    parser.add_argument("--workers", type=int, default=2, help="processes (default: 2)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    if not args.files:
        args.files = [default_corpus()]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.recommend", argv, PACKAGES)
    missing = [str(f) for f in args.files if not f.exists()]
    if missing:
        raise SystemExit(f"no such file or folder: {', '.join(missing)}")
    print(f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()}", flush=True)
    row = measure(args.files, args.grid, args.max_seconds, args.workers)
    report: dict[str, Any] = {
        "files": [str(f) for f in args.files],
        "files_shown": [shown(f) for f in args.files],
        "grid": str(args.grid),
        "grid_shown": shown(args.grid),
        "pricing": PRICING,
        "max_seconds": args.max_seconds,
        "row": row,
        "load_at_end": list(os.getloadavg()),
    }
    publish(markdown(report), report, out=args.out, readme=readme, block="recommend", stamp=stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
