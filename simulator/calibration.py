"""The simulator's token counts against what providers really billed.

Recordings that kept the provider's own figures (:data:`SHIPPED`, :data:`PREFIX_SHIPPED`)
are replayed with no reduction under the preset of the model that ran them, and each
call's or run's context tokens set against the provider's count: what ``python -m
simulator calibrate`` prints and the test suite holds to 2%.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reduction_app.engine import Message, formats, get_token_counter
from simulator.importers import load_conversations, load_files
from simulator.metering import Meter
from simulator.prefix import fit_calls
from simulator.pricing import pricing_for
from simulator.recording import RecordedConversation
from simulator.replay import replay
from simulator.strategies import keep_last_observations, strategy_config, tool_names
from simulator.transcript import model_calls

__all__ = [
    "PREFIX_SHIPPED",
    "SHIPPED",
    "STRATEGY_RUNS",
    "FileCalibration",
    "PrefixCalibration",
    "Shipped",
    "StrategyCheck",
    "calibrate",
    "calibrate_prefix",
    "check_strategy",
    "render_prefix_table",
    "render_strategy_table",
    "render_table",
]


@dataclass(frozen=True)
class Shipped:
    """A shipped recording with provider figures, and how to replay it."""

    path: str
    """Relative to the recordings folder."""
    preset: str
    """The price preset of the model that ran it."""
    tau2_domain: str = ""
    """For τ²-bench files: the domain whose agent tools and prompt to put back."""


SHIPPED = (
    Shipped("tau2/airline-gpt-4.1-mini.json", "gpt-4.1-mini", "airline"),
    Shipped("tau2/retail-gpt-4.1-mini.json", "gpt-4.1-mini", "retail"),
    Shipped("tau2/telecom-gpt-4.1-mini.json", "gpt-4.1-mini", "telecom"),
    # SWE-agent 0.x runs by "gpt4": their costs fit GPT-4 Turbo's prices (cl100k_base).
    Shipped("swe-agent/gpt4-test-repo-i1.traj", "gpt-4-turbo"),
    Shipped("swe-agent/gpt4-test-repo-1c2844-old.traj", "gpt-4-turbo"),
    Shipped("swe-agent/gpt4-pydicom-1458.traj", "gpt-4-turbo"),
)


PREFIX_SHIPPED = (
    # Claude Opus 4.5 and 4.6, and Sonnet 4.5; every Claude preset but Haiku 3.5 counts
    # alike (cl100k_base, Anthropic framing), so the preset names only the prices.
    Shipped("claude-code-long", "claude-opus-4.5"),
    Shipped("claude-code", "claude-sonnet-4"),
)
"""Folders of Claude Code logs, replayed with the prefix they leave out inferred."""


STRATEGY_RUNS = (
    # Recorded under last_n_observations with n=5 (its replay_config says so).
    Shipped("swe-agent/gpt-4o-test-repo-1c2844.traj", "gpt-4o"),
    # Recorded with the full history; replayed as if run with n=5.
    Shipped("swe-agent/gpt4-test-repo-i1.traj", "gpt-4-turbo"),
    Shipped("swe-agent/gpt4-test-repo-1c2844-old.traj", "gpt-4-turbo"),
    Shipped("swe-agent/gpt4-pydicom-1458.traj", "gpt-4-turbo"),
)
"""SWE-agent runs replayed under SWE-agent's keep-last-N-observations strategy."""


@dataclass(frozen=True, kw_only=True)
class StrategyCheck:
    """One run under an agent's own strategy: rebuilt with the engine's knobs, and
    computed directly."""

    file: str
    strategy: dict[str, int]
    calls: int
    full_history: int
    """Tokens with every observation whole."""
    engine: tuple[int, ...]
    """Per call, the engine running the strategy."""
    direct: tuple[int, ...]
    """Per call, the strategy computed without the engine."""


@dataclass(frozen=True, kw_only=True)
class FileCalibration:
    """One file's simulated tokens against the provider's."""

    file: str
    preset: str
    conversations: int
    calls: int
    """Model calls compared (those with a provider figure)."""
    provider_tokens: int
    simulated_tokens: int
    worst_call: float | None
    """Largest relative difference of a single call, where per-call figures exist."""

    @property
    def ratio(self) -> float:
        return self.simulated_tokens / self.provider_tokens if self.provider_tokens else 0.0


