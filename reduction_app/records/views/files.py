"""Offloaded files: the list (``/files/``), one file's page (``/files/view/?path=``) with
numbered lines, search and paging, and its exact content (``/files/raw/?path=``). Both
take a ``conversation`` (client id) too: two conversations may name the same path, each
with a file of its own (the same content, their own event and reads).
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, cast

from django import forms
from django.http import FileResponse, Http404, HttpResponse, HttpResponseBase
from django.urls import path
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from reduction_app.dashboard import render_page, workspace_view
from reduction_app.http import PageRequest
from reduction_app.models import OffloadedFile
from reduction_app.paging import Pager, int_param, pager_for, paginate, url_with
from reduction_app.records import selectors
from reduction_app.records.storage import (
    Chunks,
    DamagedContent,
    offload_storage,
    stored_lines,
    verify_stored,
)
from reduction_app.records.views import filtered_to
from reduction_app.sorting import Column, Sorting

logger = logging.getLogger(__name__)

FILES_PER_PAGE = 50
LINES_PER_PAGE = 500
MAX_LISTED_HITS = 500
"""Matching line numbers listed on the page; the count beyond is still given."""
PHASES = (("", "any"), ("truncation", "truncation"), ("clear", "clear"))
FILE_SORTING = Sorting(
    columns=(
        Column("path", "path", descending_first=False),
        Column("tool", "tool_name", descending_first=False),
        Column("phase", "phase", descending_first=False),
        Column("size", "size_chars"),
        Column("tokens", "tokens"),
        Column("reads", "read_count"),
        Column("created", "created_at"),
    ),
    default="-created",
)
"""The files list's columns, each sortable by its header (``?sort=``)."""
ORDERS = {"largest": "-size"}
"""``?order=`` values the list took before its headers sorted, as the order each is."""
DAMAGED = (
    "The stored content of this file is damaged: its bytes do not match its recorded "
    "SHA-256, so they are not served. manage.py offload_check --deep names it and "
    "manage.py offload_reclaim repairs it where a good copy exists.\n"
)


class FileFilterForm(forms.Form):
    conversation = forms.CharField(required=False, max_length=200, label="Conversation id")
    tool = forms.ChoiceField(required=False, choices=())
    phase = forms.ChoiceField(required=False, choices=PHASES)
    min_chars = forms.IntegerField(required=False, min_value=0, label="Size from (chars)")
    max_chars = forms.IntegerField(required=False, min_value=0, label="Size up to (chars)")

    def __init__(self, *args: Any, tools: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["tool"]).choices = [
            ("", "any"),
            *((t, t) for t in tools),
        ]


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def file_list(request: PageRequest) -> HttpResponse:
    workspace = request.workspace
    form = FileFilterForm(request.GET, tools=selectors.file_tool_names(workspace=workspace))
    form.is_valid()  # a bad value is shown on its field and that filter left out
    filters = {k: v for k, v in getattr(form, "cleaned_data", {}).items() if v not in (None, "")}
    # ``?order=largest``, from before the headers sorted, still shows the largest first.
    sort = FILE_SORTING.parse(request.GET.get("sort") or ORDERS.get(request.GET.get("order", "")))
    rows = selectors.file_list_sized(workspace=workspace, **filters)
    page = paginate(request, FILE_SORTING.apply(rows, sort), FILES_PER_PAGE)
    context = {
        "form": form,
        "page": page,
        "pager": pager_for(request, page),
        "filtered": bool(filters),
        "conversation": filtered_to(workspace, filters),
        "sort": sort,
        "sorting": FILE_SORTING,
    }
    return render_page(request, "reduction_app/file_list.html", context, partial="table")


def _file_or_404(request: PageRequest) -> OffloadedFile:
    row = selectors.file_get(
        workspace=request.workspace,
        path=request.GET.get("path", ""),
        conversation=request.GET.get("conversation") or None,
    )
    if row is None:
        raise Http404("no such file")
    return row


@dataclass
class FileWindow:
    """One page of a file's lines, and what a search found in the whole file."""

    page: int
    lines: list[tuple[int, str, bool]] = field(default_factory=list)
    """``(number, text, matches)`` of the page's lines (numbers from 1)."""
    total: int = 0
    hits: list[tuple[int, int]] = field(default_factory=list)
    """``(line, page)`` of the first matching lines."""
    hit_count: int = 0

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // LINES_PER_PAGE))


