"""Queries whose cost does not grow with the rows that share a value.

Several conversations of a workspace name the same offload path or the same stored
content, each with a row of its own (``OffloadedFile``); :func:`one_row_each` reads one
row per value, for whoever needs a fact all those rows share.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import TypeVar

from django.db.models import Model, QuerySet
from django.db.models.expressions import RawSQL

__all__ = ["one_row_each"]

_M = TypeVar("_M", bound=Model)

_BATCH = 400
"""Values in one query: each look-up takes its filters' parameters again (a workspace
and a value: 800 in all), under SQLite's historical limit of 999 a query."""
_MARK = "\x00one_row_each\x00"
"""Stands for the value while the look-up of one value is compiled (no value holds NUL)."""


def one_row_each(rows: QuerySet[_M], field: str, values: Collection[str]) -> Iterator[QuerySet[_M]]:
    """Querysets (one per batch of ``values``) of one row of ``rows`` for each of ``values``
    of ``field`` that some row holds; which of a value's rows is left to the database.

    Each value costs one index look-up however many rows hold it (an index on
    ``rows``' filters and ``field`` serves it), where ``field__in`` reads them all: a
    plain ``path IN (...)`` reads every conversation's row of each path, and a request
    grows slower with every conversation before it. Facts all rows of a value share:
    the content at a path, whether a content is held.
    """
    # The look-up of one value (``SELECT id ... WHERE <rows' filters> AND field = %s
    # LIMIT 1``) is compiled once by the ORM, and its SQL repeated with each value as
    # its parameter: compiling a subquery a value costs more than the query runs.
    probe = rows.filter(**{field: _MARK}).order_by().values("pk")[:1]
    sql, params = probe.query.sql_with_params()
    at = params.index(_MARK)
    wanted = sorted(values)
    for start in range(0, len(wanted), _BATCH):
        batch = wanted[start : start + _BATCH]
        # RawSQL renders as "(...)": "id IN ((SELECT ...), (SELECT ...))".
        picks = ", ".join([f"({sql})"] * len(batch))
        args = [arg for value in batch for arg in (*params[:at], value, *params[at + 1 :])]
        yield rows.model._default_manager.filter(pk__in=RawSQL(picks, args)).order_by()
