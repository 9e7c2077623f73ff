"""Cursor pagination of the REST API's lists (``?cursor=``), refusing cursors it did not
make."""

import binascii
from typing import Any

import pydantic
from django.http import HttpRequest
from ninja.errors import ValidationError
from ninja.pagination import CursorPagination

from reduction_app.schemas import PARAM_ERRORS, ApiError

MAX_ID = 2**63 - 1


# A list answers 422 for a cursor or page size it cannot take.
LIST_ERRORS = PARAM_ERRORS


class IdCursorPagination(CursorPagination):
    """Cursor pagination on ``-id`` that answers 422 for a cursor it did not make.

    django-ninja lets a hand-made cursor through to pydantic and the queryset
    (``p=abc``, ``o=-1``), which would be a 500.
    """

    def paginate_queryset(
        self, queryset: Any, pagination: Any, request: HttpRequest, **params: Any
    ) -> Any:
        _check_cursor(pagination.cursor)
        return super().paginate_queryset(queryset, pagination, request, **params)


def _check_cursor(encoded: str | None) -> None:
    if not encoded:
        return
    try:
        cursor = CursorPagination.Cursor.from_encoded_param(encoded)
    except (ValidationError, pydantic.ValidationError, UnicodeError, binascii.Error):
        cursor = None
    position = cursor.p if cursor is not None else None
    if cursor is None or (
        position is not None
        and not (position.isascii() and position.isdigit() and int(position) <= MAX_ID)
    ):
        raise ApiError(
            422, "cursor: not a cursor from this API; follow the next and previous links", "cursor"
        )


PAGE = {"ordering": ("-id",), "page_size": 50, "max_page_size": 500}
