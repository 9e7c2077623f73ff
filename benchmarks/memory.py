"""The memory benchmark: how much memory a 1 M-token conversation takes to parse from
JSON and to run through the clear phase, next to the size of its JSON.

Each measurement runs in a fresh process, by ``tracemalloc`` and by resident set size,
from bytes as the API holds a body (and from text, the old way, for comparison):
benchmarks/README.md, "Memory of a 1 M-token conversation".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, engine_revision, load_average, machine, table, versions
from benchmarks.corpus import build_conversation, conversation_chars, dump_openai
from benchmarks.report import (
    Stamp,
    add_readme_arguments,
    md_table,
    readme_path,
    verdict,
    write_block,
)
from reduction_app.engine import (
    ChatModelAgentState,
    InMemoryBackend,
    Message,
    ReductionConfig,
    TiktokenCounter,
    ToolCall,
    formats,
    get_token_counter,
    messages_from_openai,
    new,
)
from reduction_app.engine.inspect import is_clear_placeholder

__all__ = ["README_BLOCKS", "build", "main", "measure_child"]

TOKENS = 1_000_000
"""cl100k_base tokens the conversation holds at least: 1 M."""
THRESHOLD = 100_000
COUNTERS = ("approx", "cl100k_base")
INPUTS = ("bytes", "str")
"""How the JSON is held and decoded: bytes through ``formats.json_loads`` (the API and
the importers), or a ``str`` through ``json.loads`` (the way before, for comparison)."""
CHARS_PER_TOKEN = 4.8
"""The corpus's characters per cl100k token (4,167,663 / 867,520): the first guess of
how many characters make ``--tokens``; the build grows until the count is reached."""
GOAL = 3.0
"""Peak memory of parsing and clearing, at most this many times the JSON's size."""
RESULTS = Path(__file__).parent / "results" / "memory.json"
MB = 1_000_000
PACKAGES = ("tiktoken", "msgspec")
README_BLOCKS = ("memory",)
"""The block of benchmarks/README.md that ``--readme`` writes."""


# The conversation -------------------------------------------------------------------------


def build(tokens: int, min_messages: int) -> tuple[list[Message], int]:
    """The corpus grown to at least ``tokens`` cl100k_base tokens, and its count."""
    min_chars = int(tokens * CHARS_PER_TOKEN)
    while True:
        messages = build_conversation(min_messages, min_chars)
        counted = TiktokenCounter("cl100k_base")(messages, [])
        if counted >= tokens:
            return messages, counted
        min_chars = int(min_chars * tokens / counted * 1.01) + 1


ENCODINGS = {"utf-8": False, "ascii": True}
"""The JSON as most clients send it (``ensure_ascii=False``), and with every non-ASCII
character escaped (``ensure_ascii=True``, Python's default)."""


def dump(messages: Sequence[Message], *, ensure_ascii: bool = False) -> bytes:
    """Compact OpenAI chat JSON, UTF-8."""
    text = json.dumps(dump_openai(messages), ensure_ascii=ensure_ascii, separators=(",", ":"))
    return text.encode("utf-8")


# One measurement, in a fresh process ------------------------------------------------------


def _read(path: Path, source: str) -> bytes | str:
    """The JSON document as a caller holds it."""
    return path.read_bytes() if source == "bytes" else path.read_text(encoding="utf-8")


def _decode(document: bytes | str) -> Any:
    if isinstance(document, bytes):
        return formats.json_loads(document)
    return json.loads(document)


def _warm_up(counter: str, threshold: int, source: str) -> None:
    """Run the whole path once on a small conversation: lazy imports, the encoding."""
    small = [
        Message.system("You are a coding agent."),
        Message.user("Read the file."),
        Message.assistant(
            "", tool_calls=(ToolCall(id="w1", name="read_file", arguments='{"path": "a"}'),)
        ),
        Message.tool("x" * 4000, "w1"),
        Message.assistant("Done."),
    ]
    from reduction_app.engine import messages_to_openai

    text = json.dumps(messages_to_openai(small))
    parsed = messages_from_openai(_decode(text.encode() if source == "bytes" else text))
    config = ReductionConfig(
        backend=InMemoryBackend(), max_tokens_for_clear=min(threshold, 100), token_counter=counter
    )
    new(config).before_model_rewrite_state(ChatModelAgentState(messages=parsed))


