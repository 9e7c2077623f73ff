"""What the Compare and Tune pages show of a replay: the totals with their deltas, and
what the model was sent at one call under each config (the chart is ``charts``).

Input is a comparison as :mod:`simulator.stored` reads it (what a ``Simulation`` stores),
so inline replays and background ones render alike. The
side-by-side view takes the contexts ``simulator.replay.replay(contexts=...)`` keeps.
Nothing here touches the database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from reduction_app import engine
from reduction_app.engine import AgenticMessage, FunctionToolCall, FunctionToolResult
from reduction_app.engine.inspect import classify, is_clear_placeholder
from simulator.compare import compare
from simulator.importers import RecordedConversation
from simulator.metering import Meter
from simulator.misses import RECOVERY
from simulator.pricing import DEFAULT_PRICING, Pricing
from simulator.results import REFERENCE_STRATEGY
from simulator.stored import ComparisonResults
from simulator.transcript import with_stable_ids

__all__ = [
    "METRICS",
    "METRIC_HELP",
    "ReplayRun",
    "message_text",
    "miss_examples",
    "run_comparison",
    "side_by_side",
    "totals_rows",
]

PREVIEW_CHARS = 1_200
"""Characters of a message shown in the side-by-side view (the rest is counted)."""
SAME_PREVIEW_CHARS = 240


@dataclass
class ReplayRun:
    """A comparison's results (as a simulation stores them), the contexts
    each config kept, and the recorded messages (with the ids the replay gave them)."""

    results: ComparisonResults
    contexts: list[dict[int, tuple[Any, ...]]] = field(default_factory=list)
    originals: list[Any] = field(default_factory=list)


def run_comparison(
    recorded: RecordedConversation,
    configs: Sequence[tuple[str, Mapping[str, Any] | engine.ReductionConfig]],
    *,
    baseline: str = "first",
    call: int | None = None,
    pricing: Pricing = DEFAULT_PRICING,
    inferred_prefix: bool = True,
) -> ReplayRun:
    """Replay every config, counted and priced by ``pricing``; keep what model call
    ``call`` (0-based) was sent. ``inferred_prefix``: count the prefix the recording
    left out, where one is inferred (``simulator.prefix``)."""
    contexts = {call} if call is not None else None
    done = compare(
        recorded,
        list(configs),
        baseline=baseline,
        pricing=pricing,
        contexts=contexts,
        inferred_prefix=inferred_prefix,
    )
    return ReplayRun(
        results=done.stored(),
        contexts=[r.contexts for r in done.results],
        originals=with_stable_ids(recorded.messages),
    )


# The totals -----------------------------------------------------------------------------


def _signed(number: float, fmt: str) -> str:
    text = fmt.format(abs(number))
    return f"+{text}" if number > 0 else f"−{text}" if number < 0 else text


def _cached_share(totals: Mapping[str, Any]) -> float:
    billed = totals["input_tokens_billed"]
    return totals["cached_tokens"] / billed if billed else 0.0


METRICS: tuple[tuple[str, str], ...] = (
    ("input_tokens_billed", "billed"),
    ("cached_share", "cached share"),
    ("cost_usd", "cost"),
    ("cost_with_recovery_usd", "cost with recovery"),
    ("peak_context_tokens", "peak context"),
    ("chars_offloaded", "offloaded"),
    ("truncations", "truncations"),
    ("clears", "clears"),
    ("refetches", "re-fetches"),
    ("misses", "misses"),
    ("repeated_calls", "repeated calls"),
    ("mean_visible_tool_share", "visible share"),
)
METRIC_HELP: dict[str, str] = {
    "refetches": "Calls repeating an earlier call whose result was hidden by then, and that got "
    "the same output back.",
    "misses": "Tool outputs the reduction hid (cleared, or the middle of a truncated output) "
    "holding a name, path or identifier the agent typed later, at a call whose context "
    "showed it nowhere.",
    "cost_with_recovery_usd": "The cost plus, per miss, what agents were measured to spend "
    f"going back for a hidden output: {RECOVERY.calls:g} model calls, bringing "
    f"{RECOVERY.output_share:.0%} of it back.",
}
"""What a metric means, for the column heading's tooltip."""
_LOWER_IS_BETTER = {
    "input_tokens_billed": True,
    "cost_usd": True,
    "peak_context_tokens": True,
    "refetches": True,
    "cost_with_recovery_usd": True,
    "misses": True,
    "cached_share": False,
    "mean_visible_tool_share": False,
}


