"""The clear-phase replay benchmark: what the clear phase costs over a whole session.

The corpus (:mod:`benchmarks.corpus`) is replayed call by call as an agent makes model
calls, only the clear call timed, against one tiktoken pass over the same text and
LangChain's context editing; then, when the recordings folder is there, a long session of
recorded runs chained one after another (or the sessions named), ours alone, against one
tiktoken pass (benchmarks/README.md, "The clear-phase replay").
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import (
    engine_revision,
    load_average,
    machine,
    recording_files,
    table,
    versions,
)
from benchmarks.corpus import build_conversation, conversation_chars
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block
from benchmarks.soak import ranked_sessions, selected
from reduction_app.engine import (
    AgenticMessage,
    ApproxTokenCounter,
    ChatModelAgentState,
    InMemoryBackend,
    Message,
    ReductionConfig,
    TiktokenCounter,
    ToolInfo,
    formats,
    get_token_counter,
    new,
)
from reduction_app.engine.inspect import is_clear_placeholder, render_message, render_tool
from simulator.importers import ImportError_, load_conversations
from simulator.recordings_folder import RecordingsNotFound, require_recordings

__all__ = [
    "README_BLOCKS",
    "Run",
    "Session",
    "chained_session",
    "main",
    "recorded_sessions",
    "replay_langchain_apply",
    "replay_langchain_middleware",
    "replay_ours",
]

THRESHOLD = 100_000
"""``max_tokens_for_clear`` and LangChain's ``trigger``, in approximate tokens."""
RETENTION = 1
"""Ours keeps the latest assistant message with tool calls (one round of 1-3 results)."""
LANGCHAIN_KEEP = 2
"""LangChain keeps this many latest tool results: the corpus's mean results per round."""
RESULTS = Path(__file__).parent / "results" / "replay.json"
DECILES = 10
EXACT_GOAL = 1.3
"""The exact replay costs at most this many single tiktoken passes over the same text."""
LANGCHAIN_GOAL = 50.0
"""LangChain's middleware, as an agent runs it, takes at least this many times ours."""
SESSION_THRESHOLDS = (THRESHOLD, 20_000)
"""The recorded sessions' thresholds: the corpus's, which a long session passes a few
times (each time clearing what came before), and a stress case a session passes within
its first tenth, after which about every other call clears the round before the retained
one."""
CHAIN_AGENT = "mini-swe-agent"
"""The agent whose longest runs, chained, are the default recorded session: the folder of
the recordings folder that holds its runs."""
CHAIN_MESSAGES = 1_000
"""The chained session holds at least this many messages (``--chain-messages``)."""
CHAIN = "chain"
"""The ``--session`` name of the chained session, beside other sessions."""
PACKAGES = ("tiktoken", "langchain", "langchain-core", "pydantic")
README_BLOCKS = ("replay",)
"""The block of benchmarks/README.md that ``--readme`` writes."""


@dataclass
class Run:
    """One replay: seconds per call, in call order, and what the clearing did."""

    per_call: list[float]
    context_lengths: list[int]
    clears: int = 0
    """Calls whose output differs from their input."""
    final_tokens: int = 0
    final_placeholders: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.per_call)


def call_points(messages: Sequence[Any]) -> list[int]:
    """Where the model is called: before each assistant message (context ``[:i]``)."""
    return [i for i, m in enumerate(messages) if _role(m) == "assistant" and i > 0]


def _role(message: Any) -> str:
    """Our ``role``, or a LangChain message's ``type`` in our words."""
    role = getattr(message, "role", None)
    if role is not None:
        return str(role)
    kind = str(message.type)
    return {"ai": "assistant", "human": "user"}.get(kind, kind)


# Ours ---------------------------------------------------------------------------------


def fresh_copies(messages: Sequence[Message]) -> list[Message]:
    """Equal messages with new identities: the shared counters cache by identity, so a
    run on the objects of an earlier run would start warm."""
    return [copy.copy(m) for m in messages]


