"""The truncation benchmark: what the truncation phase costs on one very large tool
output, buffered and streamed, next to one copy of the output and to consuming the
stream without the middleware.

The output is real text, ASCII and not (benchmarks/README.md, "Truncation of a 50 MB
output", says how each contender is timed).
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import engine_revision, load_average, machine, table, versions
from benchmarks.corpus import django_root
from benchmarks.report import (
    Stamp,
    add_readme_arguments,
    md_table,
    readme_path,
    verdict,
    write_block,
)
from reduction_app.engine import (
    InMemoryBackend,
    ReductionConfig,
    ReductionMiddleware,
    ToolArgument,
    ToolContext,
    ToolResult,
    new,
)
from reduction_app.engine.inspect import truncation_file_path

__all__ = [
    "README_BLOCKS",
    "consume_count",
    "consume_join",
    "enhanced_source",
    "main",
    "output_text",
    "str_source",
]

SIZE = 50_000_000
"""Bytes of UTF-8 in the output: 50 MB."""
CHUNKS = (65_536, 4_096)
"""Characters per streamed chunk: 64 KiB and 4 KiB of ASCII."""
KINDS = ("ascii", "non-ascii")
RUNS = 5
RESULTS = Path(__file__).parent / "results" / "truncation.json"
BUFFERED_GOAL = 2.0
"""Truncating a buffered output costs at most this many copies of it."""
STREAM_GOAL = 0.10
"""Streaming truncation adds at most this share to consuming the stream."""
ARGUMENTS = '{"command": "make all"}'
PACKAGES = ("msgspec",)
README_BLOCKS = ("truncation",)
"""The block of benchmarks/README.md that ``--readme`` writes."""


# The output -----------------------------------------------------------------------------


def _files(kind: str) -> Iterator[tuple[str, str]]:
    """The files an output of ``kind`` is made of, in sorted order: (shown path, text)."""
    root = django_root()
    for path in sorted(root.rglob("*.py" if kind == "ascii" else "*.po")):
        text = path.read_text(encoding="utf-8")
        if text.isascii() if kind == "ascii" else max(map(ord, text), default=0) <= 0xFFFF:
            yield path.relative_to(root.parent).as_posix(), text


def output_text(size: int, kind: str) -> str:
    """A tool output of at most ``size`` UTF-8 bytes (exactly ``size`` characters for
    ``ascii``): real files laid end to end, as a build log or a ``cat`` of a tree."""
    pieces: list[str] = []
    total = 0
    for shown, text in itertools.cycle(_files(kind)):
        piece = f"==> {shown} <==\n{text}\n"
        pieces.append(piece)
        total += len(piece) if kind == "ascii" else len(piece.encode("utf-8"))
        if total >= size:
            break
    else:
        raise RuntimeError(f"no {kind} files under {django_root()}")
    joined = "".join(pieces)
    if kind == "ascii":
        return joined[:size]
    # Cut at a byte boundary; a character split by the cut is dropped.
    return joined.encode("utf-8")[:size].decode("utf-8", errors="ignore")


# Timing ---------------------------------------------------------------------------------

Thunk = Callable[[], object]


def interleaved(makers: dict[str, Callable[[], Thunk]], runs: int) -> dict[str, list[float]]:
    """Seconds per run of each contender. Each run sets up every contender (untimed), then
    times one call of it after a full collection; contenders alternate within a run."""
    times: dict[str, list[float]] = {name: [] for name in makers}
    for _ in range(runs):
        for name, make in makers.items():
            thunk = make()
            gc.collect()
            start = time.perf_counter()
            result = thunk()
            times[name].append(time.perf_counter() - start)
            # Freed after the clock stops, on every side alike.
            del result, thunk
    return times


def _median_ms(seconds: list[float]) -> float:
    return 1000 * statistics.median(seconds)


# Buffered ---------------------------------------------------------------------------------


def _middleware(
    max_length: int | None, text_raw: bool = False
) -> tuple[ReductionMiddleware, InMemoryBackend]:
    backend = InMemoryBackend()
    # 0 is the engine's default (zero_means_default).
    config = ReductionConfig(
        backend=backend, max_length_for_trunc=max_length or 0, trunc_stream_text_raw=text_raw
    )
    return new(config), backend


def limit_of(max_length: int | None) -> int:
    """The ``max_length_for_trunc`` in force."""
    return _middleware(max_length)[0].config.max_length_for_trunc


_CALLS = iter(range(1, sys.maxsize))


def _context() -> ToolContext:
    """A new call id per call, as a model gives: no call finds an earlier offload."""
    return ToolContext(name="run_build", call_id=f"call_{next(_CALLS):06d}")


def _invokable(text: str, max_length: int | None) -> Thunk:
    mw, _ = _middleware(max_length)
    wrapped = mw.wrap_invokable_tool_call(lambda arguments: text, _context())
    return lambda: wrapped(ARGUMENTS)


def _enhanced_invokable(result: ToolResult, max_length: int | None) -> Thunk:
    mw, _ = _middleware(max_length)
    wrapped = mw.wrap_enhanced_invokable_tool_call(lambda argument: result, _context())
    return lambda: wrapped(ToolArgument(text=ARGUMENTS))


def check_buffered(text: str, max_length: int | None) -> None:
    """The wrappers truncate and offload the whole output (checked once, untimed)."""
    mw, backend = _middleware(max_length)
    notice = mw.wrap_invokable_tool_call(lambda arguments: text, _context())(ARGUMENTS)
    path = truncation_file_path(notice)
    if path is None or backend.read(path) != text or len(notice) >= len(text):
        raise AssertionError("the invokable wrapper did not truncate and offload the output")


def measure_buffered(text: str, runs: int, max_length: int | None) -> dict[str, list[float]]:
    check_buffered(text, max_length)
    result = ToolResult.of_text(text)
    return interleaved(
        {
            "one_copy": lambda: lambda: text + "\n",
            "utf8_encode": lambda: lambda: text.encode("utf-8"),
            "invokable": lambda: _invokable(text, max_length),
            "enhanced_invokable": lambda: _enhanced_invokable(result, max_length),
        },
        runs,
    )


# Streamed ---------------------------------------------------------------------------------


def str_source(text: str, chunk: int) -> Iterator[str]:
    for i in range(0, len(text), chunk):
        yield text[i : i + chunk]


def enhanced_source(text: str, chunk: int) -> Iterator[ToolResult]:
    for i in range(0, len(text), chunk):
        yield ToolResult.of_text(text[i : i + chunk])


def _texts(stream: Iterator[Any], enhanced: bool) -> Iterator[str]:
    if not enhanced:
        return stream
    return (p.text for c in stream if c is not None for p in c.parts if p.type == "text")


def consume_join(stream: Iterator[Any], enhanced: bool) -> str:
    """Keep everything the stream delivers, joined: what an agent does to build the message."""
    return "".join(_texts(stream, enhanced))


def consume_count(stream: Iterator[Any], enhanced: bool) -> int:
    """Read the stream to its end, counting characters and keeping nothing."""
    return sum(map(len, _texts(stream, enhanced)))


Consumer = Callable[[Iterator[Any], bool], object]


def _wrapped_stream(
    text: str, chunk: int, enhanced: bool, max_length: int | None, text_raw: bool = False
) -> tuple[Callable[[], Iterator[Any]], InMemoryBackend]:
    mw, backend = _middleware(max_length, text_raw)
    ctx = _context()
    if enhanced:
        enhanced_wrapped = mw.wrap_enhanced_streamable_tool_call(
            lambda argument: enhanced_source(text, chunk), ctx
        )
        return lambda: iter(enhanced_wrapped(ToolArgument(text=ARGUMENTS))), backend
    wrapped = mw.wrap_streamable_tool_call(lambda arguments: str_source(text, chunk), ctx)
    return lambda: iter(wrapped(ARGUMENTS)), backend


def check_stream(
    text: str, chunk: int, enhanced: bool, max_length: int | None, text_raw: bool = False
) -> None:
    """The stream is cut at the limit and the whole output offloaded (checked once, untimed)."""
    open_stream, backend = _wrapped_stream(text, chunk, enhanced, max_length, text_raw)
    seen = consume_join(open_stream(), enhanced)
    path = truncation_file_path(seen)
    limit = limit_of(max_length)
    if path is None or not seen.startswith(text[:limit]) or len(seen) >= len(text):
        raise AssertionError("the stream was not cut at the limit")
    stored = backend.read(path)
    if enhanced and not text_raw:
        stored = "".join(p["text"] for p in json.loads(stored))
    if stored != text:
        raise AssertionError("the offload does not hold the whole stream")


def measure_stream(
    text: str,
    chunk: int,
    enhanced: bool,
    runs: int,
    max_length: int | None,
    text_raw: bool = False,
) -> dict[str, list[float]]:
    check_stream(text, chunk, enhanced, max_length, text_raw)
    source = enhanced_source if enhanced else str_source

    def raw(consume: Consumer) -> Callable[[], Thunk]:
        return lambda: lambda: consume(source(text, chunk), enhanced)

    def wrapped(consume: Consumer) -> Callable[[], Thunk]:
        def make() -> Thunk:
            open_stream, _ = _wrapped_stream(text, chunk, enhanced, max_length, text_raw)
            return lambda: consume(open_stream(), enhanced)

        return make

    return interleaved(
        {
            "raw_join": raw(consume_join),
            "wrapped_join": wrapped(consume_join),
            "raw_count": raw(consume_count),
            "wrapped_count": wrapped(consume_count),
        },
        runs,
    )


# Driving and reporting ----------------------------------------------------------------------


@dataclass(frozen=True)
class Args:
    size: int
    kinds: tuple[str, ...]
    chunks: tuple[int, ...]
    runs: int
    max_length: int | None
    out: Path
    readme: Path | None


def _parse(argv: Sequence[str] | None) -> Args:
    parser = argparse.ArgumentParser(
        description="Time the truncation phase on one very large tool output."
    )
    parser.add_argument("--size", type=int, default=SIZE, help="bytes of UTF-8 in the output")
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument(
        "--chunks", type=int, nargs="+", default=list(CHUNKS), help="characters per chunk"
    )
    parser.add_argument("--runs", type=int, default=RUNS, help="runs per figure; the median")
    parser.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="max_length_for_trunc (default: the engine's default)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    ns = parser.parse_args(argv)
    return Args(
        size=ns.size,
        kinds=tuple(ns.kinds),
        chunks=tuple(ns.chunks),
        runs=ns.runs,
        max_length=ns.max_length,
        out=ns.out,
        readme=readme_path(ns, *README_BLOCKS),
    )


def _overhead(raw: list[float], wrapped: list[float]) -> float:
    return statistics.median(wrapped) / statistics.median(raw) - 1


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    stamp = Stamp.take("benchmarks.truncation", argv, PACKAGES)
    host = machine()
    limit = limit_of(args.max_length)
    outputs: dict[str, Any] = {}
    for kind in args.kinds:
        print(f"building the {kind} output...", file=sys.stderr)
        text = output_text(args.size, kind)
        figures: dict[str, Any] = {
            "chars": len(text),
            "utf8_bytes": len(text.encode("utf-8")),
            "bytes_in_memory": sys.getsizeof(text),
        }
        print(f"{kind}: buffered...", file=sys.stderr)
        buffered = measure_buffered(text, args.runs, args.max_length)
        copy = statistics.median(buffered["one_copy"])
        figures["buffered"] = {
            name: {
                "median_ms": _median_ms(times),
                "runs_ms": [1000 * t for t in times],
                "copies": statistics.median(times) / copy,
            }
            for name, times in buffered.items()
        }
        streams: dict[str, Any] = {}
        # The opt-in trunc_stream_text_raw (docs/behaviour.md §3.10) as a third wrapper.
        for mode in ("str", "enhanced", "enhanced-raw"):
            enhanced, text_raw = mode != "str", mode == "enhanced-raw"
            for chunk in args.chunks:
                label = f"{mode}/{chunk}"
                print(f"{kind}: stream {label}...", file=sys.stderr)
                times = measure_stream(text, chunk, enhanced, args.runs, args.max_length, text_raw)
                streams[label] = {
                    "wrapper": (
                        "wrap_streamable_tool_call"
                        if not enhanced
                        else "wrap_enhanced_streamable_tool_call"
                        + (" (trunc_stream_text_raw)" if text_raw else "")
                    ),
                    "chunk_chars": chunk,
                    "chunks": -(-len(text) // chunk),
                    **{f"{n}_median_ms": _median_ms(t) for n, t in times.items()},
                    "runs_ms": {n: [1000 * x for x in t] for n, t in times.items()},
                    "join_overhead": _overhead(times["raw_join"], times["wrapped_join"]),
                    "count_overhead": _overhead(times["raw_count"], times["wrapped_count"]),
                }
        figures["streams"] = streams
        outputs[kind] = figures
        del text
    host["load_average_at_end"] = load_average()
    report = {
        "machine": host,
        "engine": engine_revision(),
        "versions": versions(PACKAGES),
        "size_utf8_bytes": args.size,
        "max_length_for_trunc": limit,
        "runs": args.runs,
        "goals": {"buffered_copies": BUFFERED_GOAL, "stream_overhead": STREAM_GOAL},
        "outputs": outputs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_report(report)
    print(f"\nwrote {args.out}")
    if args.readme is not None:
        block = stamp.block(markdown(report), host["load_average_at_end"])
        write_block(args.readme, README_BLOCKS[0], block)
        print(f"wrote its block of {args.readme}")
    return 0


def _pct(x: float) -> str:
    return f"{100 * x:+.1f}%"


def _summary(report: dict[str, Any]) -> str:
    return (
        f"One tool output of at most {report['size_utf8_bytes']:,} UTF-8 bytes; "
        f"max_length_for_trunc={report['max_length_for_trunc']:,}; InMemoryBackend; median "
        f"of {report['runs']} runs, garbage collector on."
    )


def _buffered(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    rows = []
    for kind, f in report["outputs"].items():
        b = f["buffered"]
        rows.append(
            [
                kind,
                f"{f['chars']:,}",
                f"{f['utf8_bytes']:,}",
                f"{b['one_copy']['median_ms']:.1f}",
                f"{b['utf8_encode']['median_ms']:.1f}",
                f"{b['invokable']['median_ms']:.2f}",
                f"{b['invokable']['copies']:.2f}x",
                f"{b['enhanced_invokable']['median_ms']:.2f}",
                f"{b['enhanced_invokable']['copies']:.2f}x",
                f"<= {report['goals']['buffered_copies']:g}x",
            ]
        )
    headers = [
        "output",
        "chars",
        "UTF-8 bytes",
        "one copy ms",
        "UTF-8 encode ms",
        "invokable ms",
        "/ copy",
        "enhanced ms",
        "/ copy",
        "goal",
    ]
    return headers, rows


def _wrapper(stream: dict[str, Any]) -> str:
    return str(stream["wrapper"]).removeprefix("wrap_").replace("_tool_call", "")


def _streamed(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    rows = []
    for kind, f in report["outputs"].items():
        for s in f["streams"].values():
            rows.append(
                [
                    kind,
                    _wrapper(s),
                    f"{s['chunk_chars']:,}",
                    f"{s['chunks']:,}",
                    f"{s['raw_join_median_ms']:.1f}",
                    f"{s['wrapped_join_median_ms']:.1f}",
                    _pct(s["join_overhead"]),
                    f"{s['raw_count_median_ms']:.1f}",
                    f"{s['wrapped_count_median_ms']:.1f}",
                    _pct(s["count_overhead"]),
                ]
            )
    headers = [
        "output",
        "wrapper",
        "chunk chars",
        "chunks",
        "raw join ms",
        "wrapped join ms",
        "added",
        "raw count ms",
        "wrapped count ms",
        "added",
    ]
    return headers, rows


def _streamed_title(report: dict[str, Any]) -> str:
    goal = report["goals"]["stream_overhead"]
    return (
        "Streamed: ms to read the whole stream, without the middleware (raw) and through "
        f"it; what the middleware adds (goal <= {100 * goal:g}%)"
    )


def print_report(report: dict[str, Any]) -> None:
    m = report["machine"]
    print(
        f"\n{_summary(report)}\nMachine: {m['cpus']} CPUs, Python "
        f"{m['python']}; load average (1, 5, 15 min) {m['load_average_at_start']} at the "
        f"start, {m['load_average_at_end']} at the end.\n"
    )
    print("Buffered: ms from the tool's return to the wrapper's, against one copy (text + '\\n')")
    print(table(*_buffered(report)))
    print(f"\n{_streamed_title(report)}")
    print(table(*_streamed(report)))


def _spread(values: list[float], shown: Callable[[float], str]) -> str:
    low, high = shown(min(values)), shown(max(values))
    return low if low == high else f"{low} to {high}"


def goals(report: dict[str, Any]) -> list[str]:
    """One sentence per kind of figure: its range over the rows, against its goal."""
    outputs = report["outputs"].values()
    copies = report["goals"]["buffered_copies"]
    buffered = [
        f["buffered"][w]["copies"] for f in outputs for w in ("invokable", "enhanced_invokable")
    ]
    lines = [
        f"Buffered, either wrapper: **{_spread(buffered, lambda x: f'{x:.2f}x')}** one copy "
        f"(goal ≤ {copies:g}x: {verdict(buffered, copies)})."
    ]
    goal = report["goals"]["stream_overhead"]
    for wrapper in dict.fromkeys(_wrapper(s) for f in outputs for s in f["streams"].values()):
        streams = [s for f in outputs for s in f["streams"].values() if _wrapper(s) == wrapper]
        for consumer, what in (("join", "keeps the stream"), ("count", "keeps nothing")):
            added = [s[f"{consumer}_overhead"] for s in streams]
            lines.append(
                f"`{wrapper}`, read by a consumer that {what}: **{_spread(added, _pct)}** "
                f"(goal ≤ {100 * goal:g}%: {verdict(added, goal)})."
            )
    return lines


def markdown(report: dict[str, Any]) -> list[str]:
    """The figures as the README shows them: both tables, then the goals."""
    return [
        _summary(report),
        "Buffered: ms from the tool's return to the wrapper's, against one copy "
        '(`text + "\\n"`):',
        md_table(*_buffered(report)),
        f"{_streamed_title(report).replace('<=', '≤')}:",
        md_table(*_streamed(report), left=2),
        "\n".join(f"- {line}" for line in goals(report)),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
