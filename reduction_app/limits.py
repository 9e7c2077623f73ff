"""Limits the app puts on requests before any view runs, as Django middleware: the size
of a REST API body (sent with a length or chunked) or of a page's (an upload), and no NUL
character in an address.
(The engine's reduction middleware is ``reduction_app.engine``.)"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import BadRequest
from django.http import HttpRequest, HttpResponse

from reduction_app.error_pages import json_error


def _nul_in_address(request: HttpRequest) -> tuple[str | None] | None:
    """Where the address holds a NUL character: ``(None,)`` in its path, ``(name,)`` in a
    query parameter, ``None`` nowhere. PostgreSQL refuses NUL in text (Django raises
    ``ValueError`` before the query is sent), so a lookup by such a value would be a 500
    there and a plain miss on SQLite; refusing it first answers alike on both."""
    if "\x00" in request.path:
        return (None,)
    for name, values in request.GET.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            return (name.replace("\x00", ""),)
    return None


_CHUNK = 64 * 1024
"""Bytes read at a time from a body."""


# What a server's WSGI input raises reading a malformed chunked body, by the names of
# gunicorn's exception classes (the app does not import its server), most specific first
# along each one's MRO; each is said after "malformed chunked request body: ".
_CHUNK_PROBLEMS = {
    "InvalidChunkSize": "invalid chunk size",
    "ChunkMissingTerminator": "a chunk or the trailer section does not end with CRLF",
    "InvalidChunkExtension": "invalid chunk extension",
    "LimitRequestHeaders": "the trailer section is too large",
    "InvalidHeaderName": "invalid trailer",
    "InvalidHeader": "invalid trailer",
    "ObsoleteFolding": "invalid trailer",
    # gunicorn's NoMoreData is an OSError too; both mean the client stopped sending.
    "NoMoreData": "the body ended before its last chunk",
    "OSError": "the body ended before its last chunk",
}


def _chunk_problem(exc: Exception) -> str:
    for cls in type(exc).__mro__:
        if cls.__name__ in _CHUNK_PROBLEMS:
            return _CHUNK_PROBLEMS[cls.__name__]
    return "it cannot be read"


def _discard(stream: Any, most: int) -> None:
    """Read and drop what ``stream`` holds, up to ``most`` bytes. A client that goes away
    meanwhile, or a chunked body that turns out malformed, ends it: the 413 is sent all
    the same."""
    left = most
    try:
        while left > 0:
            chunk = stream.read(min(_CHUNK, left))
            if not chunk:
                return
            left -= len(chunk)
    # OSError (Django's UnreadablePostError too), or the server's parse error of a
    # malformed chunked body: see _read_chunked.
    except Exception:
        return


def _too_big(request: HttpRequest, size: int, limit: int, *, api: bool = True) -> HttpResponse:
    """The 413 of a body of ``size`` bytes (its Content-Length), sent after reading the body
    when it is at most ``REDUCTION_MAX_DISCARD_BYTES``: a client that writes its whole body
    before reading (``http.client``, ``ReductionClient``) then reads the 413 instead of a
    reset connection. A bigger one is not read; gunicorn's sync worker closes the
    connection after the answer."""
    if size <= settings.REDUCTION_MAX_DISCARD_BYTES:
        _discard(request, size)
    detail = f"request body of {size} bytes is over the limit of {limit} bytes"
    if not api:  # a page's upload: text, for a person
        return HttpResponse(detail, status=413, content_type="text/plain; charset=utf-8")
    return json_error(413, detail)


def _read_chunked(request: HttpRequest, limit: int) -> HttpResponse | None:
    """Read a chunked body (no Content-Length, so Django reads it as empty) into the
    request, or answer why not: 413 past ``limit``, 411 when the server does not say that
    its WSGI input ends with the body (``wsgi.input_terminated``: gunicorn does; the
    development server does not, and reading on would wait for bytes that never come),
    and 400 for a malformed body (a bad chunk size, extension or trailer, a chunk without
    its CRLF, a client that stopped before the last chunk)."""
    if not request.META.get("wsgi.input_terminated"):
        return json_error(
            411,
            "chunked request bodies (Transfer-Encoding: chunked) are not read by this "
            "server: send the body with a Content-Length header",
        )
    stream = request.META["wsgi.input"]
    parts: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            chunk = stream.read(min(_CHUNK, limit + 1 - size))
            if not chunk:
                break
            parts.append(chunk)
            size += len(chunk)
    # The server parses the chunks as they are read and raises its own errors (gunicorn's
    # are no OSError, bar NoMoreData): whatever reading the client's bytes raises is the
    # request's fault, not the app's. A client that went away never reads this answer,
    # but the server logs a 400, not a 500 with a traceback.
    except Exception as exc:
        return json_error(400, f"malformed chunked request body: {_chunk_problem(exc)}")
    if size > limit:
        _discard(stream, settings.REDUCTION_MAX_DISCARD_BYTES - size)
        return json_error(413, f"chunked request body is over the limit of {limit} bytes")
    body = b"".join(parts)
    # What HttpRequest.body leaves behind once it has read a body, so that .body, .read()
    # and .POST all see this one.
    request._body = body
    request._stream = io.BytesIO(body)
    request.META["CONTENT_LENGTH"] = str(size)
    return None


def _chunked(request: HttpRequest) -> bool:
    return "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()


class ApiRequestSizeMiddleware:
    """Answer 413 with a JSON error when an API (or MCP) request's body is too big (a chunked body
    is read here, within the limit, or answered 411 where the server cannot), and with
    text when a page's is; refuse an address with a NUL character (an API request with
    422 and a JSON error, a page with 400)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        api = request.path.startswith("/api/")
        where = _nul_in_address(request)
        if where is not None:
            if not api:
                raise BadRequest("NUL character in the address")
            (name,) = where
            if name is None:
                return json_error(422, "the address must not contain NUL characters")
            return json_error(422, f"{name}: must not contain NUL characters", name)
        limit = settings.REDUCTION_MAX_REQUEST_BYTES
        # The MCP endpoint's clients are programs too: a chunked body is read for them,
        # and refused in the API's JSON.
        api = api or request.path == "/mcp"
        if api and _chunked(request):
            refused = _read_chunked(request, limit)
            if refused is not None:
                return refused
        try:
            size = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            size = 0
        if size > limit:
            # A page's body (an upload of recordings) is held to the same limit, before
            # the CSRF check reads it.
            return _too_big(request, size, limit, api=api)
        return self.get_response(request)
