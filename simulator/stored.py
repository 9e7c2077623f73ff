"""What a simulation hands the dashboard: one typed value per kind of result (replay, sweep,
corpus sweep, recommendation), with its kind and version, and the one reader (:func:`load`)
and writer (:func:`dump`) of their JSON, so no reader sniffs keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import msgspec

from simulator.results import ClearPass, MissExample, ReplayResult, StrategyEffect

__all__ = [
    "KINDS",
    "RESULTS_VERSION",
    "ComparedRun",
    "ComparisonResults",
    "CorpusBaseline",
    "CorpusCombination",
    "CorpusSweepResults",
    "CorpusTotals",
    "FrontEntry",
    "HeldOut",
    "Kind",
    "RecommendationResults",
    "ReplayRun",
    "ReplayTotals",
    "ResultsError",
    "SimulationResults",
    "StoredCall",
    "SweepBaseline",
    "SweepResults",
    "SweepRow",
    "dump",
    "fields",
    "load",
]

RESULTS_VERSION = 1
"""The version :func:`dump` writes. Rows stored before results carried one are read as
version 0 (the same fields, no ``kind``)."""

Kind = Literal["replay", "sweep", "corpus_sweep", "recommend"]


class ResultsError(ValueError):
    """Stored results this code cannot read: an unknown kind or version, or a field of
    the wrong type (the message quotes it)."""


class _Value(msgspec.Struct, frozen=True, kw_only=True):
    """A stored value: immutable, read field by field; keys it does not name are left."""


# Totals ----------------------------------------------------------------------------------


class ReplayTotals(_Value, frozen=True, kw_only=True):
    """A replay summed up (:class:`simulator.results.Totals` as stored). ``None``: not in
    these results (stored before the measure existed), shown as unknown, not 0."""

    model_calls: int | None = None
    input_tokens_billed: int | None = None
    cached_tokens: int | None = None
    uncached_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = None
    peak_context_tokens: int | None = None
    truncations: int | None = None
    clears: int | None = None
    chars_offloaded: int | None = None
    refetches: int | None = None
    repeated_calls: int | None = None
    mean_visible_tool_share: float | None = None
    misses: int | None = None
    cost_with_recovery_usd: float | None = None
    long_context_tokens: int | None = None

    def figures(self) -> dict[str, float]:
        """The figures these totals hold, by name (those not stored left out)."""
        return {k: v for k, v in msgspec.structs.asdict(self).items() if v is not None}


class CorpusTotals(_Value, frozen=True, kw_only=True):
    """One config's sums over a corpus of runs
    (:class:`simulator.corpus_sweep.ConfigTotals`, as a sweep stores them)."""

    cost_usd: float
    cost_with_recovery_usd: float | None = None
    cost_without_cache_usd: float | None = None
    input_tokens_billed: int | None = None
    refetches: int = 0
    misses: int | None = None


class SweepBaseline(_Value, frozen=True, kw_only=True):
    """What a sweep's savings are against: no reduction, named, with its totals."""

    name: str
    totals: ReplayTotals


class CorpusBaseline(_Value, frozen=True, kw_only=True):
    """What a corpus sweep's savings are against: no reduction, with its sums."""

    name: str
    totals: CorpusTotals


# A replay --------------------------------------------------------------------------------


class StoredCall(_Value, frozen=True, kw_only=True):
    """One model call of a replay (:class:`simulator.results.CallRecord` as stored)."""

    index: int
    message_index: int = 0
    context_tokens: int
    cached_tokens: int
    new_tokens: int
    cache_write_tokens: int = 0
    visible_tool_share: float
    events: tuple[dict[str, Any], ...] = ()
    """The engine's events since the previous call, as the engine writes them."""
    clear: ClearPass


class ReplayRun(_Value, frozen=True, kw_only=True):
    """One config replayed on one conversation, call by call
    (:meth:`simulator.results.ReplayResult.to_dict`)."""

    name: str
    conversation: str = ""
    config: dict[str, Any] = {}
    measure: str = ""
    estimate: bool = False
    inferred_prefix_tokens: int | None = None
    totals: ReplayTotals
    strategies: dict[str, StrategyEffect] = {}
    miss_examples: tuple[MissExample, ...] | None = None
    """``None`` in results stored before misses were measured."""
    calls: tuple[StoredCall, ...] = ()

    @classmethod
    def of(cls, result: ReplayResult) -> ReplayRun:
        """``result`` as stored."""
        return msgspec.convert(result.to_dict(), cls)