def _value_text(key: str, value: float) -> str:
    if key in ("input_tokens_billed", "peak_context_tokens"):
        return f"{int(value):,} tok"
    if key == "chars_offloaded":
        return f"{int(value):,} chars"
    if key in ("cost_usd", "cost_with_recovery_usd"):
        return f"${value:,.4f}"
    if key in ("cached_share", "mean_visible_tool_share"):
        return f"{100 * value:.1f}%"
    return f"{int(value):,}"


def _delta_text(key: str, delta: float, base: float) -> str:
    if key in ("cached_share", "mean_visible_tool_share"):
        return _signed(100 * delta, "{:.1f} pp")
    if key in ("cost_usd", "cost_with_recovery_usd"):
        return _signed(delta, "${:,.4f}")
    unit = {
        "input_tokens_billed": " tok",
        "peak_context_tokens": " tok",
        "chars_offloaded": " chars",
    }
    text = _signed(delta, "{:,.0f}") + unit.get(key, "")
    if base and key in unit:
        text += f" ({_signed(100 * delta / base, '{:.1f}%')})"
    return text


_UNKNOWN_BEFORE = frozenset({"misses", "cost_with_recovery_usd"})
"""Metrics that results stored before they existed cannot show as 0: shown as unknown,
with no delta."""


def _unknown(key: str, label: str, value: float | None) -> dict[str, Any]:
    text = "—" if value is None else _value_text(key, value)
    help_ = METRIC_HELP.get(key, "")
    return {"key": key, "label": label, "help": help_, "value": text, "delta": "", "tone": ""}


def _cells(totals: dict[str, Any], base_all: dict[str, Any]) -> list[dict[str, Any]]:
    """Per metric the value of ``totals`` and its delta against ``base_all``."""
    cells = []
    for key, label in METRICS:
        if key in _UNKNOWN_BEFORE and (totals.get(key) is None or base_all.get(key) is None):
            cells.append(_unknown(key, label, totals.get(key)))
            continue
        # Results stored before a metric existed lack it: shown as 0.
        totals.setdefault(key, 0)
        base_all.setdefault(key, 0)
        delta = totals[key] - base_all[key]
        cells.append(
            {
                "key": key,
                "label": label,
                "help": METRIC_HELP.get(key, ""),
                "value": _value_text(key, totals[key]),
                "delta": _delta_text(key, delta, base_all[key]),
                "tone": _tone(delta, _LOWER_IS_BETTER.get(key)),
            }
        )
    return cells


def _tone(delta: float, lower_is_better: bool | None) -> str:
    """``better``, ``worse``, or ``""`` for no change or a metric with no better side."""
    if not delta or lower_is_better is None:
        return ""
    return "better" if (delta < 0) == lower_is_better else "worse"


def _all_figures(figures: Mapping[str, Any]) -> dict[str, Any]:
    return dict(figures, cached_share=_cached_share(figures))


def totals_rows(
    results: ComparisonResults, *, also_against: str | None = None
) -> list[dict[str, Any]]:
    """Per config: its name, whether it is the baseline, and per metric the value and the
    delta against the baseline, formatted, with ``better`` / ``worse`` / ``""``.

    ``also_against`` names a second config (Tune's starting one): every other row's
    cells then also hold ``second`` (``delta`` and ``tone``) against it."""
    runs = results.results
    base = next((r for r in runs if r.name == results.baseline), None)
    base_totals = base.totals.figures() if base else None
    if base_totals is None and runs:
        # baseline "none": the deltas are against no reduction, which is not a column
        first = runs[0]
        figures = first.totals.figures()
        base_totals = {k: figures[k] - first.deltas[k] for k in figures}
    second = next((r for r in runs if r.name == also_against), None)
    rows = []
    for run in runs:
        totals = _all_figures(run.totals.figures())
        assert base_totals is not None
        cells = _cells(totals, _all_figures(base_totals))
        if second is not None and run is not second and run is not base:
            against = _cells(dict(totals), _all_figures(second.totals.figures()))
            for cell, other in zip(cells, against, strict=True):
                cell["second"] = {"delta": other["delta"], "tone": other["tone"]}
        rows.append(
            {
                "name": run.name,
                "is_baseline": run is base,
                "is_second": run is second,
                "cells": cells,
                "totals": totals,
            }
        )
    return rows


def strategy_table(results: ComparisonResults) -> dict[str, Any] | None:
    """Which clear strategy removed what, per config: ``{"names": [...], "rows": [{"name",
    "cells": [{"results", "tokens_saved"} | None, ...]}]}``, strategies in order of first
    use. ``None`` when no config used a strategy beyond the reference's (the table would
    only repeat the clears column), and for results stored before strategies were kept."""
    runs = results.results
    names: list[str] = []
    for run in runs:
        for name in run.strategies:
            if name not in names:
                names.append(name)
    if not set(names) - {REFERENCE_STRATEGY}:
        return None
    rows = [
        {"name": run.name, "cells": [run.strategies.get(name) for name in names]} for run in runs
    ]
    return {"names": names, "rows": rows}


