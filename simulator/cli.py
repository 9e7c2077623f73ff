"""``python -m simulator``: the command line over the simulator. What it does and its exit
codes are :data:`DESCRIPTION` and :data:`EXIT_CODES` below, which ``--help`` prints; how
its tables show long conversation names is :func:`short_names`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO, TypeVar

from reduction_app.engine import (
    ConfigError,
    ReductionError,
    check_config,
)
from simulator import recovery, stored
from simulator.calibration import (
    PREFIX_SHIPPED,
    SHIPPED,
    STRATEGY_RUNS,
    calibrate,
    calibrate_prefix,
    check_strategy,
    render_prefix_table,
    render_strategy_table,
    render_table,
)
from simulator.ceiling import KEPT_WHOLE, LADDER, UNDER_LADDER, Ceiling, ceiling
from simulator.compare import compare, grid_configs
from simulator.corpus_sweep import CorpusSweep, corpus_configs, corpus_sweep
from simulator.importers import FORMATS, ImportError_, RecordedConversation, load_files
from simulator.parallel import default_workers
from simulator.prefix import inferred_prefix
from simulator.price_file import resolve as resolve_pricing
from simulator.pricing import DEFAULT_PRICING_NAME, PRESETS, Pricing, engine_measure
from simulator.recommend import (
    DEFAULT_BUDGET,
    DEFAULT_FOLDS,
    DEFAULT_GRID,
    LIMIT_LABELS,
    Budget,
    Recommendation,
    recommend,
)
from simulator.recordings_folder import RecordingsNotFound, require_recordings
from simulator.results import REFERENCE_STRATEGY, ReplayResult

__all__ = ["DESCRIPTION", "EXIT_CODES", "NAME_WIDTH", "main", "short_names"]

DESCRIPTION = (
    "Replay recorded conversations under configs, sweep a grid over a corpus of them, "
    "recommend a config for a corpus, calibrate the token counts against providers' bills, or "
    "measure how agents recovered from outputs their own tools cut."
)
EXIT_CODES = (
    "Exit codes: 0 on success, 1 when recommend finds no config within its budget, 2 for bad "
    "input (an unreadable file, an unknown format, a bad config or grid, no recordings folder "
    "for calibrate), with a one-line error naming the file, line, field or folder at fault. "
    "Each command's --help says more about it."
)
NAME_WIDTH = 40
"""Characters of a conversation's name in a table's first column, unless more are needed
to tell the names apart."""


class InputError(Exception):
    """Bad input found by the command line itself (arguments, config or grid files)."""


class _Parser(argparse.ArgumentParser):
    """Usage errors become one-line :class:`InputError` messages, exit code 2."""

    def error(self, message: str) -> NoReturn:
        raise InputError(f"{self.prog}: {message} (see --help)")


Row = tuple[RecordedConversation, ReplayResult, dict[str, float] | None]


def _read_json(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{path}: {what} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from exc


def _configs(paths: Sequence[str]) -> list[tuple[str, dict[str, Any] | None]]:
    if not paths:
        return [("no reduction", None), ("defaults", {})]
    out: list[tuple[str, dict[str, Any] | None]] = []
    for path in paths:
        data = _read_json(path, "config")
        if not isinstance(data, dict):
            raise InputError(f"{path}: a config is a JSON object, got {type(data).__name__}")
        try:
            check_config(data)
        except ConfigError as exc:
            raise InputError(f"{path}: {exc}") from exc
        out.append((Path(path).stem, data))
    return out


def short_names(names: Sequence[str], width: int = NAME_WIDTH) -> dict[str, str]:
    """How a table shows each of ``names``: without the file it came from (``file#``)
    when that leaves the names distinct, and a name longer than ``width`` cut in the
    middle with an ellipsis, keeping its start and its end; the column widens, up to the
    longest name whole, until distinct names read distinctly."""
    distinct = set(names)
    tails = {name: name.rsplit("#", 1)[-1] for name in distinct}
    if len(set(tails.values())) < len(distinct):
        tails = {name: name for name in distinct}
    longest = max((len(tail) for tail in tails.values()), default=0)
    for room in range(width, longest):
        shown = {name: _cut(tail, room) for name, tail in tails.items()}
        if len(set(shown.values())) == len(distinct):
            return shown
    return tails


def _cut(name: str, width: int) -> str:
    if len(name) <= width:
        return name
    head = (width - 1) // 2
    return f"{name[:head]}…{name[len(name) - (width - 1 - head) :]}"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _table(rows: Sequence[Row], out: TextIO) -> None:
    headers = [
        "conversation",
        "config",
        "calls",
        "billed tok",
        "Δ billed",
        "cached",
        "cost $",
        "w/recovery $",
        "peak tok",
        "trunc",
        "clears",
        "offloaded ch",
        "refetch",
        "misses",
        "repeat",
        "visible",
    ]
    lines = []
    shown = short_names([conv.name for conv, _, _ in rows])
    for conv, r, delta in rows:
        t = r.totals
        lines.append(
            [
                shown[conv.name],
                r.name,
                f"{t.model_calls:,}",
                f"{t.input_tokens_billed:,}",
                f"{int(delta['input_tokens_billed']):+,}" if delta else "",
                _percent(t.cached_tokens, t.input_tokens_billed),
                f"{t.cost_usd:.4f}",
                "" if t.cost_with_recovery_usd is None else f"{t.cost_with_recovery_usd:.4f}",
                f"{t.peak_context_tokens:,}",
                f"{t.truncations:,}",
                f"{t.clears:,}",
                f"{t.chars_offloaded:,}",
                f"{t.refetches:,}",
                f"{t.misses:,}",
                f"{t.repeated_calls:,}",
                f"{100 * t.mean_visible_tool_share:.1f}%",
            ]
        )
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + "\n")
    for line in lines:
        out.write(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
            + "\n"
        )


def _strategy_lines(rows: Sequence[Row], out: TextIO) -> None:
    """Which strategy cleared what, for each replay that used one beyond the reference's."""
    for conv, result, _ in rows:
        if set(result.strategies) <= {REFERENCE_STRATEGY}:
            continue
        parts = [
            f"{name} {effect.results:,} result{'' if effect.results == 1 else 's'}, "
            f"{effect.tokens_saved:,} tok saved"
            for name, effect in result.strategies.items()
        ]
        out.write(f"strategies ({conv.name}, {result.name}): {'; '.join(parts)}\n")


def _pricing(args: argparse.Namespace) -> Pricing:
    preset = resolve_pricing(args.pricing)
    return engine_measure(preset) if args.measure == "engine" else preset


def _notes(pricing: Pricing, out: TextIO) -> None:
    """How the tokens were counted, under the table."""
    if pricing.tokenizer is None:
        out.write("tokens: each config's own counter, no provider framing (--measure engine)\n")
        return
    out.write(f"tokens: {pricing.tokenizer} with {pricing.framing.name} framing ({pricing.name})\n")
    if pricing.estimate:
        out.write(
            f"note: token counts for {pricing.name} are estimates: its provider's tokenizer "
            f"is not available offline, so they are counted with {pricing.tokenizer}\n"
        )


def _prefix_line(
    conversations: Sequence[RecordedConversation], pricing: Pricing, on: bool, out: TextIO
) -> None:
    """Whether the counts hold a prefix the recordings left out (see simulator.prefix)."""
    found = [p for p in (inferred_prefix(c, pricing) for c in conversations) if p is not None]
    if not found:
        return
    runs = "the run" if len(conversations) == 1 else f"{len(found)} of {len(conversations)} runs"
    if not on:
        out.write(
            f"inferred prefix: left out (--no-inferred-prefix): {runs} left out the system "
            "prompt and tool schemas, and the counts miss them\n"
        )
        return
    low, high = min(found), max(found)
    span = f"{low:,}" if low == high else f"{low:,} to {high:,}"
    out.write(
        f"inferred prefix: {span} tokens in every call of {runs}: the system prompt and tool "
        "schemas the recording left out, inferred from the provider's counts of the first "
        "calls (--no-inferred-prefix leaves it out)\n"
    )


def _replay(args: argparse.Namespace, out: TextIO) -> None:
    configs = _configs(args.config)
    pricing = _pricing(args)
    conversations = load_files(args.files, fmt=args.format)
    rows: list[Row] = []
    payload = []
    for conv in conversations:
        comparison = compare(
            conv,
            configs,
            baseline=args.baseline,
            pricing=pricing,
            min_cacheable_prefix=args.min_cacheable_prefix,
            inferred_prefix=not args.no_inferred_prefix,
        )
        pairs: list[tuple[ReplayResult, dict[str, float] | None]] = []
        if args.baseline == "none":
            pairs.append((comparison.baseline, None))
        pairs += zip(comparison.results, comparison.deltas, strict=True)
        for result, delta in pairs:
            rows.append((conv, result, delta))
            entry = {**result.to_dict(), "baseline": comparison.baseline.name, "deltas": delta}
            payload.append(entry)
    if args.json:
        json.dump({"results": payload}, out, ensure_ascii=False)
        out.write("\n")
    else:
        _table(rows, out)
        _strategy_lines(rows, out)
        _notes(pricing, out)
        _prefix_line(conversations, pricing, not args.no_inferred_prefix, out)


def _progress(err: TextIO, unit: str = "configs") -> Any:
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // total
        err.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {unit}")
        if done == total:
            err.write("\n")
        err.flush()

    return show


def _money(value: float) -> str:
    return f"${value:,.4f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _corpus_table(result: CorpusSweep, out: TextIO) -> None:
    """One row per combination (no reduction first): its totals over every run."""
    headers = [
        "combination",
        "cache-aware $",
        "cost saved",
        "w/recovery $",
        "saved w/recovery",
        "no-cache $",
        "input tokens",
        "tokens saved",
        "re-fetches",
        "misses",
        "billed more",
        "w/recovery",
    ]
    base = result.baseline
    lines = [
        [
            base.name,
            _money(base.cost_usd),
            "",
            _money(base.cost_with_recovery_usd),
            "",
            _money(result.cost_without_cache(base)),
            f"{base.input_tokens_billed:,}",
            "",
            f"{base.refetches:,}",
            f"{base.misses:,}",
            "",
            "",
        ]
    ]
    for i, totals in enumerate(result.combinations):
        lines.append(
            [
                totals.name,
                _money(totals.cost_usd),
                _share(result.cost_saved(i)),
                _money(totals.cost_with_recovery_usd),
                _share(result.recovery_saved(i)),
                _money(result.cost_without_cache(totals)),
                f"{totals.input_tokens_billed:,}",
                _share(result.tokens_saved(i)),
                f"{totals.refetches:,}",
                f"{totals.misses:,}",
                f"{len(result.billed_more(i))}",
                f"{len(result.billed_more(i, recovery=True))}",
            ]
        )
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(headers)]
    out.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip() + "\n")
    for line in lines:
        cells = [
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ]
        out.write("  ".join(cells).rstrip() + "\n")