class ComparedRun(ReplayRun, frozen=True, kw_only=True):
    """A config of a comparison: its replay and each total minus the baseline's."""

    deltas: dict[str, float] = {}


class ComparisonResults(_Value, frozen=True, kw_only=True):
    """Configs replayed on one conversation (:class:`simulator.compare.Comparison`)."""

    KIND: ClassVar[Kind] = "replay"
    baseline: str
    """The baseline's name: one of ``results``, or ``baseline_result``'s."""
    results: tuple[ComparedRun, ...]
    baseline_result: ReplayRun | None = None
    """No reduction replayed, when it is none of the configs."""

    @property
    def base(self) -> ReplayRun | None:
        """The baseline's run: one of the configs, else ``baseline_result``."""
        named = next((r for r in self.results if r.name == self.baseline), None)
        return named if named is not None else self.baseline_result


# Sweeps ----------------------------------------------------------------------------------


class SweepRow(_Value, frozen=True, kw_only=True):
    """One combination of a sweep of one conversation: its totals and place."""

    name: str = ""
    config: dict[str, Any] | None = None
    totals: ReplayTotals = ReplayTotals()
    pareto: bool = False
    cost_saved: float | None = None


class SweepResults(_Value, frozen=True, kw_only=True):
    """A grid swept on one conversation (:class:`simulator.compare.SweepResult`)."""

    KIND: ClassVar[Kind] = "sweep"
    baseline: SweepBaseline | None = None
    results: tuple[SweepRow, ...] = ()
    pareto_front: tuple[int, ...] = ()


class CorpusCombination(_Value, frozen=True, kw_only=True):
    """One combination of a sweep over several conversations, summed over them."""

    name: str = ""
    combination: str = ""
    """The combination as ``knob=value,...``."""
    config: dict[str, Any] | None = None
    totals: CorpusTotals
    cost_saved: float | None = None
    cost_saved_with_recovery: float | None = None
    """``None`` in results stored before misses were measured (the pages then work it
    out from the totals, where they hold a cost with recovery)."""
    tokens_saved: float | None = None
    billed_more: int | None = None
    billed_more_runs: tuple[str, ...] = ()
    billed_more_with_recovery: int | None = None
    billed_more_with_recovery_runs: tuple[str, ...] = ()
    """The runs counted in ``billed_more_with_recovery``, by name (empty in results
    stored before they were named)."""
    pareto: bool = False


class CorpusSweepResults(_Value, frozen=True, kw_only=True):
    """A grid swept over several conversations (:class:`simulator.corpus_sweep.CorpusSweep`)."""

    KIND: ClassVar[Kind] = "corpus_sweep"
    runs: tuple[str, ...] = ()
    pricing: str = ""
    baseline: CorpusBaseline | None = None
    combinations: tuple[CorpusCombination, ...] = ()
    pareto_front: tuple[int, ...] = ()


# A recommendation ------------------------------------------------------------------------


class FrontEntry(_Value, frozen=True, kw_only=True):
    """A config a recommendation measured over the corpus, with recovery counted."""

    config: dict[str, Any] | None = None
    saved_with_recovery: float | None = None
    misses: int | None = None
    misses_per_100_calls: float | None = None
    refetches: int | None = None
    refetches_per_100_calls: float | None = None
    run_loss: float | None = None
    runs_worse: int | None = None


class HeldOut(_Value, frozen=True, kw_only=True):
    """What the recommendation method did on runs it had not seen
    (:class:`simulator.recommend.Expected`)."""

    saved_with_recovery: float
    low: float
    high: float
    misses_per_100_calls: float
    run_loss: float
    folds: int


class RecommendationResults(_Value, frozen=True, kw_only=True):
    """A recommendation's answer (:class:`simulator.recommend.Recommendation`)."""

    KIND: ClassVar[Kind] = "recommend"
    config: dict[str, Any] | None = None
    """The config recommended; ``None`` when none within the budget saves anything."""
    pricing: str = ""
    runs: int = 0
    calls: int = 0
    saved: float | None = None
    saved_with_recovery: float | None = None
    misses: int | None = None
    misses_per_100_calls: float | None = None
    refetches: int | None = None
    refetches_per_100_calls: float | None = None
    run_loss: float | None = None
    runs_worse: int | None = None
    baseline_cost_usd: float | None = None
    """No reduction's cost on the same runs (``None`` in results stored before it was)."""
    cost_with_recovery_usd: float | None = None
    """The config recommended's cost, recovery counted; ``None`` without one."""
    configs_tried: int | None = None
    """How many configs the search replayed, each on every run."""
    budget: dict[str, float] = {}
    """Each limit of the budget by name (:class:`simulator.recommend.Budget`)."""
    expected: HeldOut | None = None
    ceiling: dict[str, Any] | None = None
    """What a clairvoyant reduction saves (:mod:`simulator.ceiling`), when measured."""
    ceiling_share: float | None = None
    binding: str | None = None
    nearest: tuple[FrontEntry, ...] = ()
    front: tuple[FrontEntry, ...] = ()
    seconds: float = 0.0