def miss_examples(results: ComparisonResults) -> list[dict[str, Any]]:
    """Per config that missed something: its name, its misses and the first of them as
    stored (``call`` made 1-based, as the pages number calls). Results stored before
    misses were measured have none."""
    out = []
    for run in results.results:
        if run.miss_examples:
            out.append(
                {
                    "name": run.name,
                    "misses": run.totals.misses,
                    "examples": [
                        {"call": m.call + 1, "tool": m.tool, "string": m.string}
                        for m in run.miss_examples
                    ],
                }
            )
    return out


# What the model was sent ----------------------------------------------------------------


def message_text(msg: Any) -> str:
    """A message as plain text: its content, then one ``→ tool(arguments)`` per call."""
    lines: list[str] = []
    if isinstance(msg, AgenticMessage):
        for block in msg.content_blocks:
            if isinstance(block, FunctionToolCall):
                lines.append(f"→ {block.name}({block.arguments})")
            elif isinstance(block, FunctionToolResult):
                lines.extend(c.text for c in block.content if c.text)
            elif text := getattr(block, "text", ""):
                lines.append(text)
        return "\n".join(lines)
    if msg.content:
        lines.append(msg.content)
    parts = tuple(msg.user_input_multi_content) + tuple(msg.assistant_gen_multi_content)
    lines.extend(p.text for p in parts if p.text)
    lines.extend(f"→ {c.name}({c.arguments})" for c in msg.tool_calls)
    return "\n".join(lines)


def _tool_name(msg: Any) -> str:
    if isinstance(msg, AgenticMessage):
        names = [b.name for b in msg.content_blocks if isinstance(b, FunctionToolResult)]
        return ", ".join(n for n in names if n)
    return str(msg.tool_name or "")


def _preview(text: str, limit: int) -> tuple[str, int]:
    """The first ``limit`` characters, and how many were left out."""
    return text[:limit], max(0, len(text) - limit)


def _change(original: str, sent: str, kind: str | None) -> str:
    if sent == original:
        return ""
    if is_clear_placeholder(sent):
        return "cleared"
    return "truncated" if kind == "tool_result" else "rewritten"


def side_by_side(
    comparison: ReplayRun,
    call: int,
    token_counters: Sequence[str],
    pricing: Pricing = DEFAULT_PRICING,
) -> list[dict[str, Any]]:
    """One row per message sent at ``call``: where every config sent the same text, a
    single cell; otherwise one cell per config, each marked with what changed against
    the recording (``cleared``, ``truncated``). Each message's tokens are counted as
    ``pricing`` bills them, the measure of the totals (a preset without a tokenizer
    counts with each config's counter)."""
    sent = [contexts.get(call, ()) for contexts in comparison.contexts]
    counters = [Meter(pricing, engine.get_token_counter(name)) for name in token_counters]
    length = max((len(s) for s in sent), default=0)
    rows = []
    for index in range(length):
        original = comparison.originals[index] if index < len(comparison.originals) else None
        original_text = message_text(original) if original is not None else ""
        kind = classify(original) if original is not None else None
        cells: list[dict[str, Any] | None] = []
        for messages, counter in zip(sent, counters, strict=True):
            if index >= len(messages):
                cells.append(None)
                continue
            msg = messages[index]
            text = message_text(msg)
            preview, more = _preview(text, PREVIEW_CHARS)
            cells.append(
                {
                    "text": preview,
                    "more": more,
                    "chars": len(text),
                    "tokens": counter.message(msg),
                    "change": _change(original_text, text, kind),
                }
            )
        texts = {c["text"] + str(c["more"]) for c in cells if c is not None}
        same = len(texts) == 1 and None not in cells
        first = next(c for c in cells if c is not None)
        shown = original if original is not None else sent[0][index]
        rows.append(
            {
                "number": index + 1,
                "role": getattr(shown, "role", ""),
                "tool": _tool_name(shown),
                "same": same,
                "same_text": first["text"][:SAME_PREVIEW_CHARS],
                "same_more": first["chars"] - len(first["text"][:SAME_PREVIEW_CHARS]),
                "same_change": first["change"],
                "same_tokens": first["tokens"],
                "cells": cells,
                "differs": not same or any(c and c["change"] for c in cells),
            }
        )
    return rows