@dataclass(frozen=True, kw_only=True)
class PrefixCalibration:
    """One folder of recordings that leave a prefix out: the provider's counts against the
    replay's, without the inferred prefix and with it, on the calls it was not inferred
    from."""

    folder: str
    preset: str
    conversations: int
    prefixes: tuple[int, ...]
    """The prefix inferred for each conversation, in tokens."""
    fit_calls: int
    """Calls the prefixes were inferred from (left out of the comparison)."""
    calls: int
    """Calls compared."""
    provider_tokens: int
    without_prefix: int
    """The replay's tokens on the calls compared, the prefix left out."""
    simulated_tokens: int
    """The same, the prefix counted."""
    worst_call: float | None
    """Largest relative difference of a single call compared, with the prefix."""

    @property
    def ratio(self) -> float:
        return self.simulated_tokens / self.provider_tokens if self.provider_tokens else 0.0

    @property
    def ratio_without(self) -> float:
        return self.without_prefix / self.provider_tokens if self.provider_tokens else 0.0


def calibrate_prefix(root: Path, item: Shipped) -> PrefixCalibration:
    """Replay every conversation of the folder ``item`` (under ``root``) with no reduction
    and compare the calls its prefix was not inferred from."""
    pricing = pricing_for(item.preset)
    conversations = load_files([root / item.path])
    prefixes: list[int] = []
    provider = without = simulated = calls = fitted = 0
    worst: float | None = None
    for conv in conversations:
        usage = conv.usage
        if usage is None or not usage.prompt_tokens:
            raise ValueError(f"{item.path}: {conv.name}: the recording kept no per-call figures")
        result = replay(conv, None, pricing=pricing)
        prefix = result.inferred_prefix_tokens
        if prefix is None:
            raise ValueError(f"{item.path}: {conv.name}: no prefix inferred")
        prefixes.append(prefix)
        fit = set(fit_calls(conv))
        fitted += len(fit)
        for call in result.calls:
            billed = usage.prompt_tokens.get(call.message_index)
            if billed is None or call.message_index in fit:
                continue
            provider += billed
            simulated += call.context_tokens
            without += call.context_tokens - prefix
            calls += 1
            off = abs(call.context_tokens - billed) / billed
            worst = off if worst is None else max(worst, off)
    return PrefixCalibration(
        folder=item.path,
        preset=item.preset,
        conversations=len(conversations),
        prefixes=tuple(prefixes),
        fit_calls=fitted,
        calls=calls,
        provider_tokens=provider,
        without_prefix=without,
        simulated_tokens=simulated,
        worst_call=worst,
    )


