"""A request whose worker is killed while it stores thousands of offloads, on the
production server (real gunicorn, two sync workers; SQLite, and PostgreSQL when the
suite runs on it): what it stored is journaled, counted apart by ``offload_check``,
removed by ``offload_reclaim``, and storage, rows and quota agree afterwards."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from benchmarks.server import Server, fresh_postgres, production_server
from tests.app.support import grep_rounds

ROUNDS = 4000
"""Tool rounds in the killed request; all but the last are offloaded."""
TIMEOUT = 120


def _backends() -> list[str]:
    url = os.environ.get("TEST_DATABASE_URL", "")
    return ["sqlite", "postgres"] if url.startswith("postgres") else ["sqlite"]


@pytest.fixture(scope="module", params=_backends())
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with ExitStack() as stack:
        database_url = None
        if request.param == "postgres":
            database_url = stack.enter_context(fresh_postgres(os.environ["TEST_DATABASE_URL"]))
        folder = tmp_path_factory.mktemp(f"killed-{request.param}")
        # Thousands of offloads in one request: more than REDUCTION_MAX_OFFLOADS lets
        # through by default, as an operator may allow.
        env = {"REDUCTION_MAX_OFFLOADS": str(ROUNDS)}
        yield stack.enter_context(production_server(folder, database_url=database_url, env=env))


def _body(rounds: int, conversation_id: str) -> bytes:
    messages = grep_rounds(rounds, lambda n: f"{n} " * 40)
    body = {
        "config": {"max_tokens_for_clear": 1000},
        "conversation_id": conversation_id,
        "messages": messages,
    }
    return json.dumps(body).encode()


def _post(server: Server, body: bytes) -> int:
    request = urllib.request.Request(
        f"{server.url}/api/v1/clear",
        data=body,
        headers={"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as error:
        return error.code


def _stored(server: Server) -> list[Path]:
    return [p for p in (server.folder / "media" / "offload").rglob("*.txt")]


def _workers(server: Server) -> list[int]:
    """The pids of the server's gunicorn workers: gunicorn processes started with its
    media folder whose parent is one too (the master)."""
    mine: dict[int, int] = {}
    marker = f"REDUCTION_MEDIA_ROOT={server.folder / 'media'}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if b"gunicorn" in cmdline and marker in environ.split(b"\0"):
            mine[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    return [pid for pid, parent in mine.items() if parent in mine]


def _check(server: Server) -> str:
    return server.manage("offload_check", "--workspace", "bench")


def test_a_worker_killed_while_storing_leaves_what_the_reclaim_removes(server: Server) -> None:
    answers: list[int | str] = []

    def send() -> None:
        try:
            answers.append(_post(server, _body(ROUNDS, "killed")))
        except OSError as error:  # the worker died: the connection closes unanswered
            answers.append(type(error).__name__)

    thread = threading.Thread(target=send)
    thread.start()
    deadline = time.monotonic() + TIMEOUT
    while len(_stored(server)) < 50 and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    for pid in _workers(server):
        os.kill(pid, signal.SIGKILL)
    thread.join(TIMEOUT)
    assert answers and isinstance(answers[0], str), f"the request was answered: {answers}"
    left = len(_stored(server))
    assert 0 < left < ROUNDS - 1, "the worker was not killed while storing"

    # Journaled, so counted apart and not a fault; the quota counts it too.
    report = _check(server)
    assert f"{left} stored, named only by requests' journals" in report
    assert ": consistent" in report

    # Still a running request's, by the default cutoff: the reclaim leaves it.
    kept = server.manage("offload_reclaim", "--workspace", "bench")
    assert "removed 0 stored objects" in kept
    assert len(_stored(server)) == left

    reclaimed = server.manage("offload_reclaim", "--workspace", "bench", "--older-than", "0")
    assert f"removed {left} stored objects" in reclaimed
    assert _stored(server) == []
    final = _check(server)
    assert final.splitlines()[0].endswith(
        "0 stored, 0 named by rows; usage recorded 0 bytes, stored 0 bytes: consistent"
    )

    # The server goes on (the master started new workers), and the same request,
    # sent again, is recorded whole.
    assert _post(server, _body(ROUNDS, "killed")) == 200
    after = _check(server)
    assert after.splitlines()[0].startswith(f"bench: {ROUNDS - 1} stored, {ROUNDS - 1} named")
    assert after.splitlines()[0].endswith(": consistent")
