"""reduction_app.limits through a real gunicorn server (the production server of
``benchmarks.server``, with a small body limit): an oversized body answered with a 413 the
client can read, chunked bodies read within the limit; and 411 where the server cannot
read a chunked body."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from collections.abc import Iterable, Iterator
from http import HTTPStatus
from typing import Any

import pytest

from benchmarks.server import Server, production_server
from reduction_app.client import ReductionAPIError, ReductionClient

TIMEOUT = 60
"""Seconds any one request may take."""
LIMIT = 256 * 1024
DISCARD = 32 * 1024 * 1024
# Well over what loopback's socket buffers hold (a few MB), so a server that answered
# before reading would reset the connection while the client still writes.
OVERSIZED = 24 * 1024 * 1024
MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {"REDUCTION_MAX_REQUEST_BYTES": str(LIMIT), "REDUCTION_MAX_DISCARD_BYTES": str(DISCARD)}
    with production_server(tmp_path_factory.mktemp("limits"), workers=2, env=env) as running:
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