def cold_counter(name: str) -> Any:
    """A counter with empty caches: the shared one would remember the texts of an earlier
    run (its value cache) and make every run after the first look free."""
    return ApproxTokenCounter() if name == "approx" else TiktokenCounter(name)


def replay_ours(
    messages: Sequence[Any],
    token_counter: str,
    threshold: int = THRESHOLD,
    tool_infos: Sequence[ToolInfo] = (),
) -> Run:
    counter = cold_counter(token_counter)
    config = ReductionConfig(
        backend=InMemoryBackend(),
        # Truncation wraps tool calls and never runs in this replay: the corpus holds the
        # tool results as they were returned. The clear phase is the same either way.
        skip_truncation=True,
        token_counter=counter,
        max_tokens_for_clear=threshold,
        clear_retention_suffix_limit=RETENTION,
    )
    mw = new(config)
    carried: list[Any] = []
    done = 0
    per_call: list[float] = []
    lengths: list[int] = []
    clears = 0
    for point in call_points(messages):
        state = ChatModelAgentState(
            messages=carried + list(messages[done:point]), tool_infos=tool_infos
        )
        start = time.perf_counter()
        out = mw.before_model_rewrite_state(state)
        per_call.append(time.perf_counter() - start)
        clears += out is not state
        carried, done = list(out.messages), point
        lengths.append(len(carried))
    backend = config.backend
    assert isinstance(backend, InMemoryBackend)
    return Run(
        per_call,
        lengths,
        clears=clears,
        final_tokens=counter(carried, tool_infos),
        final_placeholders=sum(_placeholders(m) for m in carried),
        extra={"offloaded_files": len(backend)},
    )


def _placeholders(message: Any) -> int:
    """The cleared results a message holds: a tool message's, or a block message's."""
    if isinstance(message, AgenticMessage):
        return sum(
            1
            for b in message.content_blocks
            if b.type == "function_tool_result"
            and any(c.type == "text" and is_clear_placeholder(c.text) for c in b.content)
        )
    return int(message.role == "tool" and is_clear_placeholder(message.content))


def tiktoken_pass(messages: Sequence[Any], tool_infos: Sequence[ToolInfo] = ()) -> float:
    """Seconds to encode every message's rendered text (and every tool's schema) once
    with cl100k_base's ``encode_ordinary``: one tiktoken pass, what a user would call it."""
    import tiktoken

    get_token_counter("cl100k_base")([Message.user("warm")], [])
    encoding = tiktoken.get_encoding("cl100k_base")
    texts = [s for m in messages for s in render_message(m)]
    texts += [render_tool(t) for t in tool_infos]
    start = time.perf_counter()
    for text in texts:
        encoding.encode_ordinary(text)
    return time.perf_counter() - start


# LangChain ----------------------------------------------------------------------------


def to_langchain(messages: Sequence[Message]) -> list[Any]:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    out: list[Any] = []
    for m in messages:
        if m.role == "system":
            out.append(SystemMessage(content=m.content))
        elif m.role == "user":
            out.append(HumanMessage(content=m.content))
        elif m.role == "assistant":
            calls = [
                {"name": c.name, "args": json.loads(c.arguments), "id": c.id, "type": "tool_call"}
                for c in m.tool_calls
            ]
            out.append(AIMessage(content=m.content, tool_calls=calls))
        else:
            out.append(
                ToolMessage(content=m.content, tool_call_id=m.tool_call_id, name=m.tool_name)
            )
    return out


def _edit(threshold: int) -> Any:
    from langchain.agents.middleware import ClearToolUsesEdit

    return ClearToolUsesEdit(trigger=threshold, keep=LANGCHAIN_KEEP)