SimulationResults = ComparisonResults | SweepResults | CorpusSweepResults | RecommendationResults

KINDS: dict[str, type[SimulationResults]] = {
    cls.KIND: cls
    for cls in (ComparisonResults, SweepResults, CorpusSweepResults, RecommendationResults)
}
"""Each kind's type, by the name :func:`dump` writes."""


# Reading and writing ---------------------------------------------------------------------


def dump(value: SimulationResults) -> dict[str, Any]:
    """``value`` as a simulation stores it: JSON values, ``kind`` and ``version`` first."""
    return {"kind": value.KIND, "version": RESULTS_VERSION, **fields(value)}


def fields(value: SimulationResults) -> dict[str, Any]:
    """``value``'s fields as JSON values, without its kind and version (what the
    simulator's ``recommend --json`` prints)."""
    out: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(value))
    return out


def load(data: Mapping[str, Any], *, legacy_kind: Kind | None = None) -> SimulationResults:
    """The results :func:`dump` wrote, or that were stored before results carried a kind
    and version: those are read as ``legacy_kind`` (the caller knows it from its
    simulation). Raises :class:`ResultsError` for a version or kind not known here (refused,
    never guessed at), or a field of the wrong type."""
    if not isinstance(data, Mapping):
        raise ResultsError(f"results: expected a JSON object, got {type(data).__name__}")
    version = data.get("version", 0)
    if version not in (0, RESULTS_VERSION) or isinstance(version, bool):
        raise ResultsError(
            f"results version {version!r} is not one this version of Reduction Lab reads "
            f"(it reads 0 to {RESULTS_VERSION})"
        )
    kind = data.get("kind") if version else legacy_kind
    if kind is None:
        raise ResultsError("results stored without a kind: say which kind they are")
    cls = KINDS.get(kind)
    if cls is None:
        raise ResultsError(f"results of kind {kind!r}: expected one of {sorted(KINDS)}")
    fields = {k: v for k, v in data.items() if k not in ("kind", "version")}
    if cls is ComparisonResults:
        fields = _with_clear_passes(fields)
    try:
        return msgspec.convert(fields, cls)
    except msgspec.ValidationError as exc:
        raise ResultsError(f"results of kind {kind!r}: {exc}") from exc


def _with_clear_passes(fields: dict[str, Any]) -> dict[str, Any]:
    """A comparison whose calls each hold their clear pass: results stored before calls
    carried it take it from the call's summary event (the same figures), and without one
    (the clear phase was off) from ``context_tokens``, with no threshold."""

    def run(data: Any) -> Any:
        if not isinstance(data, Mapping) or not isinstance(data.get("calls"), list):
            return data
        return {**data, "calls": [call(c) for c in data["calls"]]}

    def call(data: Any) -> Any:
        if not isinstance(data, Mapping) or data.get("clear") is not None:
            return data
        events = data.get("events") or ()
        summary = next(
            (e for e in reversed(events) if isinstance(e, Mapping) and e.get("kind") == "summary"),
            None,
        )
        if summary is not None:
            clear = {
                "tokens_before": summary.get("tokens_before"),
                "tokens_after": summary.get("tokens_after"),
                "threshold": summary.get("threshold"),
                "cleared": summary.get("reason") == "applied",
                "calls_cleared": summary.get("calls_cleared", 0),
            }
        else:
            tokens = data.get("context_tokens")
            clear = {
                "tokens_before": tokens,
                "tokens_after": tokens,
                "threshold": None,
                "cleared": False,
                "calls_cleared": 0,
            }
        return {**data, "clear": clear}

    out = dict(fields)
    if isinstance(out.get("results"), list):
        out["results"] = [run(r) for r in out["results"]]
    out["baseline_result"] = run(out.get("baseline_result"))
    return out
