"""Result values and their JSON shape."""

from __future__ import annotations

import json

from reduction_app.engine import ReductionEvent
from simulator.replay import replay
from simulator.results import REFERENCE_STRATEGY, ReplayResult, StrategyEffect, strategy_effects
from tests.simulator.cases import ENGINE, HAND_CONFIG, hand_conversation

TOTALS = [
    "model_calls",
    "input_tokens_billed",
    "cached_tokens",
    "uncached_tokens",
    "cache_write_tokens",
    "cost_usd",
    "peak_context_tokens",
    "truncations",
    "clears",
    "chars_offloaded",
    "refetches",
    "repeated_calls",
    "mean_visible_tool_share",
    "misses",
    "cost_with_recovery_usd",
    "long_context_tokens",
]


def test_replay_result_to_dict_shape() -> None:
    data = replay(
        hand_conversation(), HAND_CONFIG, name="hand", min_cacheable_prefix=10, pricing=ENGINE
    ).to_dict()
    assert list(data) == [
        "name", "conversation", "config", "measure", "estimate", "inferred_prefix_tokens",
        "totals", "strategies", "miss_examples", "calls",
    ]  # fmt: skip
    # The hand conversation's clears are the reference's own: two results, 250 tokens.
    assert data["strategies"] == {"reference": {"results": 2, "tokens_saved": 250}}
    assert (data["measure"], data["estimate"]) == (
        "approx (the config's counter, no framing)",
        False,
    )
    assert (data["name"], data["conversation"]) == ("hand", "hand")
    assert data["config"]["max_length_for_trunc"] == 800
    assert list(data["totals"]) == TOTALS
    assert [list(c) for c in data["calls"]] == [
        [
            "index", "message_index", "context_tokens", "cached_tokens", "new_tokens",
            "cache_write_tokens", "visible_tool_share", "events", "clear",
        ]
    ] * 4  # fmt: skip
    assert [c["message_index"] for c in data["calls"]] == [2, 4, 6, 8]
    assert [c["index"] for c in data["calls"]] == [0, 1, 2, 3]
    event = data["calls"][2]["events"][0]
    assert (event["phase"], event["kind"], event["call_id"]) == ("clear", "tool", "call_1")
    assert data["calls"][2]["clear"] == {
        "tokens_before": 348,
        "tokens_after": 273,
        "threshold": 300,
        "cleared": True,
        "calls_cleared": 1,
    }
    assert data["miss_examples"] == []
    assert data["inferred_prefix_tokens"] is None  # a recording that keeps its whole request
    assert json.loads(json.dumps(data)) == data


def test_replay_result_from_dict_reads_results_stored_before_misses() -> None:
    """Totals stored before misses were measured read back: no miss, no recovery cost."""
    data = replay(hand_conversation(), HAND_CONFIG, pricing=ENGINE).to_dict()
    del data["calls"], data["miss_examples"]
    del data["totals"]["misses"], data["totals"]["cost_with_recovery_usd"]
    result = ReplayResult.from_dict(data)
    assert (result.totals.misses, result.totals.cost_with_recovery_usd) == (0, None)
    assert result.miss_examples == ()
    assert result.inferred_prefix_tokens is None


def test_replay_result_default_name() -> None:
    assert replay(hand_conversation(), None, pricing=ENGINE).name == "config"


def test_strategy_effects_group_clears_by_the_strategy_events_name() -> None:
    events = [
        ReductionEvent(phase="clear", kind="tool", tokens_saved=40, strategy="superseded"),
        ReductionEvent(phase="clear", kind="tool", tokens_saved=-3),
        ReductionEvent(phase="clear", kind="tool", tokens_saved=10, strategy="superseded"),
        ReductionEvent(phase="clear", kind="summary", tokens_saved=47),
        ReductionEvent(phase="truncation", kind="tool", tokens_saved=500),
    ]
    assert strategy_effects(events) == {
        "superseded": StrategyEffect(results=2, tokens_saved=50),
        REFERENCE_STRATEGY: StrategyEffect(results=1, tokens_saved=-3),
    }


def test_replay_result_from_dict_reads_back_a_result_without_calls() -> None:
    """What a sweep part stores comes back equal, as JSON does (through a round trip)."""
    import pytest

    from simulator.parallel import totals_only
    from simulator.results import ReplayResult

    config = {**HAND_CONFIG, "clear_superseded": True}
    summary = totals_only(replay(hand_conversation(), config, pricing=ENGINE))
    assert summary.strategies  # something to read back
    data = json.loads(json.dumps(summary.to_dict()))
    assert ReplayResult.from_dict(data) == summary
    full = replay(hand_conversation(), HAND_CONFIG, pricing=ENGINE).to_dict()
    with pytest.raises(ValueError, match="per-call records are not read back"):
        ReplayResult.from_dict(full)
