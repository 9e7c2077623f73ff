"""gunicorn's sync worker, answering the errors gunicorn makes itself as JSON.

A request gunicorn cannot parse (a bad request line, a header past its limits) never
reaches the app, and gunicorn answers it with a small HTML page. This worker answers it
with the body every other API error has, ``{"detail": ..., "field": null}``, and the
status gunicorn picks; the app's own errors stay the app's (``reduction_app/limits.py``).
"""

from __future__ import annotations

import json
import socket
from http import HTTPStatus
from http.client import responses
from typing import Any

from gunicorn import util  # type: ignore[import-untyped]
from gunicorn.workers.sync import SyncWorker  # type: ignore[import-untyped]

__all__ = ["JSONSyncWorker"]

# gunicorn's exception classes by name, most specific first along each one's MRO: read
# by name so that a gunicorn without one of them (they came over several releases)
# still loads this module.
_DETAILS = {
    "InvalidRequestLine": "the request line is not valid HTTP",
    "InvalidRequestMethod": "the request method is not valid",
    "InvalidHTTPVersion": "the HTTP version is not supported",
    "InvalidHeaderName": "a request header is not valid",
    "InvalidHeader": "a request header is not valid",
    "ObsoleteFolding": "a request header is folded over several lines",
    "InvalidSchemeHeaders": "the request's scheme headers contradict each other",
    "UnsupportedTransferCoding": "the request's transfer coding is not supported",
    "ExpectationFailed": "the request's Expect header cannot be met",
    "InvalidChunkSize": "the chunked request body is malformed",
    "ChunkMissingTerminator": "the chunked request body is malformed",
    "InvalidChunkExtension": "the chunked request body is malformed",
    "InvalidProxyLine": "the PROXY protocol line is not valid",
    "ForbiddenProxyRequest": "the request is forbidden",
    "InvalidH2CPreface": "the HTTP/2 connection preface is not valid",
    "SSLError": "the TLS connection failed",
}
_MAX_HEADERS = 32768
"""gunicorn's ceiling on ``limit_request_fields``: a larger setting counts as this."""


def _detail(exc: BaseException, status: int, cfg: Any) -> str:
    """The ``detail`` of the JSON answer to ``exc``, which gunicorn answered with
    ``status``; ``cfg`` is gunicorn's configuration, for the limits it names.

    A few words of our own, never what the client sent (gunicorn's messages quote the
    offending line or header, which may be 8 KB of anything); the server's own fault is
    ``internal server error``, whatever the exception said."""
    if status == HTTPStatus.INTERNAL_SERVER_ERROR:
        return "internal server error"
    for cls in type(exc).__mro__:
        name = cls.__name__
        if name == "LimitRequestLine":
            # ``max_size`` is the limit the parser applied; a parser that gives none
            # (the C parser's message is a string) is not second-guessed.
            limit = getattr(exc, "max_size", None)
            if isinstance(limit, int) and limit > 0:
                return f"the request line is longer than {limit} bytes"
            return "the request line is too long"
        if name == "LimitRequestHeaders":
            return _headers_detail(str(exc), cfg)
        if name in _DETAILS:
            return _DETAILS[name]
    return responses.get(status, "bad request").lower()


def _headers_detail(message: str, cfg: Any) -> str:
    # gunicorn's own fixed words tell which header limit was passed.
    size = cfg.limit_request_field_size
    if message == "limit request headers fields size" and size > 0:
        return f"a request header is longer than {size} bytes"
    fields = cfg.limit_request_fields
    if message == "limit request headers fields" and 0 < fields <= _MAX_HEADERS:
        return f"the request has more than {fields} headers"
    return "the request's headers are too large"


class _Recorder:
    """Stands in for the client's socket while gunicorn's ``handle_error`` runs: keeps
    what it writes; anything else it asks of the socket goes to the real one."""

    def __init__(self, client: socket.socket) -> None:
        self._client = client
        self.written = bytearray()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def gettimeout(self) -> float:
        return 0.0

    def setblocking(self, flag: bool) -> None:
        pass

    def sendall(self, data: bytes) -> None:
        self.written += data

    def send(self, data: bytes) -> int:
        self.written += data
        return len(data)


def _status_of(answer: bytes) -> tuple[int, str] | None:
    """The status code and reason of an HTTP answer's status line, or ``None``."""
    line = answer.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return None
    return int(parts[1]), parts[2] if len(parts) == 3 else ""


def _json_answer(status: int, reason: str, detail: str) -> bytes:
    """A whole HTTP/1.1 answer whose body is the API's JSON error; the connection closes
    after it (the request is not understood, so nothing after it can be read)."""
    # The phrase Django gives the app's own answers, which is also right where gunicorn's
    # is not (its 501 says "Bad Request").
    reason = responses.get(status, reason)
    body = json.dumps({"detail": detail, "field": None}).encode("ascii")
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "\r\n"
    )
    return head.encode("latin-1") + body


class JSONSyncWorker(SyncWorker):  # type: ignore[misc]  # gunicorn has no types
    """gunicorn's sync worker, with JSON in place of its HTML error pages."""

    def handle_error(self, req: Any, client: socket.socket, addr: Any, exc: BaseException) -> None:
        # gunicorn's own handle_error runs as always (its status, its warning, its
        # traceback for an error of its own, the access log line), writing into a recorder
        # in place of the client's socket; only the status line it wrote is kept, so a new
        # gunicorn that answers some error differently is followed, not contradicted. An
        # error raised after the app started its response never gets here: the sync worker
        # logs it and closes the connection, since a second response would corrupt the first.
        recorder = _Recorder(client)
        super().handle_error(req, recorder, addr, exc)
        status = _status_of(bytes(recorder.written))
        if status is None:
            # gunicorn wrote no answer (or one we cannot read): neither do we.
            return
        code, reason = status
        answer = _json_answer(code, reason, _detail(exc, code, self.cfg))
        try:
            util.write_nonblock(client, answer)
        except Exception:
            self.log.debug("Failed to send error message.")
