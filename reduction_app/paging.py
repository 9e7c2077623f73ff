"""Paging for the dashboard's lists: page numbers read leniently from the query string,
and the addresses of the neighbouring pages with every other filter kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard
from urllib.parse import urlencode

from django.core.paginator import Page, Paginator
from django.http import HttpRequest


def int_param(request: HttpRequest, name: str, default: int = 0, minimum: int = 0) -> int:
    """``?name=`` as an int at least ``minimum``; ``default`` when missing or not a number."""
    try:
        return max(minimum, int(request.GET.get(name, default)))
    except (TypeError, ValueError):
        return default


def url_with(request: HttpRequest, **changes: Any) -> str:
    """This page's address with ``changes`` applied to its query (``None`` removes a key)."""
    params = request.GET.copy()
    for key, value in changes.items():
        if value is None or value == "":
            params.pop(key, None)
        else:
            params[key] = str(value)
    encoded = urlencode(sorted(params.items()))
    return f"{request.path}?{encoded}" if encoded else request.path


@dataclass(frozen=True)
class Pager:
    """Where the neighbouring pages are; ``None`` when there is none."""

    number: int
    count: int
    """How many pages (0 when unknown, as with cursors)."""
    previous: str | None
    next: str | None
    first: str | None = None


def paginate(request: HttpRequest, items: Any, per_page: int, param: str = "page") -> Page[Any]:
    """The page ``?param=`` asks for (the last one when past the end, the first when bad)."""
    return Paginator(items, per_page).get_page(request.GET.get(param))


def pager_for(request: HttpRequest, page: Page[Any], param: str = "page") -> Pager:
    return Pager(
        number=page.number,
        count=page.paginator.num_pages,
        previous=url_with(request, **{param: page.previous_page_number()})
        if page.has_previous()
        else None,
        next=url_with(request, **{param: page.next_page_number()}) if page.has_next() else None,
        first=url_with(request, **{param: None}) if page.number > 1 else None,
    )


def digits(value: str | None) -> TypeGuard[str]:
    """Whether ``value`` is a plain number (``"²".isdigit()`` is true, but ``int`` refuses it)."""
    return value is not None and value.isascii() and value.isdigit()
