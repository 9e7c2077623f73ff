"""Whether a config beats Eino's on the shipped recordings: ``python -m simulator front``.

It replays every shipped coding-agent recording (:data:`CODING`: OpenHands, SWE-agent and
Claude Code runs) under a fixed list of configs (:data:`FRONT_CONFIGS`): no reduction,
Eino's own knobs at four settings, and configs using the strategies beyond Eino. For
each it sums the cache-aware cost (the price preset's input, cached and cache-write
prices) and the re-fetches over the set, and checks the goal: a config that saves at
least :data:`GOAL_SAVING` of no reduction's cost with no more re-fetches than "clear at
40k", and costs no more than no reduction on any single recording. The shipped
customer-service recordings (:data:`SERVICE`, τ-bench and τ²-bench) are replayed too,
for that per-recording check only: their conversations (1.5k to 10k tokens) are too short
for a coding agent's thresholds to matter.

A config that sets ``clear_cache_aware`` is given the preset's cache prices unless it
names them (:func:`~simulator.pricing.with_cache_prices`).
This module measures; :mod:`simulator.cli` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from simulator.importers import load_conversations
from simulator.pricing import Pricing, with_cache_prices
from simulator.recording import RecordedConversation
from simulator.replay import replay
from simulator.results import Totals

__all__ = [
    "CODING",
    "FRONT_CONFIGS",
    "GOAL_SAVING",
    "SERVICE",
    "ConfigTotals",
    "FrontResult",
    "front",
    "render_front",
]

CODING = (
    "openhands-multi-swe-bench-llama4.jsonl",
    "openhands/fastjson2-2775-gpt-5.jsonl",
    "swe-agent/gpt-4o-test-repo-1c2844.traj",
    "swe-agent/gpt4-test-repo-i1.traj",
    "swe-agent/gpt4-test-repo-1c2844-old.traj",
    "swe-agent/gpt4-pydicom-1458.traj",
    "claude-code/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "claude-code/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    "claude-code/fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl",
)
"""The shipped coding-agent recordings (relative to the recordings folder): 11 runs."""
SERVICE = (
    "tau-bench-airline-gpt-4o.json",
    "tau2/airline-gpt-4.1-mini.json",
    "tau2/retail-gpt-4.1-mini.json",
    "tau2/telecom-gpt-4.1-mini.json",
)
"""The shipped customer-service recordings: 207 runs."""

FILE_READS = ("str_replace_editor", "Read", "read_file", "open")
"""The file-reading tools of the shipped agents (OpenHands' and SWE-agent's editor,
Claude Code's reader, SWE-agent 0.x's viewer): agents read a file again when they see it
cut, so the strategies' configs leave these whole at truncation."""

_CODING_KNOBS: dict[str, Any] = {
    "max_tokens_for_clear": 12_000,
    "max_length_for_trunc": 4_000,
    "trunc_exclude_tools": list(FILE_READS),
}
"""Eino's knobs set for the shipped coding agents."""
_STRATEGIES: dict[str, Any] = {
    **_CODING_KNOBS,
    "trunc_only_when_shorter": True,
    "clear_cache_aware": True,
    "clear_superseded": True,
}

FRONT_CONFIGS: tuple[tuple[str, dict[str, Any] | None], ...] = (
    ("no reduction", None),
    ("Eino: clear at 40k", {"max_tokens_for_clear": 40_000}),
    ("Eino: clear at 20k", {"max_tokens_for_clear": 20_000}),
    (
        "Eino: clear at 10k, truncate at 8k",
        {"max_tokens_for_clear": 10_000, "max_length_for_trunc": 8_000},
    ),
    ("Eino: clear at 12k, truncate commands at 4k", _CODING_KNOBS),
    (
        "strategies: the same, only when shorter, cache-aware, superseded",
        _STRATEGIES,
    ),
    (
        "strategies: and a manifest, 50-token digests",
        {**_STRATEGIES, "clear_offload_manifest": True, "clear_digest_tokens": 50},
    ),
)
"""Named configs, in the order the table shows them; the first is the baseline and the
second the re-fetch budget of the goal."""
GOAL_SAVING = 0.25
"""The share of no reduction's cache-aware cost a config must save to meet the goal."""


@dataclass
class ConfigTotals:
    """One config over a set of recordings."""

    name: str
    config: dict[str, Any] | None
    cost_usd: float = 0.0
    input_tokens_billed: int = 0
    refetches: int = 0
    costs: list[float] = field(default_factory=list)
    """Per recording, in the order of :attr:`FrontResult.recordings`."""
    run_refetches: list[int] = field(default_factory=list)
    """Per recording, as :attr:`costs`."""
    visible_shares: list[float] = field(default_factory=list)
    """Per recording, its mean share of tool output the model saw whole."""

    @property
    def visible(self) -> float:
        """The mean of :attr:`visible_shares` (each recording weighs the same)."""
        return sum(self.visible_shares) / len(self.visible_shares) if self.visible_shares else 1.0

    def add(self, totals: Totals) -> None:
        """One more recording's replay, after those already added."""
        self.cost_usd += totals.cost_usd
        self.input_tokens_billed += totals.input_tokens_billed
        self.refetches += totals.refetches
        self.costs.append(totals.cost_usd)
        self.run_refetches.append(totals.refetches)
        self.visible_shares.append(totals.mean_visible_tool_share)

    def saving(self, baseline: ConfigTotals) -> float:
        return 1 - self.cost_usd / baseline.cost_usd if baseline.cost_usd else 0.0

    def worse_than(self, baseline: ConfigTotals) -> list[int]:
        """Recordings (indexes) this config bills more than ``baseline`` for (to the
        micro-dollar the replay rounds to)."""
        return [i for i, (a, b) in enumerate(zip(self.costs, baseline.costs, strict=True)) if a > b]