def _lc_summary(run: Run, final: list[Any]) -> Run:
    from langchain_core.messages import ToolMessage
    from langchain_core.messages.utils import count_tokens_approximately

    run.final_tokens = count_tokens_approximately(final)
    run.final_placeholders = sum(
        1 for m in final if isinstance(m, ToolMessage) and m.content == "[cleared]"
    )
    return run


def replay_langchain_middleware(lc_messages: Sequence[Any], threshold: int = THRESHOLD) -> Run:
    """As a LangChain agent runs it: each call's request holds the agent's state (every
    message so far, unedited, since the middleware edits a deep copy for the model)."""
    from langchain.agents.middleware import ContextEditingMiddleware, ModelRequest
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    middleware = ContextEditingMiddleware(
        edits=[_edit(threshold)], token_count_method="approximate"
    )
    model = GenericFakeChatModel(messages=iter(()))
    seen: list[Any] = []

    def handler(request: Any) -> Any:
        seen[:] = [request.messages]
        return request.messages

    per_call: list[float] = []
    lengths: list[int] = []
    clears = 0
    for point in call_points(lc_messages):
        request = ModelRequest(model=model, messages=list(lc_messages[:point]))
        start = time.perf_counter()
        middleware.wrap_model_call(request, handler)
        per_call.append(time.perf_counter() - start)
        # Every message of the deep copy is a new object, so compare what the model reads.
        clears += any(
            a.content != b.content for a, b in zip(seen[0], request.messages, strict=True)
        )
        lengths.append(point)
    return _lc_summary(Run(per_call, lengths, clears=clears), seen[0])


def replay_langchain_apply(lc_messages: Sequence[Any], threshold: int = THRESHOLD) -> Run:
    """``ClearToolUsesEdit.apply`` on one list carried forward and edited in place, the
    way our state is carried: LangChain's best case (no deep copy, no re-clearing)."""
    from langchain_core.messages.utils import count_tokens_approximately

    edit = _edit(threshold)
    carried: list[Any] = []
    done = 0
    per_call: list[float] = []
    lengths: list[int] = []
    clears = 0
    for point in call_points(lc_messages):
        carried.extend(lc_messages[done:point])
        done = point
        before = list(carried)
        start = time.perf_counter()
        edit.apply(carried, count_tokens=count_tokens_approximately)
        per_call.append(time.perf_counter() - start)
        clears += any(a is not b for a, b in zip(carried, before, strict=True))
        lengths.append(len(carried))
    return _lc_summary(Run(per_call, lengths, clears=clears), carried)


# Recorded sessions --------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """One recorded conversation the simulator reads, as the replay takes it."""

    label: str
    """``file#name`` (the file relative to the recordings folder)."""
    messages: list[Any]
    tools: tuple[ToolInfo, ...]
    runs: tuple[str, ...] = ()
    """For a chained session, the labels of the runs it chains, in order."""

    @property
    def kind(self) -> str:
        """``blocks`` for content-block messages (Anthropic's, Claude Code's), else ``chat``."""
        return (
            "blocks" if self.messages and isinstance(self.messages[0], AgenticMessage) else "chat"
        )


def recorded_sessions(folder: Path) -> list[Session]:
    """Every conversation the simulator reads under ``folder``, in file order."""
    sessions = []
    for path in recording_files(folder):
        relative = path.relative_to(folder).as_posix()
        try:
            recorded = load_conversations(path)
        except ImportError_:
            continue
        for position, conversation in enumerate(recorded):
            name = conversation.name.rpartition("#")[2] if "#" in conversation.name else ""
            label = f"{relative}#{name or position}"
            sessions.append(Session(label, list(conversation.messages), tuple(conversation.tools)))
    return sessions