def _rss() -> tuple[int, int]:
    """The resident set size now and at its peak, in bytes (``VmRSS``, ``VmHWM``).

    Not ``getrusage``: on Linux a child's ``ru_maxrss`` starts at its parent's peak (it
    survives fork and exec), so a fresh process started by a large parent shows no growth.
    ``VmHWM`` belongs to the process's own address space, new at exec.
    """
    found = {}
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) * 1024
    return found["VmRSS"], found["VmHWM"]


def _reset_rss_peak() -> None:
    """Bring ``VmHWM`` down to ``VmRSS`` (Linux 4.0 and later)."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
        refs.write("5")


def rss_measurable() -> bool:
    """Whether this system shows a process's resident set size and lets it reset the peak."""
    try:
        _rss()
        _reset_rss_peak()
    except (OSError, KeyError):
        return False
    return True


def _clear(messages: list[Message], counter: str, threshold: int) -> tuple[int, int]:
    """One clear call over ``messages``: results cleared, files offloaded."""
    backend = InMemoryBackend()
    config = ReductionConfig(backend=backend, max_tokens_for_clear=threshold, token_counter=counter)
    state = new(config).before_model_rewrite_state(ChatModelAgentState(messages=messages))
    cleared = sum(
        1
        for m in state.messages
        if isinstance(m, Message) and m.role == "tool" and is_clear_placeholder(m.content)
    )
    return cleared, len(backend)


def measure_child(
    path: Path, counter: str, threshold: int, how: str, source: str = "bytes"
) -> dict[str, Any]:
    """Read, parse and clear the conversation in ``path``, held as ``source`` (``bytes`` or
    ``str``), measuring ``how`` (``tracemalloc`` or ``rss``); meant for a fresh process
    (see :func:`_run_child`)."""
    _warm_up(counter, threshold, source)
    get_token_counter(counter)  # the shared instance, as a config naming it gets
    gc.collect()
    figures: dict[str, Any] = {"how": how, "counter": counter, "input": source}
    if how == "rss":
        _reset_rss_peak()
        start, _ = _rss()
        t0 = time.perf_counter()
        document = _read(path, source)
        t1 = time.perf_counter()
        with_document, read_peak = _rss()
        _reset_rss_peak()
        messages = messages_from_openai(_decode(document))
        t2 = time.perf_counter()
        cleared, files = _clear(messages, counter, threshold)
        t3 = time.perf_counter()
        _, peak = _rss()
        figures |= {
            "rss_document": with_document - start,
            "rss_read_peak": read_peak - start,
            "rss_peak_above_document": peak - with_document,
            "rss_peak_with_document": peak - start,
            "read_s": t1 - t0,
            "parse_s": t2 - t1,
            "clear_s": t3 - t2,
        }
    else:
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
        document = _read(path, source)
        current, peak = tracemalloc.get_traced_memory()
        with_document = current
        # Reading a str briefly holds the file's bytes, and CPython's decoder a narrower
        # draft, beside the text: the reading's cost, so the peaks below start from the
        # document alone.
        figures |= {"document_in_memory": current - start, "read_peak": peak - start}
        tracemalloc.reset_peak()
        messages = messages_from_openai(_decode(document))
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
        figures |= {"parse_peak": peak - with_document, "parsed_kept": current - with_document}
        cleared, files = _clear(messages, counter, threshold)
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        figures |= {
            "peak_above_document": peak - with_document,
            "peak_with_document": peak - start,
            "kept_at_end": current - start,
        }
    figures |= {"messages": len(messages), "results_cleared": cleared, "offloaded_files": files}
    return figures


