"""Sorting a list by its columns: whitelisted keys read leniently, and keyset pages that
walk a whole list in order, forwards and back, on the real database."""

from __future__ import annotations

import pytest

from reduction_app.models import EventRecord
from reduction_app.sorting import Column, Sorting, keyset_page
from tests.app.dashboard_data import event_row, member_client

SORTING = Sorting(
    columns=(
        Column("id", "id"),
        Column("saved", "tokens_saved"),
        Column("tool", "tool_name", False),
    ),
    default="-id",
)


@pytest.mark.parametrize(
    ("value", "key", "descending"),
    [
        ("saved", "saved", False),
        ("-saved", "saved", True),
        ("-tool", "tool", True),
        (None, "id", True),
        ("", "id", True),
        ("password", "id", True),
        ("--saved", "id", True),
        ("tokens_saved", "id", True),  # a field's own name is not a key
        ("-id; DROP TABLE", "id", True),
    ],
)
def test_sorting_parse_gives_the_default_for_unknown_keys(
    value: str | None, key: str, descending: bool
) -> None:
    sort = SORTING.parse(value)
    assert (sort.key, sort.descending) == (key, descending)


def test_sort_toggled_reverses_the_column_shown_and_starts_others_their_way() -> None:
    sort = SORTING.parse("-saved")
    assert sort.toggled("saved", SORTING) == "saved"
    assert SORTING.parse("saved").toggled("saved", SORTING) == "-saved"
    assert sort.toggled("tool", SORTING) == "tool"
    assert sort.toggled("id", SORTING) == "-id"


def test_sorting_with_a_default_that_is_no_column_is_refused() -> None:
    with pytest.raises(ValueError, match="'-nope'"):
        Sorting(columns=(Column("id", "id"),), default="-nope").parse(None)


@pytest.mark.django_db
@pytest.mark.parametrize("value", ["-saved", "saved", "tool", "-id", "id"])
def test_keyset_page_walks_every_row_once_in_order_and_back(value: str) -> None:
    _, ws = member_client()
    # Many ties on each column, so pages end inside a run of equal values.
    for i in range(23):
        event_row(ws, tokens_saved=i % 4, tool_name=f"t{i % 3}")
    rows = EventRecord.objects.filter(workspace=ws)
    sort = SORTING.parse(value)
    field = sort.column.field
    expected = sorted(rows, key=lambda r: (getattr(r, field), r.pk), reverse=sort.descending)

    pages, cursor = [], 0
    while True:
        page, has_previous, has_next = keyset_page(
            rows, sort, next_from=cursor, previous_from=0, size=5
        )
        assert has_previous == bool(cursor)
        pages.append(page)
        if not has_next:
            break
        cursor = page[-1].pk
    assert [r.pk for page in pages for r in page] == [r.pk for r in expected]
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]

    # Back from the last page: the one before it, whole.
    back, has_previous, has_next = keyset_page(
        rows, sort, next_from=0, previous_from=pages[-1][0].pk, size=5
    )
    assert [r.pk for r in back] == [r.pk for r in pages[-2]]
    assert (has_previous, has_next) == (True, True)


@pytest.mark.django_db
def test_keyset_page_from_a_row_of_no_list_starts_at_the_top() -> None:
    _, ws = member_client()
    _, other = member_client("bob", "Other")
    mine = [event_row(ws, tokens_saved=i) for i in range(3)]
    stranger = event_row(other, tokens_saved=99)
    rows = EventRecord.objects.filter(workspace=ws)
    page, has_previous, has_next = keyset_page(
        rows, SORTING.parse("-saved"), next_from=stranger.pk, previous_from=0, size=5
    )
    assert [r.pk for r in page] == [r.pk for r in mine[::-1]]
    assert (has_previous, has_next) == (False, False)
