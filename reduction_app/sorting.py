"""Sorting of the dashboard's lists by their columns: each list declares the columns it
sorts by (a whitelist), reads ``?sort=<key>`` (``-<key>``: descending) leniently, and
pages its rows in that order, by page number or by a keyset cursor.

A key the list does not declare gives its default order, never an error. Rows always
end their order on the id, in the same direction, so each row has one place in it: what
a keyset cursor (:func:`keyset_page`) needs to continue exactly where a page stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from django.db.models import Model, Q, QuerySet
from django.http import HttpRequest

__all__ = ["Column", "Sort", "Sorting", "keyset_page"]

_M = TypeVar("_M", bound=Model)

PARAM = "sort"


@dataclass(frozen=True)
class Column:
    """A column a list sorts by."""

    key: str
    """Its name in ``?sort=``."""
    field: str
    """The model field or annotation it orders by; never empty (``NULL``) for a row, so a
    keyset cursor can compare it."""
    descending_first: bool = True
    """The direction of a first click on its header: numbers and times largest first,
    names from A."""


@dataclass(frozen=True)
class Sort:
    """The order a list is shown in."""

    column: Column
    descending: bool

    @property
    def key(self) -> str:
        return self.column.key

    @property
    def param(self) -> str:
        """Its ``?sort=`` value."""
        return f"-{self.column.key}" if self.descending else self.column.key

    def order_by(self, *, reverse: bool = False) -> tuple[str, str]:
        """The ordering (``reverse``: read upwards), ending on the id."""
        sign = "-" if self.descending != reverse else ""
        return f"{sign}{self.column.field}", f"{sign}pk"

    def toggled(self, key: str, columns: Sorting) -> str:
        """The ``?sort=`` of a click on ``key``'s header: this order reversed when it is
        the key shown, else that column's first direction."""
        if key == self.key:
            return self.column.key if self.descending else f"-{self.column.key}"
        column = columns.column(key)
        return f"-{key}" if column.descending_first else key


@dataclass(frozen=True)
class Sorting:
    """The columns a list sorts by, and its default order (a ``?sort=`` value)."""

    columns: tuple[Column, ...]
    default: str

    def column(self, key: str) -> Column:
        for column in self.columns:
            if column.key == key:
                return column
        raise KeyError(key)

    def parse(self, value: str | None) -> Sort:
        """The order ``value`` names; the default for anything else."""
        for candidate in (value or "", self.default):
            key = candidate.removeprefix("-")
            if any(c.key == key for c in self.columns):
                return Sort(self.column(key), candidate.startswith("-"))
        raise ValueError(f"the default order {self.default!r} is not a column")

    def read(self, request: HttpRequest) -> Sort:
        """The order ``?sort=`` asks for."""
        return self.parse(request.GET.get(PARAM))

    def apply(self, rows: QuerySet[_M], sort: Sort) -> QuerySet[_M]:
        return rows.order_by(*sort.order_by())


def keyset_page(
    rows: QuerySet[_M], sort: Sort, *, next_from: int, previous_from: int, size: int
) -> tuple[list[_M], bool, bool]:
    """A page of ``rows`` in ``sort``'s order: the ``size`` rows shown after the row of
    id ``next_from`` (the next page), else those shown before the row of id
    ``previous_from`` (the previous page), else the first ``size`` (0: no cursor); and
    whether there are rows before it and after it.

    The cursor is a row's id and the row's own value of the sort column, read back from
    the database, continues the order: a page costs the same however deep it is. A cursor
    naming no row of ``rows`` (gone since, or never one of them) starts from the top,
    unless the order is the id's own."""
    field = sort.column.field
    anchor_id = next_from or previous_from
    anchor = None
    if anchor_id and field in ("id", "pk"):
        anchor = anchor_id  # the cursor is the value: any id is a place in the order
    elif anchor_id:
        found = rows.filter(pk=anchor_id).values_list(field, flat=True)[:1]
        anchor = next(iter(found), None)
    if anchor is None:
        page = list(rows.order_by(*sort.order_by())[: size + 1])
        return page[:size], False, len(page) > size
    forward = bool(next_from)
    # Past the anchor in the order shown (forward), or before it (backward, read upwards).
    lookup = "lt" if sort.descending == forward else "gt"
    beyond = Q(**{f"{field}__{lookup}": anchor}) | Q(**{field: anchor, f"pk__{lookup}": anchor_id})
    ordered = rows.filter(beyond).order_by(*sort.order_by(reverse=not forward))
    page = list(ordered[: size + 1])
    more = len(page) > size
    page = page[:size]
    if forward:
        return page, True, more
    return page[::-1], more, True
