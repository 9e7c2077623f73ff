"""The production server as ``make serve`` runs it: real gunicorn with two sync workers,
DEBUG off, a migrated temporary SQLite database, static files collected for whitenoise.

``benchmarks.server`` starts it (the API load benchmark measures the same server); every
request has a time limit and the server is stopped after the last test, whatever
happened."""

from __future__ import annotations

import asyncio
import gzip
import http.client
import json
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

import pytest

from benchmarks.server import ManageError, Server, production_server
from tests.app.mcp.test_live import session, text_of
from tests.app.support import clear_placeholder

pytestmark = pytest.mark.slow  # gunicorn with two workers
TIMEOUT = 30
"""Seconds any one request may take."""
PASSWORD = "correct horse battery staple"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with production_server(tmp_path_factory.mktemp("server"), workers=2) as running:
        running.manage(
            "shell",
            "-c",
            "from django.contrib.auth.models import User; "
            "from reduction_app.workspaces.services import workspace_get_or_create; "
            f"user = User.objects.create_user('ada', password={PASSWORD!r}); "
            "workspace_get_or_create(name='bench', user=user)",
        )
        yield running


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def text(self) -> str:
        return self.body.decode("utf-8")


def request(
    server: Server,
    path: str,
    *,
    method: str = "GET",
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request on a fresh connection (sync workers close each one), never redirected."""
    connection = http.client.HTTPConnection(
        urllib.parse.urlsplit(server.url).netloc, timeout=TIMEOUT
    )
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def test_production_server_runs_two_workers_with_debug_off(server: Server) -> None:
    log = server.log.read_text()
    assert log.count("Booting worker") == 2
    # gunicorn's sync worker, answering its own errors as JSON (config/gunicorn_worker.py).
    assert "Using worker: config.gunicorn_worker.JSONSyncWorker" in log


def test_production_server_knows_its_master_and_workers(server: Server) -> None:
    booted = re.findall(r"Booting worker with pid: (\d+)", server.log.read_text())
    assert server.worker_pids() == sorted(int(pid) for pid in booted)
    assert f"[{server.pid}]" in server.log.read_text()


def test_production_server_manage_keeps_what_a_failed_command_printed(server: Server) -> None:
    with pytest.raises(ManageError) as failed:
        server.manage("shell", "--no-imports", "-c", "print('counted'); raise SystemExit(3)")
    assert (failed.value.returncode, failed.value.stdout) == (3, "counted\n")


def test_production_server_signs_in_and_shows_the_dashboard(server: Server) -> None:
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{server.url}/accounts/login/", timeout=TIMEOUT) as response:
        page = response.read().decode()
    assert response.status == HTTPStatus.OK
    assert "<h1>Sign in</h1>" in page
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    form = urllib.parse.urlencode(
        {"username": "ada", "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)}
    ).encode()
    # The sign-in redirects to the overview; the opener follows with the session cookie.
    with opener.open(f"{server.url}/accounts/login/", data=form, timeout=TIMEOUT) as response:
        overview = response.read().decode()
    assert (response.status, response.url) == (HTTPStatus.OK, f"{server.url}/")
    assert "<h1>Overview</h1>" in overview


def test_production_server_serves_hashed_static_files_for_good(server: Server) -> None:
    page = request(server, "/accounts/login/").text()
    # The manifest storage names each file after its content.
    script = re.search(r'<script src="(/static/django_htmx/htmx[^"]*\.[0-9a-f]{12}\.js)"', page)
    assert script is not None, page
    answer = request(server, script.group(1), headers={"Accept-Encoding": "gzip"})
    assert answer.status == HTTPStatus.OK
    assert answer.headers["Cache-Control"] == "max-age=315360000, public, immutable"
    assert answer.headers["Content-Encoding"] == "gzip"
    assert answer.headers["Content-Type"].startswith("text/javascript")
    assert b"htmx" in gzip.decompress(answer.body)
    assert request(server, "/static/django_htmx/no-such-file.js").status == HTTPStatus.NOT_FOUND


def test_production_server_clear_with_a_real_key(server: Server) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        _call("call_a"),
        {"role": "tool", "tool_call_id": "call_a", "content": "A" * 200},
        _call("call_b"),
        {"role": "tool", "tool_call_id": "call_b", "content": "B" * 200},
    ]
    body = {
        "config": {"max_tokens_for_clear": 100},
        "conversation_id": "run-1",
        "messages": messages,
    }
    headers = {"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"}
    answer = request(
        server, "/api/v1/clear", method="POST", body=json.dumps(body).encode(), headers=headers
    )
    assert answer.status == HTTPStatus.OK, answer.body
    cleared = json.loads(answer.body)
    # The figures of tests/app/reductions/test_api.py, which runs the same request in-process.
    assert (cleared["applied"], cleared["tokens_before"], cleared["tokens_after"]) == (
        True,
        115,
        90,
    )
    assert cleared["messages"] == [
        *messages[:3],
        {
            "role": "tool",
            "tool_call_id": "call_a",
            "content": clear_placeholder("/tmp/clear/call_a"),
        },
        *messages[4:],
    ]
    assert [(e["kind"], e["call_id"]) for e in cleared["events"]] == [
        ("tool", "call_a"),
        ("summary", ""),
    ]
    # The offloaded result went to the server's own media folder and reads back whole.
    raw = request(server, "/api/v1/files/raw?path=/tmp/clear/call_a", headers=headers)
    assert (raw.status, raw.body) == (HTTPStatus.OK, b"A" * 200)
    assert list(Path(server.env["REDUCTION_MEDIA_ROOT"]).rglob("*.txt"))


def test_production_server_refuses_a_missing_key(server: Server) -> None:
    answer = request(server, "/api/v1/events")
    assert answer.status == HTTPStatus.UNAUTHORIZED
    assert json.loads(answer.body) == {"detail": "missing or invalid API key", "field": None}


def test_production_server_404_is_not_the_debug_page(server: Server) -> None:
    answer = request(server, "/no-such-page/")
    assert answer.status == HTTPStatus.NOT_FOUND
    page = answer.text()
    assert "<h1>Not Found</h1>" in page
    # The DEBUG page lists the URL patterns it tried and says how to turn it off.
    for debug_text in ("URLconf", "DEBUG = True", "Traceback", "config.urls"):
        assert debug_text not in page


def test_production_server_refuses_an_unknown_host(server: Server) -> None:
    answer = request(server, "/accounts/login/", headers={"Host": "evil.example"})
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert "DisallowedHost" not in answer.text()


def test_production_server_refuses_an_unknown_host_on_the_api_in_json(server: Server) -> None:
    headers = {"Host": "evil.example", "Authorization": f"Bearer {server.api_key}"}
    answer = request(server, "/api/v1/events", headers=headers)
    assert answer.status == HTTPStatus.BAD_REQUEST
    assert answer.headers["Content-Type"] == "application/json"
    assert json.loads(answer.body) == {
        "detail": "the request's Host header names a host this server does not serve",
        "field": None,
    }


def test_production_server_answers_the_api_in_json_where_django_answers(server: Server) -> None:
    """A wrong method and an unknown address, answered before any operation runs."""
    headers = {"Authorization": f"Bearer {server.api_key}"}
    wrong = request(server, "/api/v1/clear", headers=headers)
    assert (wrong.status, wrong.headers["Allow"]) == (HTTPStatus.METHOD_NOT_ALLOWED, "POST")
    assert json.loads(wrong.body) == {
        "detail": "method GET is not allowed here; allowed: POST",
        "field": None,
    }
    missing = request(server, "/api/v2/clear", method="POST", body=b"{}", headers=headers)
    assert missing.status == HTTPStatus.NOT_FOUND
    assert json.loads(missing.body) == {"detail": "no such endpoint: /api/v2/clear", "field": None}


def _call(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "grep", "arguments": "{}"}}
        ],
    }


def test_production_server_serves_mcp_from_its_sync_workers(server: Server) -> None:
    """The MCP endpoint under gunicorn's sync workers: the mcp package's client reads
    back an offload the engine made, as ``GET /files/read`` serves it."""
    headers = {"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"}
    body = {
        "config": {"max_length_for_trunc": 10},
        "tool_name": "grep",
        "tool_call_id": "call_mcp",
        "result": "".join(f"match {n}\n" for n in range(30)),
        "conversation_id": "run-mcp",
    }
    answer = request(
        server, "/api/v1/truncate", method="POST", body=json.dumps(body).encode(), headers=headers
    )
    path = json.loads(answer.body)["offload_path"]
    query = urllib.parse.urlencode({"path": path, "offset": 5, "limit": 10})
    rest = json.loads(request(server, f"/api/v1/files/read?{query}", headers=headers).body)

    async def read() -> tuple[str, bool]:
        async with session(server.url, server.api_key) as client:
            return await text_of(client, "read_file", path=path, offset=5, limit=10)

    text, error = asyncio.run(read())
    assert not error
    assert text == rest["content"] + "[15 more lines; read on with offset=15]\n"