@dataclass(frozen=True)
class FrontResult:
    """The configs over the coding set and the customer-service set."""

    pricing: str
    recordings: tuple[str, ...]
    coding: tuple[ConfigTotals, ...]
    service: tuple[ConfigTotals, ...]

    def meets_goal(self, index: int) -> bool:
        """Whether config ``index`` meets the goal (see the module docstring)."""
        base, budget, cfg = self.coding[0], self.coding[1], self.coding[index]
        return (
            cfg.saving(base) >= GOAL_SAVING
            and cfg.refetches <= budget.refetches
            and not cfg.worse_than(base)
            and not self.service[index].worse_than(self.service[0])
        )

    def goal_configs(self) -> list[int]:
        """The configs (indexes) that meet the goal."""
        return [i for i in range(2, len(self.coding)) if self.meets_goal(i)]


def _replay_set(
    conversations: Sequence[RecordedConversation],
    configs: Sequence[tuple[str, dict[str, Any] | None]],
    pricing: Pricing,
    tick: Callable[[], None],
) -> tuple[ConfigTotals, ...]:
    out = tuple(ConfigTotals(name, config) for name, config in configs)
    for conv in conversations:
        for totals in out:
            totals.add(
                replay(conv, with_cache_prices(totals.config, pricing), pricing=pricing).totals
            )
            tick()
    return out


def _load(root: Path, paths: Sequence[str]) -> list[RecordedConversation]:
    return [conv for path in paths for conv in load_conversations(root / path)]


def front(
    root: Path,
    pricing: Pricing,
    configs: Sequence[tuple[str, dict[str, Any] | None]] = FRONT_CONFIGS,
    progress: Callable[[int, int], None] | None = None,
) -> FrontResult:
    """Replay both sets under ``configs`` (the first is the baseline, the second the
    re-fetch budget); ``progress(done, total)`` after each replay."""
    coding = _load(root, CODING)
    service = _load(root, SERVICE)
    total = (len(coding) + len(service)) * len(configs)
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    return FrontResult(
        pricing=pricing.name,
        recordings=tuple(conv.name for conv in coding),
        coding=_replay_set(coding, configs, pricing, tick),
        service=_replay_set(service, configs, pricing, tick),
    )


def _short(name: str) -> str:
    """A recording's name without its file part where it has a run id."""
    return name.rsplit("#", 1)[-1] if "#" in name else name


def render_front(result: FrontResult) -> str:
    """The totals table, the per-recording table and the goal with its verdict, in Markdown
    (docs/simulator.md shows them as printed)."""
    base = result.coding[0]
    lines = [
        f"Cache-aware cost at {result.pricing} prices over the {len(result.recordings)} "
        f"shipped coding-agent runs (no reduction: ${base.cost_usd:,.4f}, "
        f"{base.input_tokens_billed:,} input tokens):",
        "",
        "| config | cost | saved | re-fetches | visible | input tokens "
        "| costs more than no reduction on | goal |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for i, totals in enumerate(result.coding):
        worse = totals.worse_than(base) + [
            -1 - j for j in result.service[i].worse_than(result.service[0])
        ]
        lines.append(
            f"| {totals.name} | ${totals.cost_usd:,.4f} | {100 * totals.saving(base):.1f}% "
            f"| {totals.refetches} | {100 * totals.visible:.1f}% | {totals.input_tokens_billed:,} "
            f"| {_worse_text(result, worse)} | {_verdict(result, i)} |"
        )
    lines += [
        "",
        "`visible`: the mean, over the runs, of the share of tool output the model saw whole.",
        "",
        "Per run, cost as a share of no reduction's (re-fetches):",
        "",
    ]
    lines += _per_run(result)
    met = result.goal_configs()
    names = ", ".join(f'"{result.coding[i].name}"' for i in met) or "no config"
    lines += [
        "",
        f"Goal: at least {GOAL_SAVING:.0%} saved, no more re-fetches than "
        f'"{result.coding[1].name}", and no run (customer-service runs included) billed '
        "more than with no reduction.",
        "",
        f"Goal met by: {names}.",
    ]
    return "\n".join(lines) + "\n"


def _worse_text(result: FrontResult, worse: list[int]) -> str:
    if not worse:
        return "none"
    coding = [_short(result.recordings[i]) for i in worse if i >= 0]
    service = sum(1 for i in worse if i < 0)
    parts = coding + ([f"{service} customer-service run(s)"] if service else [])
    return ", ".join(parts)


def _verdict(result: FrontResult, index: int) -> str:
    if index < 2:
        return "baseline" if index == 0 else "re-fetch budget"
    return "met" if result.meets_goal(index) else "missed"


def _per_run(result: FrontResult) -> list[str]:
    """One row per coding run, one column per config after the baseline."""
    base = result.coding[0]
    header = "| run | no reduction | " + " | ".join(t.name for t in result.coding[1:]) + " |"
    lines = [header, "|---|---:|" + "---:|" * (len(result.coding) - 1)]
    for r, name in enumerate(result.recordings):
        cells = [
            (f"{100 * t.costs[r] / base.costs[r]:.0f}%" if base.costs[r] else "-")
            + (f" ({t.run_refetches[r]})" if t.run_refetches[r] else "")
            for t in result.coding[1:]
        ]
        lines.append(f"| {_short(name)} | ${base.costs[r]:,.4f} | " + " | ".join(cells) + " |")
    return lines
