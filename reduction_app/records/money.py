"""What the recorded model calls cost, and what the reductions saved, at a price
(docs/dashboard.md, "Cost and saving"): the queries sum tokens per call (each clear
pass's summary is one call), :func:`priced` turns the sums into dollars through
:meth:`simulator.pricing.Pricing.cost`, the one place that prices tokens. Tokens are the
engine's count (the config's counter), as everywhere on the dashboard; dollars are them
as uncached input at the price's base rates."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import (
    Case,
    Count,
    F,
    OuterRef,
    QuerySet,
    Subquery,
    Sum,
    When,
)
from django.db.models.functions import Coalesce, TruncDay, TruncHour

from reduction_app.models import EventRecord, Workspace
from reduction_app.records.selectors import SAVING_KINDS
from simulator.pricing import Pricing

__all__ = [
    "Money",
    "MoneyPoint",
    "calls",
    "conversation_money",
    "kept_out",
    "money_over_time",
    "money_totals",
    "priced",
    "sent_and_saved_per_conversation",
]


def kept_out() -> Any:
    """The expression, on a ``summary`` event, of the tokens the reductions kept out of
    its call: ``tokens_after`` is what the call sent, and every reduction (a ``tool``
    event: a truncation or a cleared call, each recorded once and left out of every later
    call) recorded before it in the same conversation kept its ``tokens_saved`` out. A
    pass's summary comes after its own cleared calls, so they count in it. A summary of
    no conversation stands alone: its call kept out what its own pass cleared."""
    earlier = (
        EventRecord.objects.filter(
            conversation=OuterRef("conversation"), kind__in=SAVING_KINDS, id__lt=OuterRef("id")
        )
        .order_by()
        .values("conversation")
        .annotate(v=Sum("tokens_saved"))
        .values("v")[:1]
    )
    return Case(
        When(conversation__isnull=True, then=F("tokens_saved")),
        default=Coalesce(Subquery(earlier), 0),
    )


def calls(*, workspace: Workspace) -> QuerySet[EventRecord]:
    """The workspace's recorded model calls (their clear passes' summaries), each with
    ``kept_out``."""
    return EventRecord.objects.filter(workspace=workspace, kind="summary").annotate(
        kept_out=kept_out()
    )


@dataclass(frozen=True)
class Money:
    """Model calls, the tokens they sent and those the reductions kept out of them, and
    both in dollars."""

    calls: int
    sent_tokens: int
    saved_tokens: int
    cost: float
    """Dollars of what the calls sent."""
    saved: float
    """Dollars of what the reductions kept out of them."""

    @property
    def without(self) -> float:
        """Dollars the calls would have cost with no reduction."""
        return self.cost + self.saved

    @property
    def saved_share(self) -> float | None:
        """The saving as a share of what the calls would have cost (``None``: no cost)."""
        return self.saved / self.without if self.without else None


def priced(pricing: Pricing, *, calls: int, sent_tokens: int, saved_tokens: int) -> Money:
    """The token sums in dollars: uncached input at the price's base rates."""
    return Money(
        calls=calls,
        sent_tokens=sent_tokens,
        saved_tokens=saved_tokens,
        cost=pricing.cost(uncached_tokens=sent_tokens, cached_tokens=0),
        saved=pricing.cost(uncached_tokens=saved_tokens, cached_tokens=0),
    )


_SUMS = {
    "calls": Count("id"),
    "sent_tokens": Coalesce(Sum("tokens_after"), 0),
    "saved_tokens": Coalesce(Sum("kept_out"), 0),
}


def money_totals(*, workspace: Workspace, pricing: Pricing) -> Money:
    """Every recorded call of the workspace."""
    return priced(pricing, **calls(workspace=workspace).aggregate(**_SUMS))


def conversation_money(*, workspace: Workspace, conversation_id: int, pricing: Pricing) -> Money:
    """The recorded calls of one conversation (by its row id)."""
    rows = calls(workspace=workspace).filter(conversation_id=conversation_id)
    return priced(pricing, **rows.aggregate(**_SUMS))


@dataclass(frozen=True)
class MoneyPoint:
    at: datetime
    money: Money


def money_over_time(*, workspace: Workspace, bucket: str, pricing: Pricing) -> list[MoneyPoint]:
    """The recorded calls per ``bucket`` (``day`` or ``hour``, UTC), oldest first."""
    trunc = TruncHour if bucket == "hour" else TruncDay
    rows = (
        calls(workspace=workspace)
        .annotate(at=trunc("created_at"))
        .values("at")
        .annotate(**_SUMS)
        .order_by("at")
    )
    return [MoneyPoint(row.pop("at"), priced(pricing, **row)) for row in (dict(r) for r in rows)]


def sent_and_saved_per_conversation() -> dict[str, Any]:
    """Annotations of a conversation: the tokens its calls sent (``sent_tokens``) and
    those the reductions kept out of them (``saved_tokens``), as subqueries."""

    def summed(value: Any) -> Any:
        rows = (
            EventRecord.objects.filter(conversation=OuterRef("pk"), kind="summary")
            .annotate(kept_out=kept_out())
            .order_by()
            .values("conversation")
            .annotate(v=value)
            .values("v")[:1]
        )
        return Coalesce(Subquery(rows), 0)

    return {
        "call_count": summed(Count("id")),
        "sent_tokens": summed(Sum("tokens_after")),
        "saved_tokens": summed(Sum("kept_out")),
    }