def read_window(handle: Chunks, page: int | None, query: str) -> FileWindow:
    """Scan the file once: keep page ``page`` (or, when ``None``, the page of the first
    match, else page 1) and the numbers of the lines containing ``query``.

    A file may be many megabytes: it is read in chunks, line by line, and only the lines
    of one page (and the numbers of the matching lines) are ever held or rendered.
    """
    needle = query.casefold()
    window = FileWindow(page=page or 0)
    first_page: list[tuple[int, str, bool]] = []
    current: list[tuple[int, str, bool]] = []
    for index, text in enumerate(stored_lines(handle)):
        number, on_page = index + 1, index // LINES_PER_PAGE + 1
        hit = bool(needle) and needle in text.casefold()
        if hit:
            window.hit_count += 1
            if len(window.hits) < MAX_LISTED_HITS:
                window.hits.append((number, on_page))
        if window.page == on_page:
            window.lines.append((number, text, hit))
        elif not window.page:
            # No page asked for: collect the page being read until a match settles it.
            if index % LINES_PER_PAGE == 0:
                current = []
            current.append((number, text, hit))
            if on_page == 1:
                first_page = current
            if hit:
                window.page, window.lines = on_page, current
        window.total = number
    if not window.page:
        window.page, window.lines = 1, first_page
    return window


def _verified(row: OffloadedFile) -> bool:
    """Whether the row's stored content is whole (its SHA-256 as recorded): a page never
    shows or serves other bytes as the file. Missing content is a 404."""
    try:
        verify_stored(offload_storage(), row.storage_name, row.sha256)
    except DamagedContent:
        logger.error("damaged offloaded content %s (%s)", row.storage_name, row.path)
        return False
    except OSError as exc:
        raise Http404("the stored content of this file is missing") from exc
    return True


def _window(row: OffloadedFile, page: int | None, query: str) -> FileWindow:
    try:
        with offload_storage().open(row.storage_name, "rb") as handle:
            window = read_window(handle, page, query)
            if window.page > window.pages:  # past the end: show the last page instead
                handle.seek(0)
                window = read_window(handle, window.pages, query)
    except OSError as exc:
        raise Http404("the stored content of this file is missing") from exc
    return window


def highlighted(text: str, query: str) -> list[tuple[str, bool]]:
    """``text`` in pieces, each ``(piece, matches)``: the matches of ``query`` (compared
    casefolded, as the search is) and the text between them."""
    folded, needle = text.casefold(), query.casefold()
    if not needle or len(folded) != len(text):
        # A character whose casefold is longer (ß → ss) would shift the offsets: the line
        # is still marked as a hit, as a whole.
        return [(text, False)]
    parts, start = [], 0
    while (found := folded.find(needle, start)) >= 0:
        if found > start:
            parts.append((text[start:found], False))
        parts.append((text[found : found + len(needle)], True))
        start = found + len(needle)
    if start < len(text):
        parts.append((text[start:], False))
    return parts


@require_GET
@vary_on_headers("HX-Request")
@workspace_view
def file_view(request: PageRequest) -> HttpResponse:
    row = _file_or_404(request)
    if not _verified(row):
        context = {"file": row, "damaged": True, "event": selectors.file_event(file=row)}
        response = render_page(request, "reduction_app/file.html", context)
        response.status_code = HTTPStatus.SERVICE_UNAVAILABLE
        return response
    query = request.GET.get("q", "")
    window = _window(row, int_param(request, "page") or None, query)

    def at(page: int) -> str:
        return url_with(request, page=page)

    pager = Pager(
        number=window.page,
        count=window.pages,
        previous=at(window.page - 1) if window.page > 1 else None,
        next=at(window.page + 1) if window.page < window.pages else None,
        first=at(1) if window.page > 1 else None,
    )
    hits = [(number, at(page) + f"#L{number}") for number, page in window.hits]
    context = {
        "file": row,
        "window": window,
        "rows": [
            (n, highlighted(text, query) if hit else [(text, False)], hit)
            for n, text, hit in window.lines
        ],
        "first_hit": next((n for n, _, hit in window.lines if hit), None),
        "pager": pager,
        "q": query,
        "hits": hits,
        "event": selectors.file_event(file=row),
        "last_page": at(window.pages) if window.page < window.pages else None,
    }
    return render_page(request, "reduction_app/file.html", context, partial="lines")


@require_GET
@workspace_view
def file_raw(request: PageRequest) -> HttpResponseBase:
    """The exact stored bytes, streamed, as a UTF-8 text attachment."""
    row = _file_or_404(request)
    if not _verified(row):
        return HttpResponse(
            DAMAGED, status=HTTPStatus.SERVICE_UNAVAILABLE, content_type="text/plain; charset=utf-8"
        )
    try:
        handle = offload_storage().open(row.storage_name, "rb")
    except OSError as exc:
        raise Http404("the stored content of this file is missing") from exc
    name = posixpath.basename(row.path.rstrip("/")) or "offload"
    if "." not in name:
        name += ".txt"
    response = FileResponse(handle, as_attachment=True, filename=name)
    response["Content-Type"] = "text/plain; charset=utf-8"
    return response


urlpatterns = [
    path("files/", file_list, name="file_list"),
    path("files/view/", file_view, name="file_view"),
    path("files/raw/", file_raw, name="file_raw"),
]
