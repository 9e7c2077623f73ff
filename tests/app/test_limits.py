"""reduction_app.limits through a real gunicorn server (the production server of
``benchmarks.server``, with a small body limit and its access log on): an oversized body
answered with a 413 the client can read, chunked bodies read within the limit, a
malformed chunked body answered 400 (written on a raw socket, as no HTTP client would);
and 411 where the server cannot read a chunked body, Django's development server
included."""

from __future__ import annotations

import http.client
import io
import json
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterable, Iterator
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from benchmarks.server import ROOT, Server, production_server, server_env
from reduction_app.client import ReductionAPIError, ReductionClient
from tests.migrated_databases import copy_sqlite

pytestmark = pytest.mark.slow  # gunicorn and the development server
TIMEOUT = 60
"""Seconds any one request may take."""
LIMIT = 256 * 1024
DISCARD = 32 * 1024 * 1024
# Well over what loopback's socket buffers hold (a few MB), so a server that answered
# before reading would reset the connection while the client still writes.
OVERSIZED = 24 * 1024 * 1024
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Server]:
    env = {
        "REDUCTION_MAX_REQUEST_BYTES": str(LIMIT),
        "REDUCTION_MAX_DISCARD_BYTES": str(DISCARD),
        # The access log, to see what the server answered a client that went away.
        "GUNICORN_CMD_ARGS": "--access-logfile -",
    }
    folder = copy_sqlite(sqlite_template, tmp_path_factory.mktemp("limits")).parent
    with production_server(folder, workers=2, env=env, migrated=True) as running:
        yield running


def _post(server: Server, body: bytes | Iterable[bytes], **headers: str) -> tuple[int, Any]:
    """POST ``/api/v1/clear`` on a fresh connection, the whole body written before the
    answer is read (as ``http.client`` does); an iterable body is sent chunked."""
    connection = http.client.HTTPConnection(
        urllib.parse.urlsplit(server.url).netloc, timeout=TIMEOUT
    )
    all_headers = {
        "Authorization": f"Bearer {server.api_key}",
        "Content-Type": "application/json",
        **headers,
    }
    try:
        connection.request(
            "POST",
            "/api/v1/clear",
            body=body,
            headers=all_headers,
            encode_chunked=not isinstance(body, bytes),
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def _clear_body(content: str) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": content}]}).encode()


def test_oversized_body_gets_a_413_the_client_reads(server: Server) -> None:
    body = _clear_body("x" * OVERSIZED)
    assert _post(server, body) == (
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        {
            "detail": f"request body of {len(body)} bytes is over the limit of {LIMIT} bytes",
            "field": None,
        },
    )


def test_client_reports_an_oversized_body_as_413(server: Server) -> None:
    client = ReductionClient(server.url, api_key=server.api_key, timeout=TIMEOUT)
    with pytest.raises(ReductionAPIError) as caught:
        client.clear([{"role": "user", "content": "x" * OVERSIZED}])
    assert caught.value.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert caught.value.detail.endswith(f" bytes is over the limit of {LIMIT} bytes")


def test_client_reports_a_body_past_the_discard_bound_as_413(server: Server) -> None:
    """Past ``REDUCTION_MAX_DISCARD_BYTES`` the server answers unread and closes: the
    client sees either that 413 or its connection reset while sending, a 413 both ways."""
    client = ReductionClient(server.url, api_key=server.api_key, timeout=TIMEOUT)
    with pytest.raises(ReductionAPIError) as caught:
        client.clear([{"role": "user", "content": "x" * (2 * DISCARD)}])
    assert caught.value.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE


def test_chunked_body_is_read(server: Server) -> None:
    body = _clear_body("hello")
    status, answer = _post(server, (body[i : i + 7] for i in range(0, len(body), 7)))
    assert status == HTTPStatus.OK, answer
    assert (answer["messages"], answer["applied"]) == (
        [{"role": "user", "content": "hello"}],
        False,
    )


def test_chunked_body_over_the_limit_is_413(server: Server) -> None:
    body = _clear_body("x" * (2 * LIMIT))
    chunks = (body[i : i + 65536] for i in range(0, len(body), 65536))
    assert _post(server, chunks) == (
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        {"detail": f"chunked request body is over the limit of {LIMIT} bytes", "field": None},
    )


def test_chunked_body_where_the_server_cannot_read_it_is_411(client: Any) -> None:
    """Django's test client, like its development server, does not mark its WSGI input as
    ending with the body (``wsgi.input_terminated``)."""
    response = client.post(
        "/api/v1/clear", b"{}", content_type="application/json", HTTP_TRANSFER_ENCODING="chunked"
    )
    assert response.status_code == HTTPStatus.LENGTH_REQUIRED
    assert response.json() == {
        "detail": "chunked request bodies (Transfer-Encoding: chunked) are not read by this "
        "server: send the body with a Content-Length header",
        "field": None,
    }


# Malformed chunked bodies -----------------------------------------------------------------

CHUNKED_HEAD = (
    b"POST /api/v1/clear HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n"
)
ENDED = "the body ended before its last chunk"


def _raw(url: str, head: bytes, body: bytes, *, then: str = "wait") -> tuple[int, Any] | None:
    """Send ``head`` and ``body`` on a raw connection, then: ``wait`` for the answer,
    ``shut`` the sending side first (the client stops mid-body but still reads), or
    ``close`` the connection (no answer is read: ``None``)."""
    address = urllib.parse.urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=TIMEOUT) as sock:
        sock.sendall(head + b"\r\n" + body)
        if then == "close":
            return None
        if then == "shut":
            sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    response = http.client.HTTPResponse(_Replay(answer))  # type: ignore[arg-type]
    response.begin()
    return response.status, json.loads(response.read())


