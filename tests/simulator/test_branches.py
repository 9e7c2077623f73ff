"""Replaying configs together (``replay_many``) gives what each replay alone gives."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest

from reduction_app.engine.formats import parse_tools
from simulator.compare import grid_configs
from simulator.corpus import TOOLS_OPENAI, build_conversation
from simulator.importers import RecordedConversation, load_conversations
from simulator.members import CLEAR_ONLY, truncation_key
from simulator.pricing import Pricing, pricing_for, with_cache_prices
from simulator.replay import Prepared, no_reduction, replay, replay_many
from tests.conftest import CONVERSATIONS, needs_recordings
from tests.simulator.cases import ENGINE, hand_conversation

Named = list[tuple[str, Mapping[str, Any] | None]]

# Thresholds the conversations cross early, late and never; two truncation limits, so
# configs fork from a branch at different calls, several at the same call, and two
# truncation keys share nothing; and the strategies whose passes stash their writes and
# drop them (clear_at_least_tokens, clear_cache_aware) or add a manifest.
GRID = {
    "max_tokens_for_clear": [3_000, 6_000, 20_000, 10_000_000],
    "clear_retention_suffix_limit": [1, 3],
    "max_length_for_trunc": [2_000, 50_000],
}
STRATEGIES: Named = [
    ("at least", {"max_tokens_for_clear": 5_000, "clear_at_least_tokens": 4_000}),
    ("cache-aware", {"max_tokens_for_clear": 5_000, "clear_cache_aware": True}),
    (
        "everything",
        {
            "max_tokens_for_clear": 4_000,
            "max_length_for_trunc": 2_000,
            "trunc_only_when_shorter": True,
            "clear_superseded": True,
            "clear_offload_manifest": True,
            "clear_digest_tokens": 40,
        },
    ),
    ("cl100k", {"max_tokens_for_clear": 4_000, "token_counter": "cl100k_base"}),
    ("off", None),
    # Alone in their truncation key, these two cross their threshold at the same call and
    # both clear: no config stays in the branch, one carries it on and the other forks.
    ("pair 1", {"max_tokens_for_clear": 8_000, "max_length_for_trunc": 3_000}),
    (
        "pair 2",
        {
            "max_tokens_for_clear": 8_000,
            "max_length_for_trunc": 3_000,
            "clear_retention_suffix_limit": 2,
        },
    ),
]


def _named(pricing: Pricing) -> Named:
    named: Named = [(f"grid {i}", c) for i, c in enumerate(grid_configs(GRID))]
    return [(name, with_cache_prices(c, pricing)) for name, c in [*named, *STRATEGIES]]


@cache
def _corpus() -> RecordedConversation:
    messages = build_conversation(min_messages=300, min_chars=300_000)
    return RecordedConversation("corpus", messages, parse_tools("openai_chat", TOOLS_OPENAI))


def _alone(conversation: RecordedConversation, named: Named, pricing: Pricing) -> list[Any]:
    return [
        replay(conversation, config, name=name, pricing=pricing, contexts={0, 5, 40})
        for name, config in named
    ]


@needs_recordings
@pytest.mark.parametrize("pricing", ["gpt-4o", "claude-sonnet-4.5", "engine"])
def test_replay_many_equals_each_replay_on_real_recordings(pricing: str) -> None:
    """Every field of every result, per-call records, events and kept contexts included."""
    chosen = ENGINE if pricing == "engine" else pricing_for(pricing)
    named = _named(chosen)
    runs = load_conversations(CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl")
    runs += load_conversations(CONVERSATIONS / "openhands" / "fastjson2-2775-gpt-5.jsonl")
    for conversation in runs:
        together = replay_many(conversation, named, pricing=chosen, contexts={0, 5, 40})
        assert together == _alone(conversation, named, chosen), conversation.name


def test_replay_many_equals_each_replay_on_the_corpus() -> None:
    pricing = pricing_for("gpt-4o")
    named = _named(pricing)
    finished: list[list[int]] = []
    together = replay_many(
        _corpus(), named, pricing=pricing, contexts={0, 5, 40}, done=finished.append
    )
    assert together == _alone(_corpus(), named, pricing)
    assert sorted(p for batch in finished for p in batch) == list(range(len(named)))
    # The configs that truncate alike and never clear (10M tokens) end together, having
    # shared the whole walk.
    never = {
        i
        for i, (_, c) in enumerate(named)
        if c and c.get("max_tokens_for_clear") == 10_000_000 and c["max_length_for_trunc"] == 2_000
    }
    assert len(never) == 2 and any(never <= set(batch) for batch in finished)
    assert sum(1 for r in together if r.totals.clears) > 10


def test_replay_many_truncates_once_per_truncation_key() -> None:
    """Branches of one truncation key take the same message objects from the first."""
    pricing = pricing_for("gpt-4o")
    conversation = _corpus()
    prepared = Prepared(conversation, pricing)
    named = _named(pricing)
    results = replay_many(conversation, named, pricing=pricing, prepared=prepared)
    keys = {truncation_key_of(c or no_reduction()) for _, c in named}
    results_messages = sum(1 for m in prepared.messages if m.role == "tool")
    assert len(prepared.truncated) == len(keys) * results_messages
    # A second batch on the same prepared conversation gives the same results again.
    again = replay_many(conversation, named[:3], pricing=pricing, prepared=prepared)
    assert again == results[:3]


def truncation_key_of(config: Mapping[str, Any]) -> str | None:
    from reduction_app.engine import InMemoryBackend, config_from_dict

    return truncation_key(config_from_dict(config, backend=InMemoryBackend()))


def test_truncation_key_leaves_out_only_the_clear_fields() -> None:
    base = truncation_key_of({})
    assert base is not None
    for field, value in [
        ("max_tokens_for_clear", 10),
        ("clear_retention_suffix_limit", 3),
        ("clear_superseded", True),
        ("skip_clear", True),
    ]:
        assert field in CLEAR_ONLY
        assert truncation_key_of({field: value}) == base
    for field, value in [
        ("max_length_for_trunc", 10),
        ("trunc_tool_limits", {"Read": 10}),
        ("trunc_command_limits", {"reading": 10}),
        ("trunc_only_when_shorter", True),
        ("token_counter", "cl100k_base"),
        ("root_dir", "/var"),
        ("language", "zh"),
        ("skip_truncation", True),
    ]:
        assert truncation_key_of({field: value}) != base, field


def test_replay_many_refuses_a_prepared_conversation_of_another() -> None:
    prepared = Prepared(hand_conversation(), ENGINE)
    with pytest.raises(ValueError, match=r"^prepared: made for another conversation"):
        replay_many(hand_conversation(), [("a", None)], pricing=ENGINE, prepared=prepared)
