"""The held-out benchmark: does a config ``recommend`` picks on some runs do, on runs it
has not seen, what its printed estimate says?

Each corpus is split in two halves by run name; the config picked on one half is judged
on the other, both ways (benchmarks/README.md, "Held out").
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT
from benchmarks.fresh import shown
from benchmarks.report import Stamp, add_readme_arguments, md_table, publish, readme_path

__all__ = ["GAP_GOAL", "README_BLOCKS", "SAVING_GOALS", "main"]

PRICING = "claude-sonnet-4.5"
PACKAGES = ("tiktoken",)
README_BLOCKS = ("held-out",)
RESULTS = ROOT / "benchmarks" / "results" / "held_out.json"
GAP_GOAL = 0.05
"""The most the estimate may differ from what the other half shows (5 points)."""
SAVING_GOALS = {"claude-code-long": 0.20, "mini-swe-agent": 0.10}
"""The least the other half should show saved with recovery, by corpus folder."""


def split(names: Sequence[str]) -> tuple[list[int], list[int]]:
    """The two halves, as indexes into ``names``."""
    from simulator.recommend import fold_of

    fold = fold_of(names, 2)
    return [i for i, f in enumerate(fold) if f == 0], [i for i, f in enumerate(fold) if f == 1]


def one_way(
    fit: Sequence[Any], judge: Sequence[Any], *, max_seconds: float, workers: int
) -> dict[str, Any]:
    """Recommend on ``fit``, replay the answer on ``judge``: the estimate and the truth."""
    from simulator.corpus_sweep import replay_corpus
    from simulator.pricing import pricing_for
    from simulator.recommend import measure, recommend

    pricing = pricing_for(PRICING)
    started = time.perf_counter()
    result = recommend(fit, pricing=pricing, max_seconds=max_seconds, workers=workers)
    answer = result.to_dict()
    row: dict[str, Any] = {
        "fit_runs": len(fit),
        "judge_runs": len(judge),
        "search_s": round(time.perf_counter() - started, 1),
        "config": answer["config"],
        "fit_saved_with_recovery": answer["saved_with_recovery"],
        "fit_misses_per_100_calls": answer["misses_per_100_calls"],
        "expected": answer["expected"],
    }
    if answer["config"] is None:
        row.update(
            judge_saved_with_recovery=0.0, judge_misses_per_100_calls=0.0, judge_run_loss=0.0
        )
        return row
    replayed = replay_corpus(
        judge, [("answer", answer["config"])], pricing=pricing, workers=workers, baseline=True
    )
    assert replayed.baseline is not None
    m = measure(replayed.configs[0], replayed.baseline, range(len(judge)))
    row.update(
        judge_saved_with_recovery=round(m.saved, 6),
        judge_misses_per_100_calls=round(m.misses_per_100_calls, 4),
        judge_run_loss=round(m.run_loss, 6),
    )
    return row


def measure_corpus(folder: Path, *, max_seconds: float, workers: int) -> dict[str, Any]:
    from simulator.importers import load_files

    conversations = load_files([folder])
    first, second = split([c.name for c in conversations])
    halves = ([conversations[i] for i in first], [conversations[i] for i in second])
    ways = []
    for fit, judge in (halves, halves[::-1]):
        print(f"{folder.name}: fitting on {len(fit)} runs, judging on {len(judge)}", flush=True)
        ways.append(one_way(fit, judge, max_seconds=max_seconds, workers=workers))
    return {"corpus": shown(folder), "name": folder.name, "runs": len(conversations), "ways": ways}


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def markdown(report: dict[str, Any]) -> list[str]:
    """The block's sections: what was run, one row per corpus and direction, the verdict."""
    intro = (
        f"Each corpus split in two halves by run name; `recommend` with its defaults on one "
        f"half at {report['pricing']} prices (`--max-seconds {report['max_seconds']:g}`, "
        f"{report['workers']} processes), its config replayed on the other half; then the "
        "halves swapped."
    )
    rows = []
    verdicts = []
    for corpus in report["corpora"]:
        goal = SAVING_GOALS.get(corpus["name"])
        for n, way in enumerate(corpus["ways"]):
            expected = way["expected"] or {}
            estimate = expected.get("saved_with_recovery")
            truth = way["judge_saved_with_recovery"]
            gap = None if estimate is None else truth - estimate
            rows.append(
                [
                    f"`{corpus['corpus']}` half {n + 1} → half {2 - n}",
                    f"{way['fit_runs']} / {way['judge_runs']}",
                    _share(way["fit_saved_with_recovery"]),
                    _share(estimate),
                    f"{_share(expected.get('low'))} to {_share(expected.get('high'))}",
                    f"**{_share(truth)}**",
                    "-" if gap is None else f"{100 * gap:+.1f}",
                    f"{way['judge_misses_per_100_calls']:.1f}",
                    f"{100 * way['judge_run_loss']:+.1f}%",
                    f"{way['search_s']:.0f}",
                ]
            )
            met_gap = gap is not None and abs(gap) <= GAP_GOAL
            met_saving = goal is None or truth >= goal
            verdicts.append(
                f"`{corpus['corpus']}` half {n + 1} → half {2 - n}: estimate within "
                f"{100 * GAP_GOAL:g} points {'met' if met_gap else 'not met'}"
                + (
                    ""
                    if goal is None
                    else f", at least {100 * goal:g}% saved {'met' if met_saving else 'not met'}"
                )
            )
    table = md_table(
        [
            *("fitted → judged", "runs", "saved (fit)", "estimate", "estimate folds"),
            *("saved (judged)", "judged − estimate, points", "misses / 100 calls (judged)"),
            *("worst run (judged)", "search s"),
        ],
        rows,
    )
    return [intro, table, "Goals: " + "; ".join(verdicts) + "."]


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.held_out", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "folders",
        nargs="*",
        type=Path,
        help="corpora, one folder each (default: the recordings' mini-swe-agent and "
        "claude-code-long folders)",
    )
    parser.add_argument("--max-seconds", type=float, default=300.0, metavar="S")
    parser.add_argument("--workers", type=int, default=2, help="processes (default: 2)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    if not args.folders:
        from simulator.recordings_folder import recordings_dir

        args.folders = [recordings_dir() / name for name in SAVING_GOALS]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.held_out", argv, PACKAGES)
    missing = [str(f) for f in args.folders if not f.is_dir()]
    if missing:
        raise SystemExit(f"no such folder: {', '.join(missing)}")
    print(f"{os.cpu_count()} CPUs; load average at start {os.getloadavg()}", flush=True)
    report: dict[str, Any] = {
        "pricing": PRICING,
        "max_seconds": args.max_seconds,
        "workers": args.workers,
        "corpora": [
            measure_corpus(f, max_seconds=args.max_seconds, workers=args.workers)
            for f in args.folders
        ],
        "load_at_end": list(os.getloadavg()),
    }
    publish(markdown(report), report, out=args.out, readme=readme, block="held-out", stamp=stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