class _Replay:
    """What ``http.client.HTTPResponse`` reads an answer from: bytes already received."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def makefile(self, mode: str) -> io.BytesIO:
        return io.BytesIO(self.data)


def _auth(server: Server) -> bytes:
    return CHUNKED_HEAD + f"Authorization: Bearer {server.api_key}\r\n".encode()


@pytest.mark.parametrize(
    ("body", "then", "problem"),
    [
        pytest.param(b"zz\r\n{}\r\n0\r\n\r\n", "wait", "invalid chunk size", id="not-hex"),
        pytest.param(b"-1\r\n{}\r\n0\r\n\r\n", "wait", "invalid chunk size", id="negative"),
        # A size no body reaches: the client's bytes are all part of the first chunk.
        pytest.param(b"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n", "shut", ENDED, id="huge"),
        pytest.param(
            b"2\r\n{}XX0\r\n\r\n",
            "wait",
            "a chunk or the trailer section does not end with CRLF",
            id="no-crlf-after-data",
        ),
        pytest.param(b"2;=x\r\n{}\r\n0\r\n\r\n", "wait", "invalid chunk extension", id="extension"),
        pytest.param(b"2\r\n{}\r\n0\r\nno colon\r\n\r\n", "wait", "invalid trailer", id="trailer"),
        pytest.param(
            b"2\r\n{}\r\n0\r\nX: a\nY: b\r\n\r\n", "wait", "invalid trailer", id="trailer-lf"
        ),
        pytest.param(b"a\r\n{}", "shut", ENDED, id="mid-chunk"),
        pytest.param(b"2\r\n{}\r\n", "shut", ENDED, id="before-last-chunk"),
    ],
)
def test_malformed_chunked_body_is_400(
    server: Server, body: bytes, then: str, problem: str
) -> None:
    logged = server.log.stat().st_size
    assert _raw(server.url, _auth(server), body, then=then) == (
        HTTPStatus.BAD_REQUEST,
        {"detail": f"malformed chunked request body: {problem}", "field": None},
    )
    _assert_logged_400_without_traceback(server.log, logged)


@pytest.mark.parametrize("body", [b"a\r\n{}", b"2\r\n{}\r\n"], ids=["mid-chunk", "before-last"])
def test_client_gone_mid_chunked_body_logs_no_error(server: Server, body: bytes) -> None:
    """It cannot read an answer; the server logs the 400 it sent, not a 500."""
    logged = server.log.stat().st_size
    assert _raw(server.url, _auth(server), body, then="close") is None
    _assert_logged_400_without_traceback(server.log, logged)


def _assert_logged_400_without_traceback(log: Path, start: int) -> None:
    """The access log line of the one request sent since ``start`` says 400, and the
    server logged no traceback and no 500 meanwhile."""
    access = '"POST /api/v1/clear HTTP/1.1"'
    deadline = time.monotonic() + TIMEOUT
    while access not in (text := log.read_bytes()[start:].decode("utf-8", "replace")):
        assert time.monotonic() < deadline, text
        time.sleep(0.05)
    lines = [line for line in text.splitlines() if access in line]
    assert len(lines) == 1, text
    assert f"{access} 400 " in lines[0], text
    assert "Traceback" not in text
    assert "Internal Server Error" not in text


@pytest.fixture(scope="module")
def runserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Django's development server (``manage.py runserver``, DEBUG on as ``make run``
    starts it) on a free port, and the file of its output; stopped after the module's
    last test."""
    folder = tmp_path_factory.mktemp("runserver")
    env = server_env(folder, workers=1, extra={"DJANGO_DEBUG": "1"})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = folder / "runserver.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, log.read_text()
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield url, log
    finally:
        process.terminate()
        process.wait(timeout=TIMEOUT)


@pytest.mark.parametrize(
    "body",
    [b"zz\r\n{}\r\n0\r\n\r\n", b"ffffffffffffffffffff\r\n{}\r\n", b"2\r\n{}XX0\r\n\r\n"],
    ids=["not-hex", "huge", "no-crlf-after-data"],
)
def test_malformed_chunked_body_on_the_development_server_is_411(
    runserver: tuple[str, Path], body: bytes
) -> None:
    """It reads no chunked body at all, so none is malformed to it: the 411 of any."""
    url, log = runserver
    logged = log.stat().st_size
    assert _raw(url, CHUNKED_HEAD, body) == (
        HTTPStatus.LENGTH_REQUIRED,
        {
            "detail": "chunked request bodies (Transfer-Encoding: chunked) are not read by this "
            "server: send the body with a Content-Length header",
            "field": None,
        },
    )
    text = log.read_bytes()[logged:].decode("utf-8", "replace")
    assert "Traceback" not in text
    assert '"POST /api/v1/clear HTTP/1.1" 500' not in text
