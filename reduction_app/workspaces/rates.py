"""The request rate limit: how many REST API requests a workspace may make a minute.

The count lives in the database (``RateWindow``, one row a workspace), so it holds across
gunicorn workers and machines; django-ninja's own throttles count in the cache, which is
per process by default. A request costs one statement: an upsert that starts the row, adds
one to it, or starts it again in a new minute, and returns the count (``INSERT ... ON
CONFLICT DO UPDATE ... RETURNING``, which SQLite from 3.35 and PostgreSQL both run, and
both run atomically). The windows are fixed minutes of the clock: a client may send up to
twice the limit across the turn of a minute, never more.

The limit is ``Workspace.rate_limit_per_minute`` when set, else ``REDUCTION_RATE_LIMIT``;
0 is no limit, and then nothing is counted.
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
