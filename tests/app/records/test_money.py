"""What the recorded model calls cost and what the reductions saved: the selectors on
agent runs recorded through the engine, checked against sums worked out here from the
event rows themselves."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from reduction_app.models import EventRecord
from reduction_app.records.money import (
    conversation_money,
    money_over_time,
    money_totals,
    priced,
)
from simulator.pricing import PRESETS
from tests.app.dashboard_data import agent_run, event_row, expected_tokens, member_client

pytestmark = pytest.mark.django_db

OUTPUTS = [("grep", "x" * 500), ("read_file", "line\n" * 100), ("ls", "a b c")] * 2
GPT_4O_INPUT = 2.50
"""gpt-4o's dollars per million input tokens (its preset), written out by hand."""


def dollars(tokens: int) -> float:
    return tokens * GPT_4O_INPUT / 1_000_000


def test_money_totals_price_each_call_sent_and_what_was_kept_out_of_it() -> None:
    _, ws = member_client()
    first = agent_run(ws, "run-1", OUTPUTS)
    second = agent_run(ws, "run-2", OUTPUTS[:3])
    # A pass recorded with no conversation.
    event_row(
        ws, phase="clear", kind="summary", tokens_before=900, tokens_after=300, tokens_saved=600
    )
    expected = expected_tokens(ws)
    calls = sum(c for c, _, _ in expected.values())
    sent = sum(s for _, s, _ in expected.values())
    kept = sum(k for _, _, k in expected.values())
    # Each run: a call before every tool output, and one after the last.
    assert calls == len(OUTPUTS) + 1 + 3 + 1 + 1
    assert kept > 600  # the runs' truncations and clears kept tokens out too

    money = money_totals(workspace=ws, pricing=PRESETS["gpt-4o"])

    assert (money.calls, money.sent_tokens, money.saved_tokens) == (calls, sent, kept)
    assert money.cost == pytest.approx(dollars(sent))
    assert money.saved == pytest.approx(dollars(kept))
    assert money.without == pytest.approx(dollars(sent + kept))
    assert money.saved_share == pytest.approx(kept / (sent + kept))
    for conversation in (first, second):
        c, s, k = expected[conversation.pk]
        one = conversation_money(
            workspace=ws, conversation_id=conversation.pk, pricing=PRESETS["gpt-4o"]
        )
        assert (one.calls, one.sent_tokens, one.saved_tokens) == (c, s, k)
        assert one.cost == pytest.approx(dollars(s))


def test_money_of_a_workspace_with_no_calls_is_zero() -> None:
    _, ws = member_client()
    event_row(ws, tokens_saved=40)  # a truncation, but no model call recorded
    money = money_totals(workspace=ws, pricing=PRESETS["gpt-4o"])
    assert (money.calls, money.cost, money.saved, money.saved_share) == (0, 0.0, 0.0, None)


def test_money_kept_out_counts_only_earlier_reductions_of_the_same_conversation() -> None:
    _, ws = member_client()
    _, other = member_client("bob", "Other")
    run_a = agent_run(ws, "a", OUTPUTS[:1])
    agent_run(ws, "b", OUTPUTS[:1])
    agent_run(other, "a", OUTPUTS)  # another workspace's conversation of the same id
    # A reduction recorded after the last call of "a" kept nothing out of its calls.
    event_row(ws, conversation=run_a, tokens_saved=10_000)
    expected = expected_tokens(ws)
    money = conversation_money(workspace=ws, conversation_id=run_a.pk, pricing=PRESETS["gpt-4o"])
    assert money.saved_tokens == expected[run_a.pk][2]
    assert money.saved_tokens < 10_000
    totals = money_totals(workspace=ws, pricing=PRESETS["gpt-4o"])
    assert totals.saved_tokens == sum(k for _, _, k in expected.values())


def test_money_over_time_buckets_calls_by_hour() -> None:
    _, ws = member_client()
    now = timezone.now()
    rows: list[tuple[Any, int, int]] = [(3, 100, 10), (3, 50, 0), (0, 400, 40)]
    for hours, after, saved in rows:
        row = event_row(ws, phase="clear", kind="summary", tokens_after=after, tokens_saved=saved)
        EventRecord.objects.filter(pk=row.pk).update(created_at=now - timedelta(hours=hours))

    points = money_over_time(workspace=ws, bucket="hour", pricing=PRESETS["gpt-4o"])

    assert [(p.money.calls, p.money.sent_tokens, p.money.saved_tokens) for p in points] == [
        (2, 150, 10),
        (1, 400, 40),
    ]
    assert points[0].at < points[1].at
    assert points[1].money.cost == pytest.approx(dollars(400))


def test_priced_uses_the_price_base_input_rate() -> None:
    """A long-context tier does not apply to sums over many calls."""
    sonnet = PRESETS["claude-sonnet-4.5"]
    money = priced(sonnet, calls=2, sent_tokens=300_000, saved_tokens=1_000_000)
    assert money.cost == pytest.approx(300_000 * 3.00 / 1_000_000)
    assert money.saved == pytest.approx(3.00)
