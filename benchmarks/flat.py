"""Time per call against conversation length, with every call doing the same work.

The replay benchmark's calls differ in what they bring; here every round is alike and
the threshold is passed early, so the clear phase's cost can be read against length
alone: flat from the 100th call to the last.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.common import load_average, table
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block
from reduction_app.engine import (
    ApproxTokenCounter,
    ChatModelAgentState,
    InMemoryBackend,
    Message,
    ReductionConfig,
    TiktokenCounter,
    ToolCall,
    new,
)

__all__ = ["README_BLOCKS", "main", "run"]

THRESHOLD = 2_000
RESULT = "def handler(request):\n    return render(request, 'page.html')\n" * 32
"""2,016 characters of code, about 500 tokens."""
WINDOW = 50
"""Calls on each side of a position whose median is shown."""
COUNTERS = ("approx", "cl100k_base")
PACKAGES = ("tiktoken",)
README_BLOCKS = ("flat",)
"""The block of benchmarks/README.md that ``--readme`` writes."""


def _round(i: int) -> list[Message]:
    call = ToolCall(id=f"call_{i:05d}", name="grep", arguments=f'{{"pattern": "p{i}"}}')
    out = [Message.assistant(tool_calls=(call,)), Message.tool(RESULT, call.id, "grep")]
    if i % 10 == 9:
        out += [Message.assistant("Found it."), Message.user(f"Next question {i}?")]
    return out


def run(rounds: int, counter_name: str) -> list[float]:
    """Seconds per call, for ``rounds`` calls (a new middleware and a cold counter)."""
    counter: Any = (
        ApproxTokenCounter() if counter_name == "approx" else TiktokenCounter(counter_name)
    )
    mw = new(
        ReductionConfig(
            backend=InMemoryBackend(),
            skip_truncation=True,
            token_counter=counter,
            max_tokens_for_clear=THRESHOLD,
            clear_retention_suffix_limit=1,
        )
    )
    carried: list[Message] = [Message.system("You are a coding agent."), Message.user("Go.")]
    times = []
    for i in range(rounds):
        state = ChatModelAgentState(messages=carried + _round(i))
        start = time.perf_counter()
        out = mw.before_model_rewrite_state(state)
        times.append(time.perf_counter() - start)
        carried = list(out.messages)
        # Dropped here, not when the next call's result is bound inside the timed window:
        # freeing the last output list is the agent's cost, not the next call's.
        del out
    return times


def _medians(times: Sequence[float], positions: Sequence[int]) -> list[float]:
    return [statistics.median(times[max(0, p - WINDOW) : p + WINDOW]) for p in positions]


def context_length(call: int) -> int:
    """Messages the middleware is handed at call ``call`` (counted from 0)."""
    return 2 + sum(len(_round(i)) for i in range(call + 1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3, help="runs; the median per call is shown")
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.flat", argv, PACKAGES)
    last = args.rounds - WINDOW
    positions = sorted({p for p in (100, 250, 500, 1000, 1500, last) if 100 <= p <= last})
    if not positions:
        parser.error(f"--rounds must be at least {100 + WINDOW}")
    title = (
        f"{args.rounds:,} calls, the same work each; median µs per call around each call "
        f"(±{WINDOW}), median of {args.runs} runs"
    )
    print(f"{title}:")
    header = ["counter", *(f"call {p:,}" for p in positions), "last / 100th"]
    rows = []
    lengths = [context_length(p) for p in positions]
    growth = {}
    for name in COUNTERS:
        per_run = []
        for _ in range(args.runs):
            gc.collect()
            per_run.append(_medians(run(args.rounds, name), positions))
        medians = [statistics.median(col) for col in zip(*per_run, strict=True)]
        rows.append(
            [name, *(f"{1e6 * m:.0f}" for m in medians), f"{medians[-1] / medians[0]:.2f}x"]
        )
        added = lengths[-1] - lengths[0]
        growth[name] = 1e9 * (medians[-1] - medians[0]) / added if added else 0.0
    print(table(header, rows))
    messages = 2 + sum(len(_round(i)) for i in range(args.rounds))
    print(f"(the conversation ends with {messages:,} messages)", file=sys.stderr)
    if readme is not None:
        sentence = (
            f"The conversation ends with {messages:,} messages; the context holds "
            + " and ".join(f"{n:,}" for n in (lengths[0], lengths[-1]))
            + f" messages at calls {positions[0]:,} and {positions[-1]:,}. From one to the "
            "other, the median time per call moved by "
            + " and ".join(f"{g:+.1f} ns ({n})" for n, g in growth.items())
            + " for each message added to the list."
        )
        block = stamp.block([f"{title}:", md_table(header, rows), sentence], load_average())
        write_block(readme, README_BLOCKS[0], block)
        print(f"wrote its block of {readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