def _run_child(path: Path, counter: str, threshold: int, how: str, source: str) -> dict[str, Any]:
    """:func:`measure_child` in a fresh interpreter that imports this checkout's code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.memory",
            "--child",
            str(path),
            "--counters",
            counter,
            "--threshold",
            str(threshold),
            "--how",
            how,
            "--inputs",
            source,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


# Driving and reporting ----------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Measure the memory of parsing and clearing a 1 M-token conversation."
    )
    parser.add_argument("--tokens", type=int, default=TOKENS, help="cl100k_base tokens at least")
    parser.add_argument("--min-messages", type=int, default=1000)
    parser.add_argument("--threshold", type=int, default=THRESHOLD, help="max_tokens_for_clear")
    parser.add_argument("--counters", nargs="+", choices=COUNTERS, default=list(COUNTERS))
    parser.add_argument(
        "--inputs",
        nargs="+",
        choices=INPUTS,
        default=list(INPUTS),
        help="hold the JSON as bytes (formats.json_loads) or as a str (json.loads)",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--how", choices=("tracemalloc", "rss"), help=argparse.SUPPRESS)
    add_readme_arguments(parser)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    if args.child is not None:
        figures = measure_child(
            args.child, args.counters[0], args.threshold, args.how, args.inputs[0]
        )
        print(json.dumps(figures))
        return 0
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.memory", argv, PACKAGES)
    host = machine()
    print("building the conversation...", file=sys.stderr)
    messages, tokens = build(args.tokens, args.min_messages)
    bodies = {name: dump(messages, ensure_ascii=flag) for name, flag in ENCODINGS.items()}
    conversation = {
        "messages": len(messages),
        "chars": conversation_chars(messages),
        "cl100k_tokens": tokens,
        "tool_results": sum(1 for m in messages if m.role == "tool"),
        "json_bytes": {name: len(body) for name, body in bodies.items()},
        "non_ascii_chars": sum(1 for c in bodies["utf-8"].decode("utf-8") if not c.isascii()),
    }
    del messages
    # Resident set sizes need Linux's /proc; elsewhere only tracemalloc is measured.
    hows = ("tracemalloc", "rss") if rss_measurable() else ("tracemalloc",)
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for name, body in bodies.items():
            path = Path(folder) / f"conversation-{name}.json"
            path.write_bytes(body)
            for source in args.inputs:
                for counter in args.counters:
                    for how in hows:
                        print(f"{name} JSON as {source}, {counter}: {how}...", file=sys.stderr)
                        run = _run_child(path, counter, args.threshold, how, source)
                        runs.append({"json": name, "json_bytes": len(body), **run})
    host["load_average_at_end"] = load_average()
    report = {
        "machine": host,
        "engine": engine_revision(),
        "versions": versions(PACKAGES),
        "conversation": conversation,
        "config": {
            "max_tokens_for_clear": args.threshold,
            "backend": "InMemoryBackend",
            "other_fields": "defaults",
        },
        "goal_peak_over_json": GOAL,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_report(report)
    print(f"\nwrote {args.out}")
    if readme is not None:
        block = stamp.block(markdown(report), host["load_average_at_end"])
        write_block(readme, README_BLOCKS[0], block)
        print(f"wrote its block of {readme}")
    return 0


def _mb(x: int, size: int) -> str:
    return f"{x / MB:.2f} ({x / size:.2f}x)"


HELD = {
    "bytes": ("the bytes", "formats.json_loads(bytes)"),
    "str": ("the text", "json.loads(str)"),
}
"""Each input's name in the tables, and how it is decoded."""


def _summary(report: dict[str, Any]) -> str:
    c = report["conversation"]
    sizes = ", ".join(f"{n} {b:,} bytes" for n, b in c["json_bytes"].items())
    return (
        f"Conversation: {c['messages']:,} messages, {c['chars']:,} characters, "
        f"{c['cl100k_tokens']:,} cl100k_base tokens, {c['tool_results']} tool results, "
        f"{c['non_ascii_chars']} non-ASCII characters.\nCompact JSON: {sizes}.\n"
        f"Clear: one call over the whole conversation, max_tokens_for_clear="
        f"{report['config']['max_tokens_for_clear']:,}, InMemoryBackend, other fields at "
        f"their defaults."
    )


def print_report(report: dict[str, Any]) -> None:
    m = report["machine"]
    print(
        f"\n{_summary(report)}\nMachine: {m['cpus']} CPUs, Python {m['python']}; load average "
        f"(1, 5, 15 min) {m['load_average_at_start']} at the start, "
        f"{m['load_average_at_end']} at the end."
    )
    goal = report["goal_peak_over_json"]
    for source in INPUTS:
        runs = [r for r in report["runs"] if r["input"] == source]
        if runs:
            _print_runs(source, runs, goal)


