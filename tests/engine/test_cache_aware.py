"""Tests for engine/_clear/_cache_aware.py and the ``clear_cache_aware`` decision of the
clear phase (docs/behaviour.md §4.14).

Counts use the one-token-per-character counter of ``clear_support.chars`` (content plus
arguments; tool names are not counted). Every call's arguments are 10 characters, every
result 200, and the placeholder naming ``/tmp/clear/cN`` is 94, so a cleared result
frees 106 tokens.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest
from hypothesis import given

from reduction_app.engine import InMemoryBackend
from reduction_app.engine._clear._cache_aware import (
    CacheEstimate,
    cache_ceiling,
    cached_end,
    calls_so_far,
)
from reduction_app.engine.config import config_from_dict
from reduction_app.engine.errors import ConfigError
from reduction_app.engine.messages import Message
from tests.engine.clear_support import (
    agentic_call,
    agentic_results,
    agentic_text,
    assert_untouched,
    call_msg,
    chars,
    middleware,
    offload_placeholder,
    snapshot,
    state,
    summary,
)
from tests.engine.test_clear_properties import (
    CONFIGS,
    SETTINGS,
    Round,
    agentic_conversation,
    chat_conversation,
    check_properties,
    rounds,
)

ARGS = '{"d": "a"}'
R200 = "r" * 200


def rounds_of(count: int, *, cleared: int = 0) -> list[Message]:
    """``user "q"`` then ``count`` rounds ``cN``; the first ``cleared`` already hold their
    placeholder (as an earlier pass left them, flagged)."""
    msgs: list[Message] = [Message.user("q")]
    for n in range(1, count + 1):
        call = call_msg((f"c{n}", "ls", ARGS))
        if n <= cleared:
            call = dataclasses.replace(call, extra={"_reduction_mw_processed": True})
        msgs += [
            call,
            Message.tool(offload_placeholder(f"c{n}") if n <= cleared else R200, f"c{n}"),
        ]
    return msgs


TWO = rounds_of(2)
"""1 + 210 + 210 = 421 tokens. A pass clears c1: it frees 106 and, with 2 calls so far,
rewrites c1's result and c2's call (210 tokens) in the cache:
106 × (125 + 10) − 210 × 115 = 14,310 − 24,150 < 0, so it is not worth it."""


# --- the arithmetic ---------------------------------------------------------------------------


def test_estimate_net_is_the_documented_formula() -> None:
    est = CacheEstimate(saved=106, rewritten=210, calls_ahead=2, read_percent=10, write_percent=125)
    assert est.net == 106 * (125 + 1 * 10) - 210 * (125 - 10) == -9840
    assert not est.pays
    many = CacheEstimate(
        saved=106, rewritten=210, calls_ahead=20, read_percent=10, write_percent=125
    )
    assert many.net == 106 * (125 + 19 * 10) - 210 * 115 == 9240
    assert many.pays


def test_estimate_without_a_cache_price_gap_always_pays() -> None:
    """Reads and writes at the input price (no prompt cache): any saving pays."""
    est = CacheEstimate(
        saved=1, rewritten=10**6, calls_ahead=1, read_percent=100, write_percent=100
    )
    assert est.pays
    assert not CacheEstimate(
        saved=0, rewritten=0, calls_ahead=5, read_percent=100, write_percent=100
    ).pays


def test_calls_so_far_and_cached_end() -> None:
    assert calls_so_far([Message.user("q")]) == 1
    assert calls_so_far(TWO) == 2
    assert cached_end(TWO) == 4  # right after the last assistant message
    assert cached_end([Message.user("q")]) == 0


def test_ceiling_defaults_to_twice_the_threshold() -> None:
    assert cache_ceiling(0, 300) == 600
    assert cache_ceiling(450, 300) == 450


def test_config_fields_parse_and_check() -> None:
    cfg = config_from_dict(
        {
            "clear_cache_aware": True,
            "clear_cache_read_percent": 50,
            "clear_cache_write_percent": 100,
            "clear_cache_ceiling_tokens": 90000,
        },
        backend=InMemoryBackend(),
    )
    assert (cfg.clear_cache_aware, cfg.clear_cache_read_percent) == (True, 50)
    assert (cfg.clear_cache_write_percent, cfg.clear_cache_ceiling_tokens) == (100, 90000)
    with pytest.raises(ConfigError, match="clear_cache_read_percent must be at least 0, got -1"):
        config_from_dict({"clear_cache_read_percent": -1}, backend=InMemoryBackend())
    with pytest.raises(ConfigError, match="clear_cache_aware must be true or false"):
        config_from_dict({"clear_cache_aware": 1}, backend=InMemoryBackend())


# --- the decision in the clear phase ----------------------------------------------------------


def test_a_pass_that_does_not_pay_is_dropped_and_writes_nothing() -> None:
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=300, clear_cache_aware=True
    )
    s = state(TWO)
    snap = snapshot(s)
    out = mw.before_model_rewrite_state(s)
    assert out is s
    assert_untouched(s, snap)
    assert not backend  # the held offload was never written
    event = summary(events)
    assert (event.reason, event.applied) == ("below_cache_break_even", False)
    assert (event.tokens_before, event.tokens_after, event.threshold) == (421, 421, 300)


def test_off_by_default_the_same_pass_is_applied() -> None:
    mw, events = middleware(InMemoryBackend(), token_counter=chars, max_tokens_for_clear=300)
    out = mw.before_model_rewrite_state(state(TWO))
    assert out.messages[2].content == offload_placeholder("c1")
    assert summary(events).reason == "applied"


def test_a_pass_pays_with_enough_calls_behind_it() -> None:
    """20 calls so far: 106 × (125 + 19 × 10) − 210 × 115 > 0. (1 + 18 × 104 + 2 × 210 =
    2,293 tokens, under the ceiling of 4,000.)"""
    msgs = rounds_of(20, cleared=18)
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=2000, clear_cache_aware=True
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[38].content == offload_placeholder("c19")
    assert summary(events).reason == "applied"
    assert backend.read("/tmp/clear/c19") == R200


def test_cache_prices_decide() -> None:
    """The same pass as TWO pays when the cache is priced as no cache at all."""
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=300,
        clear_cache_aware=True,
        clear_cache_read_percent=100,
        clear_cache_write_percent=100,
    )
    mw.before_model_rewrite_state(state(TWO))
    assert summary(events).reason == "applied"


@pytest.mark.parametrize(
    ("threshold", "ceiling", "reason"),
    [
        (300, 0, "below_cache_break_even"),  # 421 <= 600
        (300, 421, "below_cache_break_even"),  # at the ceiling is not over it
        (300, 420, "applied"),
        (200, 0, "applied"),  # 421 > 400
    ],
)
def test_over_the_ceiling_a_pass_is_applied_whatever_it_costs(
    threshold: int, ceiling: int, reason: str
) -> None:
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=threshold,
        clear_cache_aware=True,
        clear_cache_ceiling_tokens=ceiling,
    )
    mw.before_model_rewrite_state(state(TWO))
    assert summary(events).reason == reason


def test_results_that_arrived_since_the_last_call_rewrite_nothing() -> None:
    """Keeping no round, the only result cleared came after the last assistant message: no
    cache held it, so clearing it costs no rewrite and pays even on the first call."""
    msgs = [Message.user("q"), call_msg(("c1", "ls", ARGS)), Message.tool(R200, "c1")]
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=100,
        clear_retention_suffix_limit=-1,
        clear_cache_aware=True,
    )
    out = mw.before_model_rewrite_state(state(msgs))
    assert out.messages[2].content == offload_placeholder("c1")
    assert summary(events).reason == "applied"


def test_clear_at_least_tokens_judges_first() -> None:
    mw, events = middleware(
        InMemoryBackend(),
        token_counter=chars,
        max_tokens_for_clear=300,
        clear_at_least_tokens=500,
        clear_cache_aware=True,
    )
    mw.before_model_rewrite_state(state(TWO))
    assert summary(events).reason == "below_clear_at_least_tokens"


def test_agentic_conversation_is_judged_the_same_way() -> None:
    msgs = [
        agentic_text("user", "q"),
        agentic_call(("c1", "ls", ARGS)),
        agentic_results(("c1", R200)),
        agentic_call(("c2", "ls", ARGS)),
        agentic_results(("c2", R200)),
    ]
    backend = InMemoryBackend()
    mw, events = middleware(
        backend, token_counter=chars, max_tokens_for_clear=300, clear_cache_aware=True
    )
    s = state(msgs)
    assert mw.before_model_rewrite_state(s) is s
    assert summary(events).reason == "below_cache_break_even"
    assert not backend


def test_async_twin_gives_the_same() -> None:
    mw, events = middleware(
        InMemoryBackend(), token_counter=chars, max_tokens_for_clear=300, clear_cache_aware=True
    )
    s = state(TWO)
    assert asyncio.run(mw.abefore_model_rewrite_state(s)) is s
    assert summary(events).reason == "below_cache_break_even"


def _run_agent(rounds: int, **fields: Any) -> tuple[list[int], InMemoryBackend, list[Message]]:
    """An agent making ``rounds`` calls, each adding a 200-token result, with the clear phase
    before every call; returns how many results each applied pass cleared."""
    backend = InMemoryBackend()
    mw, events = middleware(backend, token_counter=chars, max_tokens_for_clear=700, **fields)
    msgs: list[Message] = [Message.user("q")]
    for n in range(1, rounds + 1):
        msgs = list(mw.before_model_rewrite_state(state(msgs)).messages)
        msgs += [call_msg((f"c{n}", "ls", ARGS)), Message.tool(R200, f"c{n}")]
    batches = [e.calls_cleared for e in events if e.kind == "summary" and e.applied]
    return batches, backend, msgs


def test_clearing_comes_in_fewer_bigger_batches() -> None:
    eino, _, _ = _run_agent(12)
    aware, backend, msgs = _run_agent(12, clear_cache_aware=True)
    assert eino == [3, 1, 1, 1, 1, 1, 1, 1]  # once over 700 tokens, a result every call
    assert len(aware) < len(eino)
    assert all(batch >= 2 for batch in aware[1:])
    assert sum(aware) <= sum(eino)
    # Nothing lost: every cleared result is in its file, whole.
    for msg in msgs:
        if msg.role == "tool" and msg.content.startswith("<persisted-output>"):
            assert backend.read(f"/tmp/clear/{msg.tool_call_id}") == R200


# --- properties -------------------------------------------------------------------------------


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_cache_aware_properties_chat(rs: list[Round], config: dict[str, Any]) -> None:
    check_properties(chat_conversation(rs), {**config, "clear_cache_aware": True})


@SETTINGS
@given(rs=rounds(), config=CONFIGS)
def test_cache_aware_properties_agentic(rs: list[Round], config: dict[str, Any]) -> None:
    check_properties(
        agentic_conversation(rs),
        {**config, "clear_cache_aware": True, "clear_superseded": True},
    )