def render_prefix_table(rows: Sequence[PrefixCalibration]) -> str:
    """Per folder: the prefixes inferred, and the calls compared with and without them."""
    lines = [
        "| recordings | preset | runs | prefix (tokens) | fit calls | calls compared "
        "| provider tokens | without prefix | ratio | with prefix | ratio | worst call |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        low, high = min(r.prefixes), max(r.prefixes)
        median = sorted(r.prefixes)[len(r.prefixes) // 2]
        span = f"{low:,}–{high:,}, median {median:,}" if low != high else f"{low:,}"
        worst = "-" if r.worst_call is None else f"{100 * r.worst_call:.1f}%"
        lines.append(
            f"| {r.folder}/ | {r.preset} | {r.conversations} | {span} | {r.fit_calls} "
            f"| {r.calls:,} | {r.provider_tokens:,} | {r.without_prefix:,} "
            f"| {r.ratio_without:.4f} | {r.simulated_tokens:,} | {r.ratio:.4f} | {worst} |"
        )
    return "\n".join(lines) + "\n"


def _tau2_agent(conv: RecordedConversation, agent_dir: Path, domain: str) -> RecordedConversation:
    """``conv`` with the agent's real system prompt and tool schemas put back."""
    template = (agent_dir / "system-prompt-template.txt").read_text(encoding="utf-8")
    tools = json.loads((agent_dir / f"tools-{domain}.json").read_text(encoding="utf-8"))
    messages = list(conv.messages)
    if not messages or getattr(messages[0], "role", "") != "system":
        raise ValueError(f"{conv.name}: expected the policy as the first (system) message")
    messages[0] = Message.system(template.replace("{domain_policy}", messages[0].content))
    return dataclasses.replace(conv, messages=messages, tools=formats.tools_from_openai(tools))


def calibrate(root: Path, item: Shipped) -> FileCalibration:
    """Replay ``item`` (under ``root``) with no reduction and compare."""
    pricing = pricing_for(item.preset)
    provider = simulated = calls = 0
    worst: float | None = None
    conversations = load_conversations(root / item.path)
    for conv in conversations:
        if item.tau2_domain:
            conv = _tau2_agent(conv, root / "tau2" / "agent", item.tau2_domain)
        usage = conv.usage
        if usage is None:
            raise ValueError(f"{item.path}: {conv.name}: the recording kept no provider figures")
        result = replay(conv, None, pricing=pricing)
        if usage.prompt_tokens:
            for call in result.calls:
                billed = usage.prompt_tokens.get(call.message_index)
                if billed is None:
                    continue
                provider += billed
                simulated += call.context_tokens
                calls += 1
                off = abs(call.context_tokens - billed) / billed
                worst = off if worst is None else max(worst, off)
        elif usage.total_prompt_tokens is not None:
            if usage.api_calls is not None and usage.api_calls != result.totals.model_calls:
                raise ValueError(
                    f"{item.path}: the run made {usage.api_calls} calls, the replay "
                    f"{result.totals.model_calls}: the totals would not compare"
                )
            provider += usage.total_prompt_tokens
            simulated += result.totals.input_tokens_billed
            calls += result.totals.model_calls
    return FileCalibration(
        file=item.path,
        preset=item.preset,
        conversations=len(conversations),
        calls=calls,
        provider_tokens=provider,
        simulated_tokens=simulated,
        worst_call=worst,
    )


def render_table(rows: Sequence[FileCalibration]) -> str:
    """The per-file spread and the aggregate, as docs/simulator.md shows it."""
    header = "| file | preset | runs | calls | provider tokens | simulated | ratio | worst call |"
    lines = [header, "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        worst = "-" if r.worst_call is None else f"{100 * r.worst_call:.1f}%"
        lines.append(
            f"| {r.file} | {r.preset} | {r.conversations} | {r.calls} | {r.provider_tokens:,} "
            f"| {r.simulated_tokens:,} | {r.ratio:.4f} | {worst} |"
        )
    provider = sum(r.provider_tokens for r in rows)
    simulated = sum(r.simulated_tokens for r in rows)
    calls = sum(r.calls for r in rows)
    ratio = simulated / provider if provider else 0.0
    lines.append(f"| **all** | | | {calls} | {provider:,} | {simulated:,} | {ratio:.4f} | |")
    return "\n".join(lines) + "\n"


def check_strategy(root: Path, item: Shipped, default_n: int = 5) -> StrategyCheck:
    """Replay ``item`` under its recorded strategy (or keep-last-``default_n``) both ways."""
    pricing = pricing_for(item.preset)
    [conv] = load_conversations(root / item.path)
    strategy = dict(conv.strategy) or {"keep_last_observations": default_n}
    n = strategy["keep_last_observations"]
    engine = replay(conv, strategy_config(strategy, tool_names(conv.messages)), pricing=pricing)
    meter = Meter(pricing, get_token_counter(pricing.tokenizer or "approx"))
    direct = tuple(
        meter.request(keep_last_observations(conv.messages[:i], n), conv.tools)
        for i in model_calls(conv.messages)
    )
    full = replay(conv, None, pricing=pricing).totals.input_tokens_billed
    return StrategyCheck(
        file=item.path,
        strategy=strategy,
        calls=len(direct),
        full_history=full,
        engine=tuple(c.context_tokens for c in engine.calls),
        direct=direct,
    )


def render_strategy_table(rows: Sequence[StrategyCheck]) -> str:
    lines = [
        "| file | strategy | calls | full history | engine knobs | SWE-agent's rule | agree |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        n = r.strategy["keep_last_observations"]
        agree = "every call" if r.engine == r.direct else "no"
        lines.append(
            f"| {r.file} | last {n} observations | {r.calls} | {r.full_history:,} "
            f"| {sum(r.engine):,} | {sum(r.direct):,} | {agree} |"
        )
    return "\n".join(lines) + "\n"