def _traced_title(source: str, goal: float) -> str:
    held, decoder = HELD[source]
    return (
        f"The JSON held as {source}, parsed with messages_from_openai({decoder}).\n"
        f"tracemalloc, MB (times the JSON's size): {held} in memory; the peak while reading"
        " the file;\nabove "
        f"{held}: the peak of parsing, what parsing keeps, the peak of parsing and clearing;"
        f"\nand that last peak counting {held}. Goal: <= {goal:g}x."
    )


def _traced(source: str, runs: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    held = HELD[source][0]
    rows = []
    for r in runs:
        if r["how"] != "tracemalloc":
            continue
        size = r["json_bytes"]
        rows.append(
            [
                r["json"],
                r["counter"],
                _mb(r["document_in_memory"], size),
                _mb(r["read_peak"], size),
                _mb(r["parse_peak"], size),
                _mb(r["parsed_kept"], size),
                _mb(r["peak_above_document"], size),
                _mb(r["peak_with_document"], size),
                r["results_cleared"],
            ]
        )
    headers = [
        "JSON",
        "counter",
        held.removeprefix("the "),
        "reading peak",
        "parse peak",
        "parse keeps",
        f"peak above {held}",
        f"peak counting {held}",
        "cleared",
    ]
    return headers, rows


RSS_TITLE = (
    "Resident set size (VmRSS, VmHWM) in a process without tracemalloc, MB above the"
    " RSS before reading\n(times the JSON's size), and seconds:"
)


def _rss_table(source: str, runs: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    held = HELD[source][0]
    rows = []
    for r in runs:
        if r["how"] != "rss":
            continue
        size = r["json_bytes"]
        rows.append(
            [
                r["json"],
                r["counter"],
                _mb(r["rss_document"], size),
                _mb(r["rss_read_peak"], size),
                _mb(r["rss_peak_above_document"], size),
                _mb(r["rss_peak_with_document"], size),
                f"{r['read_s']:.3f}",
                f"{r['parse_s']:.3f}",
                f"{r['clear_s']:.3f}",
            ]
        )
    headers = [
        "JSON",
        "counter",
        held.removeprefix("the "),
        "reading peak",
        f"peak above {held}",
        f"peak counting {held}",
        "read s",
        "parse s",
        "clear s",
    ]
    return headers, rows


def _print_runs(source: str, runs: list[dict[str, Any]], goal: float) -> None:
    print(f"\n{_traced_title(source, goal)}")
    print(table(*_traced(source, runs)))
    headers, rows = _rss_table(source, runs)
    if not rows:
        print("\nResident set size: not measured (needs Linux's /proc/self).")
        return
    print(f"\n{RSS_TITLE}")
    print(table(headers, rows))


def goals(report: dict[str, Any]) -> list[str]:
    """Per way of holding the JSON: the peak counting it, against the goal."""
    goal = report["goal_peak_over_json"]
    lines = []
    for source in INPUTS:
        runs = [r for r in report["runs"] if r["input"] == source and r["how"] == "tracemalloc"]
        if not runs:
            continue
        ratios = [r["peak_with_document"] / r["json_bytes"] for r in runs]
        low, high = f"{min(ratios):.2f}x", f"{max(ratios):.2f}x"
        lines.append(
            f"Held as {source}, the peak of parsing and clearing counting {HELD[source][0]}: "
            f"**{low if low == high else f'{low} to {high}'}** the JSON's size (tracemalloc; "
            f"goal ≤ {goal:g}x: {verdict(ratios, goal)})."
        )
    return lines


def markdown(report: dict[str, Any]) -> list[str]:
    """The figures as the README shows them: per way of holding the JSON, its tables."""
    goal = report["goal_peak_over_json"]
    sections = [_summary(report).replace("\n", " ")]
    for source in INPUTS:
        runs = [r for r in report["runs"] if r["input"] == source]
        if not runs:
            continue
        sections += [
            _traced_title(source, goal).replace("\n", " ") + "",
            md_table(*_traced(source, runs), left=2),
        ]
        headers, rows = _rss_table(source, runs)
        if rows:
            sections += [RSS_TITLE.replace("\n", " "), md_table(headers, rows, left=2)]
    sections.append("\n".join(f"- {line}" for line in goals(report)))
    return sections


if __name__ == "__main__":
    raise SystemExit(main())
