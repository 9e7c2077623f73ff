"""The request rate limit: how many REST API requests a workspace may make a minute.

The count lives in the database (one upsert a request), so it holds across workers and
machines, where django-ninja's throttles count per process; windows are fixed minutes
of the clock.
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.db import connection

from reduction_app.errors import QuotaExceeded
from reduction_app.models import RateWindow, Workspace

__all__ = ["rate_limit", "rate_limit_count"]


def rate_limit(workspace: Workspace) -> int:
    """The workspace's requests a minute; 0 for no limit."""
    if workspace.rate_limit_per_minute is not None:
        return workspace.rate_limit_per_minute
    limit: int = settings.REDUCTION_RATE_LIMIT
    return limit


def _upsert_sql() -> str:
    quote = connection.ops.quote_name
    table = quote(RateWindow._meta.db_table)
    workspace, minute, count = (quote(name) for name in ("workspace_id", "minute", "count"))
    return (
        f"INSERT INTO {table} ({workspace}, {minute}, {count}) VALUES (%s, %s, 1) "
        f"ON CONFLICT ({workspace}) DO UPDATE SET "
        f"{count} = CASE WHEN {table}.{minute} = excluded.{minute} "
        f"THEN {table}.{count} + 1 ELSE 1 END, "
        f"{minute} = excluded.{minute} "
        f"RETURNING {count}"
    )


def rate_limit_count(*, workspace: Workspace, now: float | None = None) -> None:
    """Count one request of ``workspace``; raise :class:`QuotaExceeded` with the seconds to
    the next minute when it is over the limit (the refused request counts too)."""
    limit = rate_limit(workspace)
    if not limit:
        return
    now = time.time() if now is None else now
    minute = int(now // 60)
    with connection.cursor() as cursor:
        cursor.execute(_upsert_sql(), [workspace.pk, minute])
        (count,) = cursor.fetchone()
    if count > limit:
        retry_after = max(1, math.ceil((minute + 1) * 60 - now))
        raise QuotaExceeded(
            f"rate limit exceeded: {limit} requests a minute for this workspace; "
            f"try again in {retry_after} s",
            retry_after=retry_after,
        )
