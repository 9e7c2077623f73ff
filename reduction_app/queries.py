"""Queries whose cost does not grow with the rows that share a value.

Several conversations of a workspace name the same offload path or the same stored
content, each with a row of its own (``OffloadedFile``): a plain ``path IN (...)`` then
reads every conversation's row of each path, and a request grows slower with every
conversation before it. :func:`one_row_each` reads one row per value instead, each
found through the index by a ``LIMIT 1`` subquery, for whoever needs a fact all those
rows share (the content at a path, whether a content is held).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TypeVar

from django.db.models import Model, QuerySet, Subquery

__all__ = ["one_row_each"]

_M = TypeVar("_M", bound=Model)

_BATCH = 400
"""Values in one query: each subquery takes its filters' parameters again (a workspace
and a value: 800 in all), under SQLite's historical limit of 999 a query."""


def one_row_each(rows: QuerySet[_M], field: str, values: Collection[str]) -> Iterator[QuerySet[_M]]:
    """Querysets (one per batch of ``values``) of one row of ``rows`` for each of ``values``
    of ``field`` that some row holds; which of a value's rows is left to the database.

    Each value costs one index look-up however many rows hold it (an index on
    ``rows``' filters and ``field`` serves it), where ``field__in`` reads them all.
    """
    wanted = sorted(values)
    for start in range(0, len(wanted), _BATCH):
        picks = [
            Subquery(rows.filter(**{field: value}).order_by().values("pk")[:1])
            for value in wanted[start : start + _BATCH]
        ]
        yield rows.model._default_manager.filter(pk__in=picks).order_by()