def _corpus_front(result: CorpusSweep, out: TextIO) -> None:
    runs = len(result.runs)
    out.write(
        f"billed more: of the {runs} run{'' if runs == 1 else 's'}, how many cost more "
        "(cache-aware) than with no reduction; w/recovery: the same by cost with recovery\n"
    )
    out.write(
        f"Pareto front over the {runs} run{'' if runs == 1 else 's'} "
        "(cache-aware cost vs re-fetches):\n"
    )
    # Combinations with the same totals are one point of the front, shown once; the
    # points from the cheapest to the one with the fewest re-fetches.
    points: dict[tuple[float, int, int], list[int]] = {}
    for i in result.front:
        t = result.combinations[i]
        points.setdefault((round(t.cost_usd, 6), t.input_tokens_billed, t.refetches), []).append(i)
    for _, same in sorted(points.items()):
        i = same[0]
        t = result.combinations[i]
        others = f" (and {len(same) - 1} more with the same totals)" if len(same) > 1 else ""
        out.write(
            f"  {t.name}{others}: {_money(t.cost_usd)} (saves {_share(result.cost_saved(i))}), "
            f"{t.input_tokens_billed:,} tokens, {t.refetches} re-fetches, "
            f"billed more on {len(result.billed_more(i))}\n"
        )