def chained_session(folder: Path, messages: int = CHAIN_MESSAGES) -> Session:
    """The longest runs of :data:`CHAIN_AGENT` under ``folder``, ranked and picked as the
    soak benchmark picks its sessions (:func:`benchmarks.soak.selected`), as few as hold
    ``messages`` between them (or every run), replayed one after another as one
    conversation: an agent working through several tasks in one session. A run after the
    first brings its task (the user message) but not its system prompt, and its call ids
    are numbered by run (``2.call_5``), since one session never reuses an id."""
    ranked, _ = ranked_sessions(folder / CHAIN_AGENT)
    if not ranked:
        raise SystemExit(f"no {CHAIN_AGENT} run the simulator reads in {folder / CHAIN_AGENT}")
    runs = selected(ranked, 1)
    while sum(len(r.messages) for r in runs) < messages and len(runs) < len(ranked):
        runs = selected(ranked, sum(len(r.calls) for r in runs) + 1)
    chain: list[Any] = []
    tools: dict[str, ToolInfo] = {}
    for number, run in enumerate(runs, 1):
        parsed = formats.parse(run.fmt, run.messages, system=run.system)
        chain += [_numbered(m, number) for m in parsed if number == 1 or _role(m) != "system"]
        for tool in formats.parse_tools(run.fmt, run.tools):
            tools.setdefault(tool.name, tool)
    labels = tuple(f"{CHAIN_AGENT}/{r.label}" for r in runs)
    label = f"{CHAIN_AGENT}/, its {len(runs)} longest runs chained"
    return Session(label, chain, tuple(tools.values()), runs=labels)


def _numbered(message: Any, run: int) -> Message:
    """A chat message whose call ids carry the number of its run."""
    if not isinstance(message, Message):
        raise TypeError(f"{CHAIN_AGENT} runs are chat messages, not {type(message).__name__}")
    calls = tuple(dataclasses.replace(c, id=f"{run}.{c.id}") for c in message.tool_calls)
    result = f"{run}.{message.tool_call_id}" if message.tool_call_id else ""
    return dataclasses.replace(message, tool_calls=calls, tool_call_id=result)


def pick_sessions(folder: Path, wanted: Sequence[str], chain_messages: int) -> list[Session]:
    """The sessions named in ``wanted`` (a label, a file for its first conversation, or
    :data:`CHAIN`), by default the chained session; an unknown name is an error."""
    if not wanted:
        return [chained_session(folder, chain_messages)]
    sessions = recorded_sessions(folder) if set(wanted) - {CHAIN} else []
    out = []
    for name in wanted:
        if name == CHAIN:
            out.append(chained_session(folder, chain_messages))
            continue
        found = [s for s in sessions if s.label == name or s.label.startswith(f"{name}#")]
        if not found:
            raise SystemExit(f"no session {name!r} the simulator reads in {folder}")
        out.append(found[0])
    return out


