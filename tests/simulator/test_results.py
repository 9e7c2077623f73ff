"""Result values and their JSON shape."""

from __future__ import annotations

import json

from simulator.replay import replay
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
]


def test_replay_result_to_dict_shape() -> None:
    data = replay(
        hand_conversation(), HAND_CONFIG, name="hand", min_cacheable_prefix=10, pricing=ENGINE
    ).to_dict()
    assert list(data) == [
        "name", "conversation", "config", "measure", "estimate", "totals", "calls"
    ]  # fmt: skip
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
    assert json.loads(json.dumps(data)) == data


def test_replay_result_default_name() -> None:
    assert replay(hand_conversation(), None, pricing=ENGINE).name == "config"