def _run_tables(
    conversations: Sequence[RecordedConversation], result: CorpusSweep, out: TextIO
) -> None:
    """Each run's own table and front (``--per-run``)."""
    for conv, run in zip(conversations, result.per_run, strict=True):
        out.write(f"{conv.name}:\n")
        _table([(conv, r, None) for r in run.results], out)
        base = run.baseline
        assert base is not None
        out.write(
            "Pareto front (cache-aware cost vs re-fetches; no reduction: "
            f"{_money(base.totals.cost_usd)}, {base.totals.input_tokens_billed:,} tokens):\n"
        )
        for i in run.front:
            r = run.results[i]
            t = r.totals
            saved = run.saving(r)
            share = "" if saved is None else f" (saves {100 * saved:.1f}%)"
            out.write(
                f"  {r.name}: {_money(t.cost_usd)}{share}, {t.input_tokens_billed:,} tokens, "
                f"{t.refetches} re-fetches\n"
            )
        out.write("\n")


def _grid(path: str) -> dict[str, Any]:
    grid = _read_json(path, "grid")
    try:
        grid_configs(grid)
    except ValueError as exc:
        raise InputError(f"{path}: {exc}") from exc
    assert isinstance(grid, dict)
    return grid


def _named_configs(path: str) -> list[tuple[str, dict[str, Any]]]:
    """A ``--configs`` file: a JSON object of name -> config."""
    data = _read_json(path, "configs")
    if not isinstance(data, dict) or not data:
        raise InputError(f"{path}: configs are a non-empty JSON object of name -> config")
    out = []
    for name, config in data.items():
        if not isinstance(config, dict):
            raise InputError(f"{path}: {name!r}: a config is a JSON object, got {config!r}")
        try:
            check_config(config)
        except ConfigError as exc:
            raise InputError(f"{path}: {name!r}: {exc}") from exc
        out.append((name, config))
    return out


