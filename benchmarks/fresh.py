"""Timing a simulator command over a corpus in a fresh process, as the corpus benchmarks
(:mod:`benchmarks.corpus_sweep`, :mod:`benchmarks.recommend`) do.

What is timed, and what the block says about it, stays in each benchmark; this module
only starts the child, times it and names the files it read.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT

__all__ = ["Timer", "busy_seconds", "default_corpus", "run_fresh", "shown"]


def busy_seconds() -> float | None:
    """CPU seconds every process of the machine has used since boot (user, nice, system,
    irq, softirq, steal, from ``/proc/stat``), or ``None`` where there is no such file."""
    try:
        with open("/proc/stat", encoding="utf-8") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    used = sum(int(fields[i]) for i in (0, 1, 2, 5, 6, 7) if i < len(fields))
    return used / os.sysconf("SC_CLK_TCK")


class Timer:
    """Wall and CPU time from its creation, in the child: the CPU of this process and of
    the processes it waited for (its pool), and how many CPUs other processes kept busy
    meanwhile (``others``)."""

    def __init__(self) -> None:
        self._busy = busy_seconds()
        self._clock = time.perf_counter()
        self._cpu = time.process_time()
        self._children = self._children_cpu()

    @staticmethod
    def _children_cpu() -> float:
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return used.ru_utime + used.ru_stime

    def elapsed(self) -> float:
        """Wall seconds so far."""
        return time.perf_counter() - self._clock

    def stop(self) -> dict[str, Any]:
        """``seconds`` (wall), ``cpu_s`` and ``others`` (``None`` without ``/proc/stat``)."""
        seconds = self.elapsed()
        cpu = time.process_time() - self._cpu + self._children_cpu() - self._children
        after = busy_seconds()
        others = None
        if self._busy is not None and after is not None and seconds > 0:
            others = round(max(0.0, after - self._busy - cpu) / seconds, 2)
        return {"seconds": seconds, "cpu_s": cpu, "others": others}


def run_fresh(code: str, job: Mapping[str, Any], what: str) -> dict[str, Any]:
    """Run ``code`` in a fresh Python in the repository, with ``job`` as JSON in its
    ``sys.argv[1]``; the JSON object on its last line of output, with ``load``, the
    1-minute load average as it started. A child that fails stops the benchmark, naming
    ``what`` failed and quoting the end of its stderr.

    The child times its work with a :class:`Timer` and prints its figures as that JSON
    line. A fresh process per measurement means none profits from an earlier one's token
    counts.
    """
    load = round(os.getloadavg()[0], 2)
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(job)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    row["load"] = load
    return row


def default_corpus() -> Path:
    """The 43 shipped mini-swe-agent runs: the ``mini-swe-agent`` folder of the
    recordings."""
    from simulator.recordings_folder import recordings_dir

    return recordings_dir() / "mini-swe-agent"


def shown(path: Path) -> str:
    """``path`` as a block shows it: inside the repository or the recordings folder,
    relative to it."""
    from simulator.recordings_folder import recordings_dir

    for root, prefix in ((ROOT, ""), (recordings_dir(), "recordings/")):
        try:
            return prefix + str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            continue
    return path.name
