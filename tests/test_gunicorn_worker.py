"""``config/gunicorn_worker.py``: the errors gunicorn answers itself, before the app sees
a request, are JSON like every other error of the API.

Most tests send raw bytes to the production server of ``benchmarks.server`` (real
gunicorn, as ``make serve`` starts it); the 500 for an error of gunicorn's own is made by
calling the worker on a real socket pair, since no request can make one happen."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from collections.abc import Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger
from gunicorn.http.errors import InvalidResponseHeader, LimitRequestLine

from benchmarks.server import Server, production_server
from config.gunicorn_worker import JSONSyncWorker
from tests.migrated_databases import copy_sqlite

TIMEOUT = 30
"""Seconds any one request may take."""
# gunicorn's defaults: --limit-request-line, --limit-request-field_size and
# --limit-request-fields.
LINE_LIMIT = 4094
FIELD_SIZE_LIMIT = 8190
FIELDS_LIMIT = 100


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Server]:
    folder = copy_sqlite(sqlite_template, tmp_path_factory.mktemp("protocol")).parent
    with production_server(folder, workers=2, migrated=True) as running:
        yield running


def send_raw(server: Server, data: bytes) -> tuple[int, str, http.client.HTTPMessage, Any]:
    """Write ``data`` as a request on a fresh connection; the answer's status, reason,
    headers and body parsed as JSON."""
    netloc = urllib.parse.urlsplit(server.url).netloc
    host, port = netloc.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(data)
        response = http.client.HTTPResponse(sock)
        response.begin()
        try:
            return response.status, response.reason, response.headers, json.loads(response.read())
        finally:
            response.close()


def assert_json_error(
    answer: tuple[int, str, http.client.HTTPMessage, Any], status: HTTPStatus, detail: str
) -> None:
    got_status, reason, headers, body = answer
    assert (got_status, reason) == (status, status.phrase)
    assert headers["Content-Type"] == "application/json"
    assert headers["Connection"] == "close"
    assert body == {"detail": detail, "field": None}


def test_header_longer_than_the_limit_is_431_json(server: Server) -> None:
    # One header line of 9,010 bytes with its CRLF, over the 8,190 gunicorn allows.
    request = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * 9000
    answer = send_raw(server, request + b"\r\n\r\n")
    assert_json_error(
        answer,
        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
        f"a request header is longer than {FIELD_SIZE_LIMIT} bytes",
    )


def test_too_many_headers_is_431_json(server: Server) -> None:
    headers = b"".join(b"X-Header-%d: v\r\n" % n for n in range(FIELDS_LIMIT + 1))
    answer = send_raw(server, b"GET / HTTP/1.1\r\n" + headers + b"\r\n")
    assert_json_error(
        answer,
        HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE,
        f"the request has more than {FIELDS_LIMIT} headers",
    )


def test_request_line_longer_than_the_limit_is_414_json(server: Server) -> None:
    request = b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    answer = send_raw(server, request)
    assert_json_error(
        answer,
        HTTPStatus.REQUEST_URI_TOO_LONG,
        f"the request line is longer than {LINE_LIMIT} bytes",
    )


@pytest.mark.parametrize(
    ("request_line", "detail"),
    [
        (b"GARBAGE", "the request line is not valid HTTP"),
        (b"G<>T / HTTP/1.1", "the request method is not valid"),
        (b"GET / HTTP/7.5", "the HTTP version is not supported"),
    ],
)
def test_malformed_request_line_is_400_json(
    server: Server, request_line: bytes, detail: str
) -> None:
    answer = send_raw(server, request_line + b"\r\nHost: 127.0.0.1\r\n\r\n")
    assert_json_error(answer, HTTPStatus.BAD_REQUEST, detail)


def test_malformed_header_is_400_json_that_does_not_echo_it(server: Server) -> None:
    """The detail names what was wrong, never what the client sent."""
    hostile = b'"}<script>alert(1)</script>'
    answer = send_raw(
        server, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name" + hostile + b": v\r\n\r\n"
    )
    assert_json_error(answer, HTTPStatus.BAD_REQUEST, "a request header is not valid")


def test_request_the_app_answers_is_not_touched(server: Server) -> None:
    """Only gunicorn's own errors change: a request that reaches the app gets its answer."""
    answer = send_raw(server, b"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status, _, headers, body = answer
    # django-ninja's answers name their charset; the worker's are ASCII JSON.
    assert (status, headers["Content-Type"]) == (
        HTTPStatus.UNAUTHORIZED,
        "application/json; charset=utf-8",
    )
    assert body == {"detail": "missing or invalid API key", "field": None}


def handled(exc: BaseException) -> bytes:
    """What the worker writes to a client for ``exc`` raised while it served one, read off
    the other end of a socket pair."""
    config = Config()
    worker = JSONSyncWorker(0, 0, [], None, 30, config, Logger(config))
    ours, theirs = socket.socketpair()
    with ours, theirs:
        worker.handle_error(None, ours, ("127.0.0.1", 1234), exc)
        ours.close()
        chunks = []
        while chunk := theirs.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def parse(raw: bytes) -> tuple[bytes, dict[str, str], Any]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return status_line.encode(), headers, json.loads(body)


def test_worker_answers_an_unknown_error_with_a_500_that_does_not_leak_it() -> None:
    status_line, headers, body = parse(handled(RuntimeError("the secret key is rl_1234")))
    assert status_line == b"HTTP/1.1 500 Internal Server Error"
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(json.dumps(body))
    assert body == {"detail": "internal server error", "field": None}


def test_worker_answers_a_bad_response_header_of_the_app_with_a_500() -> None:
    """An invalid header the app sent is the server's fault, however it is named."""
    status_line, _, body = parse(handled(InvalidResponseHeader("X-Bad\r\nInjected: 1")))
    assert status_line == b"HTTP/1.1 500 Internal Server Error"
    assert body == {"detail": "internal server error", "field": None}


def test_worker_names_no_limit_when_gunicorn_gives_none() -> None:
    status_line, _, body = parse(handled(LimitRequestLine("line too long")))
    assert status_line == f"HTTP/1.1 414 {HTTPStatus.REQUEST_URI_TOO_LONG.phrase}".encode()
    assert body == {"detail": "the request line is too long", "field": None}
