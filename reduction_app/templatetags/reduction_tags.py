"""Formatting for the dashboard: numbers with thousands separators and units, lists and
recording formats in words, and links that keep the current filters."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template
from django.http import HttpRequest

from simulator.importers import RECORDING_FORMATS, in_words

register = template.Library()


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


@register.filter
def num(value: Any) -> str:
    """``1234567`` → ``1,234,567``."""
    number = _int(value)
    return f"{number:,}" if number is not None else "–"


@register.filter
def and_list(values: Any) -> str:
    """``["a", "b", "c"]`` → ``a, b and c`` (escaped by the page, as any value)."""
    return in_words([str(v) for v in values or ()])


@register.filter
def recording_label(source: str) -> str:
    """A recording format's name (``claude_code``) as pages say it (``Claude Code log``),
    from ``simulator.importers.RECORDING_FORMATS``; an unknown one as it is."""
    fmt = RECORDING_FORMATS.get(source)
    return fmt.label if fmt else source


@register.filter
def tokens(value: Any) -> str:
    """``1234`` → ``1,234 tok``."""
    number = _int(value)
    return f"{number:,} tok" if number is not None else "–"


@register.filter
def signed_tokens(value: Any) -> str:
    """``-25`` → ``−25 tok``, ``1234`` → ``+1,234 tok``."""
    number = _int(value)
    if number is None:
        return "–"
    return f"+{number:,} tok" if number > 0 else f"−{-number:,} tok" if number < 0 else "0 tok"


@register.filter
def chars(value: Any) -> str:
    """``1234`` → ``1,234 chars``."""
    number = _int(value)
    return f"{number:,} chars" if number is not None else "–"


@register.filter
def percent(value: Any, digits: int = 1) -> str:
    """``0.4567`` → ``45.7%``."""
    try:
        return f"{100 * float(value):.{int(digits)}f}%"
    except (TypeError, ValueError):
        return "–"


@register.filter
def usd(value: Any) -> str:
    try:
        return f"${float(value):,.4f}"
    except (TypeError, ValueError):
        return "–"


@register.simple_tag(takes_context=True)
def query(context: dict[str, Any], **changes: Any) -> str:
    """The current query string with ``changes`` applied (``None`` or ``""`` removes a key)."""
    request: HttpRequest = context["request"]
    params = request.GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            params.pop(key, None)
        else:
            params[key] = value
    encoded = urlencode(sorted(params.items()))
    return f"?{encoded}" if encoded else "?"


SORT_RESETS = ("page", "before", "after")
"""The page a list shows, by number or cursor: a new order starts from its top."""


@register.inclusion_tag("reduction_app/includes/sort_header.html", takes_context=True)
def sort_header(
    context: dict[str, Any], key: str, label: str, table: str, num: bool = False
) -> dict[str, Any]:
    """A column header that sorts its list by ``key`` (``context["sort"]``, a
    ``sorting.Sort``, is the order shown; ``context["sorting"]`` the list's columns): a
    link to the same page with ``?sort=`` set, that htmx swaps in for ``table`` (a
    selector)."""
    request: HttpRequest = context["request"]
    sort = context["sort"]
    params = request.GET.copy()
    for name in SORT_RESETS:
        params.pop(name, None)
    params["sort"] = sort.toggled(key, context["sorting"])
    current = sort.key == key
    return {
        "href": f"{request.path}?{urlencode(sorted(params.items()))}",
        "label": label,
        "table": table,
        "num": num,
        "key": key,
        "aria_sort": ("descending" if sort.descending else "ascending") if current else "",
    }