def _sweep(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    grid = None if args.grid is None else _grid(args.grid)
    named = None if args.configs is None else _named_configs(args.configs)
    started = time.perf_counter()
    pricing = _pricing(args)
    conversations = load_files(args.files, fmt=args.format)
    options: dict[str, Any] = {
        "pricing": pricing,
        "min_cacheable_prefix": args.min_cacheable_prefix,
        "progress": None if args.quiet else _progress(err, "replays"),
        "workers": args.workers,
        "share": not args.no_share,
        "inferred_prefix": not args.no_inferred_prefix,
    }
    if named is not None:
        result = corpus_configs(conversations, named, **options)
    else:
        assert grid is not None
        result = corpus_sweep(conversations, grid, **options)
    if args.json:
        sweeps = [
            {"conversation": conv.name, **run.to_dict()}
            for conv, run in zip(conversations, result.per_run, strict=True)
        ]
        json.dump({"corpus": result.to_dict(), "sweeps": sweeps}, out, ensure_ascii=False)
        out.write("\n")
    else:
        if args.per_run:
            _run_tables(conversations, result, out)
        _corpus_table(result, out)
        _notes(pricing, out)
        _prefix_line(conversations, pricing, not args.no_inferred_prefix, out)
        _corpus_front(result, out)
    seconds = time.perf_counter() - started
    combinations, runs = len(result.combinations), len(result.runs)
    err.write(
        f"swept {combinations} combination{'' if combinations == 1 else 's'} over {runs} "
        f"run{'' if runs == 1 else 's'} in {seconds:.1f} s\n"
    )


def _calibrate(args: argparse.Namespace, out: TextIO) -> None:
    root = require_recordings(args.recordings, option="--recordings")
    rows = [calibrate(root, item) for item in SHIPPED]
    checks = [check_strategy(root, item) for item in STRATEGY_RUNS]
    prefixed = [calibrate_prefix(root, item) for item in PREFIX_SHIPPED]
    if args.json:
        payload = [{**dataclasses.asdict(r), "ratio": round(r.ratio, 6)} for r in rows]
        strategies = [dataclasses.asdict(c) for c in checks]
        prefixes = [
            {
                **dataclasses.asdict(r),
                "ratio": round(r.ratio, 6),
                "ratio_without": round(r.ratio_without, 6),
            }
            for r in prefixed
        ]
        json.dump(
            {"calibration": payload, "strategies": strategies, "inferred_prefix": prefixes}, out
        )
        out.write("\n")
    else:
        out.write(render_table(rows))
        out.write("\n")
        out.write(render_strategy_table(checks))
        out.write("\n")
        out.write(render_prefix_table(prefixed))


LIMIT_OPTIONS = {
    "misses_per_100_calls": "--max-misses-per-100-calls",
    "refetches_per_100_calls": "--max-refetches-per-100-calls",
    "max_run_loss": "--max-run-loss",
}


def _harm(result: Recommendation, index: int) -> str:
    m = result.measure(index)
    return (
        f"{m.misses_per_100_calls:.1f} misses and {m.refetches_per_100_calls:.1f} re-fetches "
        f"per 100 calls, worst run {_signed(m.run_loss)} against no reduction, billed more "
        f"on {m.runs_worse} of {len(result.runs)} runs"
    )


FRONT_SHOWN = 12
"""The most points of the front the table shows (``--json`` has them all)."""


def _thinned(indexes: Sequence[int], most: int, *, keep: int | None) -> list[int]:
    """At most ``most`` of ``indexes``, spread evenly from first to last, ``keep`` among
    them when it is one of them."""
    if len(indexes) <= most:
        return list(indexes)
    step = (len(indexes) - 1) / (most - 1)
    picked = {indexes[round(n * step)] for n in range(most)}
    if keep is not None and keep in indexes:
        picked.add(keep)
    return [i for i in indexes if i in picked]


def _config_count(count: int) -> str:
    return f"{count} config{'' if count == 1 else 's'}"


def _signed(value: float) -> str:
    return f"{100 * value:+.1f}%"


def _budget_line(budget: Budget) -> str:
    return (
        f"budget: at most {budget.misses_per_100_calls:g} misses and "
        f"{budget.refetches_per_100_calls:g} re-fetches per 100 calls, no run costing more "
        f"than {100 * budget.max_run_loss:g}% above no reduction (with recovery)"
    )


def _recommend_table(result: Recommendation, out: TextIO) -> None:
    runs = len(result.runs)
    base = result.baseline
    calls = sum(base.run_calls)
    out.write(
        f"{runs} run{'' if runs == 1 else 's'} ({calls:,} model calls) at {result.pricing} "
        f"prices; no reduction: {_money(base.cost_usd)}\n"
    )
    out.write(_budget_line(result.budget) + "\n")
    if result.best is None:
        if result.binding is None:
            out.write("recommended: none: no config searched saves anything with recovery\n")
        else:
            out.write(
                "recommended: none: no config searched within the budget saves anything with "
                f"recovery; the limit that binds: {LIMIT_LABELS[result.binding]} "
                f"({LIMIT_OPTIONS[result.binding]})\n"
            )
        if result.nearest:
            out.write("nearest configs that save:\n")
            for i in result.nearest:
                t = result.configs[i]
                over = ", ".join(result.measure(i).over(result.budget))
                out.write(
                    f"  {t.name}: saves {_share(t.saving(base, recovery=True))} with recovery; "
                    f"{_harm(result, i)} (over: {over}): {json.dumps(t.config)}\n"
                )
    else:
        best = result.configs[result.best]
        out.write(f"recommended: {best.name}\n")
        out.write(f"  config: {json.dumps(best.config)}\n")
        out.write(
            f"  cost: {_money(best.cost_usd)} (saves {_share(best.saving(base))}), with "
            f"recovery {_money(best.cost_with_recovery_usd)} (saves "
            f"{_share(best.saving(base, recovery=True))})\n"
        )
        out.write(f"  {_harm(result, result.best)}\n")
    if result.expected is not None:
        e = result.expected
        out.write(
            f"expected on runs it has not seen ({e.folds}-fold, picked on the other folds): "
            f"saves {_share(e.saved_with_recovery)} with recovery (folds from "
            f"{_share(e.low)} to {_share(e.high)}), {e.misses_per_100_calls:.1f} misses per "
            f"100 calls, worst run {_signed(e.run_loss)}\n"
        )
    if result.ceiling is not None:
        share = None if result.best is None else result.ceiling_share(result.best)
        gets = "" if share is None else f"; the recommendation gets {_share(share)} of it"
        out.write(
            "ceiling (a clairvoyant reduction, reading back what it hides where that pays): "
            f"saves {_share(float(result.ceiling['saved']))} with recovery{gets}; hiding "
            f"nothing the agent uses: {_share(float(result.ceiling['no_miss_saved']))}\n"
        )
    shown = _thinned(result.front, FRONT_SHOWN, keep=result.best)
    more = "" if len(shown) == len(result.front) else f"; {len(shown)} of {len(result.front)} shown"
    out.write(
        "front (saved with recovery against misses per 100 calls, configs within the other "
        f"limits{more}):\n"
    )
    for i in shown:
        t = result.configs[i]
        m = result.measure(i)
        mark = "*" if i == result.best else " "
        out.write(
            f" {mark}{m.misses_per_100_calls:5.1f} misses/100 calls: saves "
            f"{_share(m.saved)} ({_money(t.cost_with_recovery_usd)}), "
            f"{m.refetches_per_100_calls:.1f} re-fetches/100, worst run {_signed(m.run_loss)}: "
            f"{t.name}\n"
        )
    rounds = len(result.rounds)
    out.write(
        f"searched {_config_count(len(result.configs))} in {rounds} "
        f"round{'' if rounds == 1 else 's'} in {result.seconds:.1f} s\n"
    )


def _recommend(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    grid = _grid(args.grid)
    pricing = _pricing(args)
    conversations = load_files(args.files, fmt=args.format)

    def say(line: str) -> None:
        err.write(line + "\n")
        err.flush()

    result = recommend(
        conversations,
        pricing=pricing,
        grid=grid,
        budget=Budget(
            misses_per_100_calls=args.max_misses_per_100_calls,
            refetches_per_100_calls=args.max_refetches_per_100_calls,
            max_run_loss=args.max_run_loss / 100,
        ),
        folds=args.folds,
        max_seconds=args.max_seconds,
        tool_limits=not args.no_tool_limits,
        with_ceiling=not args.no_ceiling,
        min_cacheable_prefix=args.min_cacheable_prefix,
        workers=args.workers,
        progress=None if args.quiet else _progress(err, "replays"),
        say=None if args.quiet else say,
        inferred_prefix=not args.no_inferred_prefix,
    )
    if args.json:
        json.dump(stored.fields(result.stored()), out, ensure_ascii=False)
        out.write("\n")
    else:
        _recommend_table(result, out)
        _notes(pricing, out)
        _prefix_line(conversations, pricing, not args.no_inferred_prefix, out)
    err.write(f"searched {_config_count(len(result.configs))} in {result.seconds:.1f} s\n")
    return 1 if result.best is None else 0


def _ceiling_table(result: Ceiling, out: TextIO) -> None:
    runs = len(result.runs)
    base = result.baseline_cost_usd
    out.write(
        f"{runs} run{'' if runs == 1 else 's'} at {result.pricing} prices; no reduction: "
        f"{_money(base)}\n"
    )
    out.write(
        f"ceiling: {_money(result.cost_usd)} (saves {_share(result.saved)}), "
        f"{result.misses} read backs\n"
    )
    out.write(
        f"without a miss: {_money(result.no_miss_cost_usd)} (saves "
        f"{_share(result.no_miss_saved)})\n"
    )
    out.write("variants (cost with recovery over every run, runs it is the cheapest on):\n")
    wins = result.wins
    width = max(len(v) for v in result.variants)
    for variant, cost in result.variants.items():
        saved = (base - cost) / base if base else 0.0
        out.write(
            f"  {variant.ljust(width)}  {_money(cost)}  saves {_share(saved).rjust(6)}  "
            f"{wins[variant]} run{'' if wins[variant] == 1 else 's'}\n"
        )
    steps = result.steps
    shown = [f"{int(n):,}: {steps[str(n)]:,}" for n in LADDER]
    shown += [f"{KEPT_WHOLE}: {steps[KEPT_WHOLE]:,}", f"{UNDER_LADDER}: {steps[UNDER_LADDER]:,}"]
    out.write(f"ladder (outputs per step, without a miss): {', '.join(shown)}\n")


def _ceiling(args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
    conversations = load_files(args.files, fmt=args.format)
    pricing = _pricing(args)
    result = ceiling(
        conversations,
        pricing=pricing,
        min_cacheable_prefix=args.min_cacheable_prefix,
        workers=args.workers,
        progress=None if args.quiet else _progress(err, "runs"),
    )
    if args.json:
        json.dump(result.to_dict(), out, ensure_ascii=False)
        out.write("\n")
    else:
        _ceiling_table(result, out)
        _notes(pricing, out)
    err.write(f"worked out the ceiling of {len(result.runs)} runs in {result.seconds:.1f} s\n")


def _recordings_option(parser: argparse.ArgumentParser) -> None:
    # --data is the option's former name, kept for scripts that use it.
    parser.add_argument(
        "--recordings",
        "--data",
        dest="recordings",
        type=Path,
        default=None,
        metavar="DIR",
        help="the folder of recorded agent runs (default: $REDUCTION_RECORDINGS_DIR, else "
        "shared/data/conversations beside the checkout)",
    )


Number = TypeVar("Number", int, float)


def _bounded(
    kind: Callable[[str], Number], low: Number, expected: str, *, finite: bool = True
) -> Callable[[str], Number]:
    """An argparse type: ``kind`` of ``value``, at least ``low`` (and finite, unless
    not ``finite``); ``expected`` says what in the error."""

    def parse(value: str) -> Number:
        try:
            number = kind(value)
        except ValueError:
            number = None
        if number is None or not low <= number or (finite and number == float("inf")):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}")
        return number

    return parse


_at_least_zero = _bounded(int, 0, "a whole number of at least 0")
_at_least_two = _bounded(int, 2, "a whole number of at least 2")
_positive = _bounded(int, 1, "a whole number of at least 1")
_rate = _bounded(float, 0.0, "a number of at least 0")
_seconds = _bounded(float, 0.0, "seconds (at least 0)", finite=False)


def _command(sub: Any, name: str, **options: Any) -> argparse.ArgumentParser:
    """A command, whose own --help opens with its line of the list as a sentence."""
    line = options["help"]
    parser: argparse.ArgumentParser = sub.add_parser(
        name, description=f"{line[:1].upper()}{line[1:]}.", **options
    )
    return parser


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m simulator", description=DESCRIPTION, epilog=EXIT_CODES)
    sub = parser.add_subparsers(dest="command", required=True)
    common = _Parser(add_help=False)
    common.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="recorded conversations: files (a JSON/JSONL file may hold many) and folders "
        "(their files ending in .json, .jsonl or .traj, sorted by name)",
    )
    common.add_argument(
        "--format", choices=FORMATS, help="the files' format (detected in each when left out)"
    )
    common.add_argument(
        "--pricing",
        default=DEFAULT_PRICING_NAME,
        metavar="PRESET|FILE",
        help=f"price preset for cost ({', '.join(sorted(PRESETS))}), or a JSON price file "
        "(see docs/simulator.md)",
    )
    common.add_argument(
        "--measure",
        choices=["provider", "engine"],
        default="provider",
        help="count tokens as the provider bills them (the preset's tokenizer and framing, "
        "default) or as each config's own counter does",
    )
    common.add_argument(
        "--min-cacheable-prefix",
        type=int,
        default=None,
        metavar="TOKENS",
        help="shortest prefix a prompt cache serves (default: the preset's, 1024 for OpenAI)",
    )
    common.add_argument(
        "--no-inferred-prefix",
        action="store_true",
        help="leave out the prefix inferred for recordings that omit what the provider was "
        "sent before the messages (Claude Code logs: the system prompt and tool schemas); "
        "by default it counts in every call's tokens, cost and clear threshold",
    )
    common.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a table"
    )
    rep = _command(sub, "replay", parents=[common], help="replay under one or more configs")
    rep.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a JSON config (the REST API's config object); repeat to compare",
    )
    rep.add_argument(
        "--baseline",
        choices=["first", "none"],
        default="first",
        help="deltas against the first config, or against no reduction",
    )
    sw = _command(
        sub,
        "sweep",
        parents=[common],
        help="replay every combination of a grid on every run, and sum them over the runs",
    )
    what = sw.add_mutually_exclusive_group(required=True)
    what.add_argument("--grid", metavar="FILE", help="JSON object: knob -> list of values")
    what.add_argument(
        "--configs",
        metavar="FILE",
        help="instead of a grid, JSON object: name -> config (the REST API's config object)",
    )
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.add_argument(
        "--per-run",
        action="store_true",
        help="also print each run's own table and front before the corpus's",
    )
    sw.add_argument(
        "--workers",
        type=_positive,
        default=default_workers(),
        metavar="N",
        help=f"processes to replay in (default: one per CPU, {default_workers()} here): each "
        "takes one run at a time, or, for a single run, a share of its combinations (small "
        "sweeps stay in one)",
    )
    sw.add_argument(
        "--no-share",
        action="store_true",
        help="replay each combination alone, sharing nothing (the same results, slower)",
    )
    cal = _command(
        sub,
        "calibrate",
        help="compare the simulator's counts with the provider's on the shipped recordings",
    )
    _recordings_option(cal)
    cal.add_argument("--json", action="store_true", help="print JSON instead of a table")
    rec = _command(
        sub,
        "recommend",
        parents=[common],
        help="search the knobs and strategies for the config that saves most with recovery on "
        "a corpus within a budget of misses and re-fetches per 100 calls and of loss on any "
        "one run, with its expected result on runs it has not seen",
    )
    rec.add_argument(
        "--grid",
        default=str(DEFAULT_GRID),
        metavar="FILE",
        help="the coarse grid to start from, and the knobs and switches to search "
        "(default: simulator/grids/recommend.json)",
    )
    rec.add_argument(
        "--max-misses-per-100-calls",
        type=_rate,
        default=DEFAULT_BUDGET.misses_per_100_calls,
        metavar="X",
        help="most misses per 100 model calls over the corpus "
        f"(default: {DEFAULT_BUDGET.misses_per_100_calls:g})",
    )
    rec.add_argument(
        "--max-refetches-per-100-calls",
        type=_rate,
        default=DEFAULT_BUDGET.refetches_per_100_calls,
        metavar="Y",
        help="most re-fetches per 100 model calls over the corpus "
        f"(default: {DEFAULT_BUDGET.refetches_per_100_calls:g})",
    )
    rec.add_argument(
        "--max-run-loss",
        type=_rate,
        default=100 * DEFAULT_BUDGET.max_run_loss,
        metavar="P",
        help="the most any one run may cost above no reduction, with recovery, in percent of "
        f"its cost (default: {100 * DEFAULT_BUDGET.max_run_loss:g})",
    )
    rec.add_argument(
        "--no-tool-limits",
        action="store_true",
        help="search no limits per tool or per shell command kind (by default searched when "
        "the corpus's tools call for them and the grid does not set them)",
    )
    rec.add_argument(
        "--no-ceiling",
        action="store_true",
        help="do not measure the ceiling (what a clairvoyant reduction would save) beside "
        "the answer",
    )
    rec.add_argument(
        "--folds",
        type=_at_least_two,
        default=DEFAULT_FOLDS,
        metavar="K",
        help="folds of the estimate on runs not seen: pick on K-1, measure on the one left "
        f"out (default: {DEFAULT_FOLDS}, at most one per run)",
    )
    rec.add_argument(
        "--max-seconds",
        type=_seconds,
        default=300.0,
        metavar="S",
        help="stop refining when the next round would end later (default: 300); the coarse "
        "round always runs",
    )
    rec.add_argument("--quiet", action="store_true", help="no progress on stderr")
    rec.add_argument(
        "--workers",
        type=_positive,
        default=default_workers(),
        metavar="N",
        help=f"processes to replay in (default: one per CPU, {default_workers()} here)",
    )
    ceil = _command(
        sub,
        "ceiling",
        parents=[common],
        help="work out what a clairvoyant reduction would cost on a corpus: every output "
        "truncated as far as the agent's later use of it allows and cleared after its last "
        "use, or read back where that costs less",
    )
    ceil.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ceil.add_argument(
        "--workers",
        type=_positive,
        default=1,
        metavar="N",
        help="processes to work runs out in (default: 1)",
    )
    cov = _command(
        sub,
        "recovery",
        help="measure what agents did after their own tool cut an output: how often and "
        "at what cost they went back for the hidden part",
    )
    cov.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="recorded conversations, files or folders; each one given is a corpus, named by "
        "its last path component",
    )
    cov.add_argument(
        "--format", choices=FORMATS, help="the files' format (detected in each when left out)"
    )
    cov.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    return parser


def _recovery(args: argparse.Namespace, out: TextIO) -> None:
    corpora = [
        recovery.corpus_recovery(Path(path).name, load_files([path], fmt=args.format))
        for path in args.files
    ]
    if args.json:
        payload: dict[str, Any] = {"corpora": [c.to_dict() for c in corpora]}
        if len(corpora) > 1:
            payload["all"] = recovery.pooled(corpora).summary()
        out.write(json.dumps(payload) + "\n")
    else:
        out.write(recovery.table(corpora))


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line; returns the exit code (0 ok, 1 ``recommend`` found no config
    within its budget, 2 bad input)."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        # argparse prints --help to sys.stdout and then exits; both stay inside main.
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = _parser().parse_args(argv)
        if args.command == "replay":
            _replay(args, out)
        elif args.command == "calibrate":
            _calibrate(args, out)
        elif args.command == "recommend":
            return _recommend(args, out, err)
        elif args.command == "ceiling":
            _ceiling(args, out, err)
        elif args.command == "recovery":
            _recovery(args, out)
        else:
            _sweep(args, out, err)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 0
    except (InputError, ImportError_, RecordingsNotFound, ReductionError, ValueError) as exc:
        err.write(f"error: {exc}\n")
        return 2
    return 0