def measure_session(
    session: Session, runs: int, thresholds: Sequence[int], *, pause_gc: bool
) -> dict[str, Any]:
    """Ours, exact then approximate, at each threshold, and one tiktoken pass right after
    each exact run: the ratio is the median of each run over its own pass, so a machine
    whose load changes during the benchmark still compares like with like."""
    messages, tools = session.messages, session.tools
    replay_ours(fresh_copies(messages[:50]), "cl100k_base", thresholds[0], tools)
    passes: list[float] = []
    at: dict[str, Any] = {}
    for threshold in thresholds:
        figures, ratios = {}, []
        for name in ("cl100k_base", "approx"):
            print(f"{session.label} at {threshold:,}: {name}...", file=sys.stderr)
            results = []
            for _ in range(runs):
                run, _ = timed_runs(
                    lambda n=name, t=threshold: replay_ours(fresh_copies(messages), n, t, tools),
                    1,
                    pause_gc=pause_gc,
                )
                results.append(run)
                if name == "cl100k_base":
                    passes.append(tiktoken_pass(messages, tools))
                    ratios.append(run.total / passes[-1])
            results.sort(key=lambda r: r.total)
            totals = [r.total for r in results]
            figures[f"ours_{name}"] = _figures(results[len(results) // 2], totals)
        at[str(threshold)] = {
            "figures": figures,
            "exact_over_one_tiktoken_pass": statistics.median(ratios),
            "each_run_over_its_pass": ratios,
        }
    one_pass = statistics.median(passes)
    return {
        "label": session.label,
        "runs": list(session.runs),
        "kind": session.kind,
        "messages": len(messages),
        "rendered_chars": sum(len(t) for m in messages for t in render_message(m)),
        "calls": len(call_points(messages)),
        "tools": len(tools),
        "one_tiktoken_pass_s": one_pass,
        "thresholds": at,
    }


# Driving and reporting ----------------------------------------------------------------


def timed_runs(make: Callable[[], Run], runs: int, *, pause_gc: bool) -> tuple[Run, list[float]]:
    """``runs`` runs, each after a full collection; the run with the median total, and all
    totals. The collector stays on unless ``pause_gc``: an agent pays for the garbage a
    middleware makes (LangChain's deep copies make a lot), so that is the default."""
    results: list[Run] = []
    for _ in range(runs):
        gc.collect()
        if pause_gc:
            gc.disable()
        try:
            results.append(make())
        finally:
            gc.enable()
    results.sort(key=lambda r: r.total)
    return results[len(results) // 2], [r.total for r in results]


def deciles(run: Run) -> list[dict[str, float]]:
    n = len(run.per_call)
    rows = []
    for d in range(DECILES):
        lo, hi = d * n // DECILES, (d + 1) * n // DECILES
        chunk = run.per_call[lo:hi]
        rows.append(
            {
                "decile": d + 1,
                "calls": hi - lo,
                "context_messages_at_end": run.context_lengths[hi - 1],
                "mean_ms": 1000 * statistics.fmean(chunk),
            }
        )
    return rows


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Replay a long agent session through the clear phase."
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per figure; the median is shown")
    parser.add_argument("--min-messages", type=int, default=1000)
    parser.add_argument("--min-chars", type=int, default=1_000_000)
    parser.add_argument(
        "--pause-gc", action="store_true", help="turn the collector off in timed runs, as timeit"
    )
    parser.add_argument(
        "--threshold",
        type=int,
        default=THRESHOLD,
        help="max_tokens_for_clear (and LangChain's trigger); 20000 passes it by the 10th call",
    )
    parser.add_argument(
        "--recordings",
        type=Path,
        metavar="DIR",
        help="the recordings folder whose sessions are replayed after the corpus",
    )
    parser.add_argument(
        "--session",
        action="append",
        default=[],
        metavar="LABEL",
        help="a recorded session to replay (file#name, a file relative to the folder, or "
        f"{CHAIN!r} for the chained session), repeatable; by default the chained session",
    )
    parser.add_argument(
        "--chain-messages",
        type=int,
        default=CHAIN_MESSAGES,
        metavar="N",
        help=f"the chained session chains the longest {CHAIN_AGENT} runs until it has N messages",
    )
    parser.add_argument(
        "--session-threshold",
        action="append",
        type=int,
        metavar="N",
        help="max_tokens_for_clear for the recorded sessions, repeatable "
        f"(default: {', '.join(str(t) for t in SESSION_THRESHOLDS)})",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    args.left_out = None
    try:
        args.recordings = require_recordings(args.recordings, option="--recordings")
    except RecordingsNotFound as error:
        # A folder named on the command line, or sessions asked for, must be there; the
        # default folder may be missing, as everything but the recorded sessions works
        # without it.
        if args.recordings is not None or args.session:
            parser.error(str(error))
        args.recordings, args.left_out = None, str(error)
    args.session_threshold = args.session_threshold or list(SESSION_THRESHOLDS)
    return args


def measure(
    corpus: list[Message], runs: int, *, pause_gc: bool, threshold: int = THRESHOLD
) -> dict[str, tuple[Run, list[float]]]:
    """Every replay, after an untimed warm-up of each on the corpus's first 200 messages."""
    lc_messages = to_langchain(corpus)
    get_token_counter("cl100k_base")([Message.user("warm")], [])
    replay_ours(fresh_copies(corpus[:200]), "approx")
    replay_ours(fresh_copies(corpus[:200]), "cl100k_base")
    replay_langchain_apply(lc_messages[:200])
    replay_langchain_middleware(lc_messages[:200])
    # Ours runs on fresh copies each time (its counters cache by identity); LangChain's
    # edit replaces list slots, never the messages, so the one conversion serves every run.
    makers: dict[str, Callable[[], Run]] = {
        "ours_approx": lambda: replay_ours(fresh_copies(corpus), "approx", threshold),
        "ours_cl100k_base": lambda: replay_ours(fresh_copies(corpus), "cl100k_base", threshold),
        "langchain_wrap_model_call": lambda: replay_langchain_middleware(lc_messages, threshold),
        "langchain_apply_carried": lambda: replay_langchain_apply(lc_messages, threshold),
    }
    results = {}
    for name, make in makers.items():
        print(f"{name}...", file=sys.stderr)
        results[name] = timed_runs(make, runs, pause_gc=pause_gc)
    return results


def _figures(run: Run, totals: list[float]) -> dict[str, Any]:
    return {
        "total_s": run.total,
        "totals_s": totals,
        "mean_ms_per_call": 1000 * run.total / len(run.per_call),
        "max_ms_per_call": 1000 * max(run.per_call),
        "calls_that_cleared": run.clears,
        "final_context_tokens": run.final_tokens,
        "final_placeholders": run.final_placeholders,
        "deciles": deciles(run),
        **run.extra,
    }


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.replay", argv, PACKAGES)
    host = machine()
    sessions: list[Session] = []
    if args.recordings is not None:
        print("reading the recordings...", file=sys.stderr)
        sessions = pick_sessions(args.recordings, args.session, args.chain_messages)
    else:
        print(f"recorded sessions left out: {args.left_out}", file=sys.stderr)
    print("building the corpus...", file=sys.stderr)
    corpus = build_conversation(args.min_messages, args.min_chars)
    results = measure(corpus, args.runs, pause_gc=args.pause_gc, threshold=args.threshold)
    one_pass = statistics.median(tiktoken_pass(corpus) for _ in range(args.runs))
    figures = {name: _figures(run, totals) for name, (run, totals) in results.items()}
    recorded = [
        measure_session(s, args.runs, args.session_threshold, pause_gc=args.pause_gc)
        for s in sessions
    ]
    approx = figures["ours_approx"]["total_s"]
    report = {
        "machine": host,
        "engine": engine_revision(),
        "versions": versions(PACKAGES),
        "corpus": {
            "messages": len(corpus),
            "chars": conversation_chars(corpus),
            "calls": len(call_points(corpus)),
            "tool_results": sum(1 for m in corpus if m.role == "tool"),
        },
        "config": {
            "max_tokens_for_clear": args.threshold,
            "clear_retention_suffix_limit": RETENTION,
            "skip_truncation": True,
            "backend": "InMemoryBackend",
            "langchain": {
                "trigger": args.threshold,
                "keep": LANGCHAIN_KEEP,
                "token_count_method": "approximate",
            },
        },
        "runs": args.runs,
        "gc_paused": args.pause_gc,
        "one_tiktoken_pass_s": one_pass,
        "figures": figures,
        "ratios": {
            "exact_over_one_tiktoken_pass": figures["ours_cl100k_base"]["total_s"] / one_pass,
            "langchain_wrap_model_call_over_ours_approx": (
                figures["langchain_wrap_model_call"]["total_s"] / approx
            ),
            "langchain_apply_carried_over_ours_approx": (
                figures["langchain_apply_carried"]["total_s"] / approx
            ),
        },
        "recordings": None if args.recordings is None else str(args.recordings),
        "recordings_left_out": args.left_out,
        "sessions": recorded,
    }
    report["machine"]["load_average_at_end"] = load_average()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_report(report)
    print(f"\nwrote {args.out}")
    if readme is not None:
        end = report["machine"]["load_average_at_end"]
        write_block(readme, README_BLOCKS[0], stamp.block(markdown(report), end))
        print(f"wrote its block of {readme}")
    return 0


def _summary(report: dict[str, Any]) -> str:
    c = report["corpus"]
    return (
        f"Corpus: {c['messages']:,} messages, {c['chars']:,} characters, {c['calls']} model "
        f"calls, {c['tool_results']} tool results. Threshold "
        f"{report['config']['max_tokens_for_clear']:,} tokens; median of {report['runs']} runs; "
        f"garbage collector {'paused' if report['gc_paused'] else 'on'}."
    )


def _replays(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    f = report["figures"]
    rows: list[list[Any]] = [
        [
            name,
            f"{v['total_s']:.3f}",
            f"{v['mean_ms_per_call']:.3f}",
            f"{v['max_ms_per_call']:.2f}",
            v["calls_that_cleared"],
            f"{v['final_context_tokens']:,}",
            v["final_placeholders"],
            " ".join(f"{t:.3f}" for t in v["totals_s"]),
        ]
        for name, v in f.items()
    ]
    one_pass = f"{report['one_tiktoken_pass_s']:.3f}"
    rows.append(["one tiktoken pass (cl100k_base)", one_pass, "", "", "", "", "", ""])
    headers = [
        "replay",
        "total s",
        "mean ms/call",
        "max ms",
        "calls cleared",
        "final tokens",
        "placeholders",
        "all totals s",
    ]
    return headers, rows


def _ratios(report: dict[str, Any]) -> list[tuple[str, str, str, bool | None]]:
    """Each ratio as printed, its goal, and whether it is met (``None``: no goal)."""
    r = report["ratios"]
    exact = r["exact_over_one_tiktoken_pass"]
    wrap = r["langchain_wrap_model_call_over_ours_approx"]
    carried = r["langchain_apply_carried_over_ours_approx"]
    return [
        (
            "exact run / one tiktoken pass",
            f"{exact:.2f}x",
            f"<= {EXACT_GOAL:g}x",
            exact <= EXACT_GOAL,
        ),
        (
            "LangChain wrap_model_call / ours approx",
            f"{wrap:.1f}x",
            f">= {LANGCHAIN_GOAL:g}x",
            wrap >= LANGCHAIN_GOAL,
        ),
        (
            "LangChain apply (carried) / ours approx",
            f"{carried:.1f}x",
            "(best case for LangChain)",
            None,
        ),
    ]


def _deciles(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    f = report["figures"]
    names = list(f)
    rows = []
    for d in range(DECILES):
        row: list[Any] = [d + 1, f[names[0]]["deciles"][d]["context_messages_at_end"]]
        row += [f"{f[n]['deciles'][d]['mean_ms']:.3f}" for n in names]
        rows.append(row)
    return ["decile", "context msgs", *names], rows


def _symbols(goal: str) -> str:
    """A goal as the README's sentences write it (the console keeps ASCII)."""
    return goal.replace("<=", "≤").replace(">=", "≥")


def _met(met: bool | None) -> str:
    return "" if met is None else ("met" if met else "not met")


def _sessions(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    rows: list[list[Any]] = []
    for number, session in enumerate(report["sessions"], 1):
        for threshold, at in session["thresholds"].items():
            exact, approx = at["figures"]["ours_cl100k_base"], at["figures"]["ours_approx"]
            ratio = at["exact_over_one_tiktoken_pass"]
            rows.append(
                [
                    f"S{number}",
                    f"{int(threshold):,}",
                    exact["calls_that_cleared"],
                    f"{exact['final_context_tokens']:,}",
                    f"{approx['total_s']:.3f}",
                    f"{exact['total_s']:.3f}",
                    f"{session['one_tiktoken_pass_s']:.3f}",
                    f"{ratio:.2f}x",
                    _met(ratio <= EXACT_GOAL),
                ]
            )
    headers = [
        "session",
        "threshold",
        "calls cleared",
        "final tokens",
        "ours_approx s",
        "ours_cl100k_base s",
        "one tiktoken pass s",
        "exact / one pass",
        f"goal <= {EXACT_GOAL:g}x",
    ]
    return headers, rows


def _session_list(report: dict[str, Any]) -> list[str]:
    lines = []
    for n, s in enumerate(report["sessions"], 1):
        line = (
            f"S{n}: `{s['label']}` ({'content blocks' if s['kind'] == 'blocks' else 'chat'}), "
            f"{s['messages']:,} messages, {s['calls']} model calls, {s['rendered_chars']:,} "
            f"characters rendered for counting, {s['tools']} tool schemas."
        )
        if s["runs"]:
            line += " Runs, in order: " + ", ".join(f"`{r}`" for r in s["runs"]) + "."
        lines.append(line)
    return lines


def _left_out(report: dict[str, Any]) -> str:
    """The sentence that stands for the recorded sessions when the folder was missing."""
    return (
        "Recorded sessions: left out, since the recordings folder is missing "
        f"({report['recordings_left_out']})."
    )


def _session_deciles(report: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    columns = [
        (f"S{n} at {int(t):,}", at["figures"]["ours_cl100k_base"]["deciles"])
        for n, s in enumerate(report["sessions"], 1)
        for t, at in s["thresholds"].items()
    ]
    rows = [
        [d + 1, *(f"{tenths[d]['mean_ms']:.3f}" for _, tenths in columns)] for d in range(DECILES)
    ]
    return ["decile", *(name for name, _ in columns)], rows


def print_report(report: dict[str, Any]) -> None:
    print(f"\n{_summary(report)}")
    m = report["machine"]
    print(
        f"Machine: {m['cpus']} CPUs, Python {m['python']}; load average (1, 5, 15 min) "
        f"{m['load_average_at_start']} at the start, {m['load_average_at_end']} at the end.\n"
    )
    print(table(*_replays(report)))
    print()
    rows = [[name, value, goal] for name, value, goal, _ in _ratios(report)]
    print(table(["ratio", "value", "goal"], rows))
    print("\nMean ms per call by decile of the replay (context length in messages at its end):")
    print(table(*_deciles(report)))
    if not report["sessions"]:
        print(f"\n{_left_out(report)}")
        return
    print(f"\nRecorded sessions ({report['recordings']}):")
    print("\n".join(_session_list(report)))
    print(table(*_sessions(report)))
    print("\nMean ms per call of the exact replay by decile of each session:")
    print(table(*_session_deciles(report)))


def markdown(report: dict[str, Any]) -> list[str]:
    """The figures as the README shows them: the corpus, the tables, the goals."""
    ratios = _ratios(report)
    rows = [[name, value, goal] for name, value, goal, _ in ratios]
    goals = " ".join(
        f"{name[0].upper()}{name[1:]}: **{value}** (goal {_symbols(goal)}: {_met(met)})."
        for name, value, goal, met in ratios
        if met is not None
    )
    corpus = [
        _summary(report),
        md_table(*_replays(report)),
        md_table(["ratio", "value", "goal"], rows),
        goals,
        "Mean ms per call by tenth of the replay (context length in messages at its end):",
        md_table(*_deciles(report)),
    ]
    if not report["sessions"]:
        return [*corpus, _left_out(report)]
    return [
        *corpus,
        "Recorded sessions, ours alone:",
        "\n".join(f"- {line}" for line in _session_list(report)),
        md_table(*_sessions(report)),
        "Mean ms per call of the exact replay by tenth of each session:",
        md_table(*_session_deciles(report)),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
