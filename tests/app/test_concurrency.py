"""Many agents at once on the production server: 8 clients x 200 requests, truncations
and clears mixed, on one shared conversation and on one each, against gunicorn with two
workers on SQLite (WAL) and on PostgreSQL.

Every answer must be a 200; afterwards the API must show exactly the events and files
the requests made, each offloaded file byte for byte the original (SHA-256), no path
twice. Every request has a time limit, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from benchmarks.server import Server, fresh_postgres, production_server
from tests.migrated_databases import copy_sqlite

pytestmark = pytest.mark.slow  # the production server under 1,600 requests
CLIENTS = 8
REQUESTS = 200
TIMEOUT = 60
"""Seconds one request may take: far above any answer here, so only a hang reaches it."""
SHARED = "shared"
"""The conversation the even clients share; each odd client has one of its own."""
TRUNCATE = {"max_length_for_trunc": 200}
CLEAR = {"max_tokens_for_clear": 10, "clear_retention_suffix_limit": 1}


def _databases() -> list[Any]:
    """The server's own SQLite file, and a database on the run's PostgreSQL server (so
    that half is ``db``: the PostgreSQL pass runs it)."""
    url = os.environ.get("TEST_DATABASE_URL", "")
    marks = [pytest.mark.db]
    if not url.startswith(("postgres://", "postgresql://")):
        marks.append(pytest.mark.skip("no TEST_DATABASE_URL"))
    return [
        pytest.param("sqlite", marks=pytest.mark.sqlite_only),
        pytest.param("postgresql", marks=marks),
    ]


@pytest.fixture(params=_databases())
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    with ExitStack() as stack:
        database_url = None
        if request.param == "postgresql":
            template = request.getfixturevalue("postgres_template")
            database_url = stack.enter_context(
                fresh_postgres(os.environ["TEST_DATABASE_URL"], template=template)
            )
        else:
            copy_sqlite(request.getfixturevalue("sqlite_template"), tmp_path / "server")
        yield stack.enter_context(
            production_server(
                tmp_path / "server", workers=2, database_url=database_url, migrated=True
            )
        )


@dataclass
class Expected:
    """What the requests of all clients should have left, gathered as they are answered."""

    files: dict[str, str] = field(default_factory=dict)
    """Offload path -> SHA-256 of the original content."""
    events: Counter[str] = field(default_factory=Counter)
    """Conversation -> events recorded for it."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, conversation: str, events: int, files: dict[str, str]) -> None:
        with self.lock:
            self.events[conversation] += events
            for path, digest in files.items():
                assert path not in self.files, f"{path} offloaded twice"
                self.files[path] = digest


class Api:
    """One keep-alive connection to the server with its key."""

    def __init__(self, server: Server) -> None:
        parts = urllib.parse.urlsplit(server.url)
        assert parts.hostname is not None and parts.port is not None
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=TIMEOUT)
        self.headers = {"Authorization": f"Bearer {server.api_key}"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        headers = {**self.headers, "Content-Type": "application/json"} if data else self.headers
        self.connection.request(method, f"/api/v1{path}", body=data, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.read()

    def ok(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self.call(method, path, body)
        assert status == HTTPStatus.OK, (method, path, status, data[:500])
        return json.loads(data)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def output(client: int, request: int, part: int) -> str:
    """A tool output of its own: no two requests offload the same content."""
    line = f"client {client} request {request} part {part}: " + "x" * 40 + "\n"
    return line * (5 + (client + request + part) % 7)


def truncate(api: Api, client: int, i: int, conversation: str, expected: Expected) -> None:
    text = output(client, i, 0)
    answer = api.ok(
        "POST",
        "/truncate",
        {
            "conversation_id": conversation,
            "tool_name": "grep",
            "tool_call_id": f"t{client}-{i}",
            "result": text,
            "config": TRUNCATE,
        },
    )
    assert answer["truncated"] is True
    assert answer["offload_path"] == f"/tmp/trunc/t{client}-{i}"
    expected.add(conversation, len(answer["events"]), {answer["offload_path"]: sha256(text)})


def clear(api: Api, client: int, i: int, conversation: str, expected: Expected) -> None:
    """Three rounds of tool calls: the two outside the last are offloaded."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the bug."}]
    texts = {}
    for part in range(3):
        call_id = f"c{client}-{i}-{part}"
        texts[call_id] = output(client, i, part)
        messages += [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "grep", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": call_id, "content": texts[call_id]},
        ]
    answer = api.ok(
        "POST",
        "/clear",
        {"conversation_id": conversation, "messages": messages, "config": CLEAR},
    )
    assert answer["applied"] is True
    offloaded = [e["offload_path"] for e in answer["events"] if e["kind"] == "tool"]
    assert offloaded == [f"/tmp/clear/c{client}-{i}-{part}" for part in (0, 1)]
    expected.add(
        conversation,
        len(answer["events"]),
        {path: sha256(texts[path.rsplit("/", 1)[1]]) for path in offloaded},
    )


def run_client(server: Server, client: int, expected: Expected) -> None:
    api = Api(server)
    conversation = SHARED if client % 2 == 0 else f"own-{client}"
    for i in range(REQUESTS):
        (truncate if (client + i) % 2 else clear)(api, client, i, conversation, expected)


def listed(api: Api, path: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a paginated list."""
    rows: list[dict[str, Any]] = []
    url = f"{path}?{urllib.parse.urlencode({**params, 'page_size': 500})}"
    while url:
        page = api.ok("GET", url)
        rows += page["results"]
        url = page["next"] and page["next"].split("/api/v1", 1)[1]
    return rows


def test_concurrent_clients_lose_nothing(server: Server) -> None:
    expected = Expected()
    started = time.monotonic()
    with ThreadPoolExecutor(CLIENTS) as pool:
        for done in [pool.submit(run_client, server, c, expected) for c in range(CLIENTS)]:
            done.result()
    elapsed = time.monotonic() - started
    api = Api(server)
    # 1,600 requests: half truncations (one event, one file each), half clears (two tool
    # events and a summary, two files each).
    assert sum(expected.events.values()) == CLIENTS * REQUESTS // 2 * (1 + 3)
    assert len(expected.files) == CLIENTS * REQUESTS // 2 * (1 + 2)
    for conversation, count in expected.events.items():
        assert len(listed(api, "/events", conversation_id=conversation)) == count, conversation
    files = listed(api, "/files")
    assert sorted(f["path"] for f in files) == sorted(expected.files)
    assert {f["path"]: f["sha256"] for f in files} == expected.files
    for path, digest in expected.files.items():
        status, data = api.call("GET", f"/files/raw?{urllib.parse.urlencode({'path': path})}")
        assert status == HTTPStatus.OK, path
        assert hashlib.sha256(data).hexdigest() == digest, path
    assert elapsed < 300, f"{CLIENTS * REQUESTS} requests took {elapsed:.0f} s"
