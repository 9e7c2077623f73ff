"""A request whose worker is killed while it stores offloads, on the production server
(real gunicorn, two sync workers; SQLite, and PostgreSQL when the suite runs on it).

Killed at a random moment while it stores thousands of offloads: what it stored is
journaled, counted apart by ``offload_check``, removed by ``offload_reclaim``, and
storage, rows and quota agree afterwards. Killed at each step of storing one content
(before its temporary file is created, once created and empty, half-written, written and
not yet renamed, stored and not yet recorded): no content's name ever holds other bytes
than the content, and the same request sent again is recorded whole and read back byte
for byte.

The steps are reached by a ``sitecustomize`` this module writes for the server only (its
``PYTHONPATH``): it wraps the local folder storage's steps and the backend's ``store`` as
they are imported, and a worker that reaches the step named in a control file removes the
file and sends itself SIGKILL. The app itself holds no hook.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from benchmarks.server import Server, fresh_postgres, production_server
from tests.app.support import grep_rounds
from tests.migrated_databases import copy_sqlite

pytestmark = pytest.mark.slow  # production servers whose workers are killed midway
ROUNDS = 4000
"""Tool rounds in the killed request; all but the last are offloaded."""
TIMEOUT = 120

KILL_HOOK = '''"""Test-only (tests/app/test_killed_requests.py): SIGKILL this process at one step
of storing offloads, named with a count in the file $REDUCTION_TEST_KILL_FILE
("mid-write 2": at the second write)."""

import importlib.machinery
import os
import signal
import sys

CONTROL = os.environ.get("REDUCTION_TEST_KILL_FILE", "")


def reached(step):
    """Whether this is the step to die at; the control file counts down, then goes."""
    try:
        with open(CONTROL) as handle:
            wanted, count = handle.read().split()
    except (FileNotFoundError, ValueError):
        return False
    if wanted != step:
        return False
    if int(count) > 1:
        with open(CONTROL, "w") as handle:
            handle.write(f"{step} {int(count) - 1}")
        return False
    os.unlink(CONTROL)
    return True


def die():
    os.kill(os.getpid(), signal.SIGKILL)


def patch_folder(module):
    cls = module.OffloadFolderStorage
    create, write, install = cls._create_temporary, cls._write_chunks, cls._install

    def _create_temporary(self, folder, basename):
        if reached("before-create"):
            die()
        created = create(self, folder, basename)
        if reached("after-create"):
            die()
        return created

    def _write_chunks(self, fd, content):
        if reached("mid-write"):
            data = b"".join(content.chunks())
            os.write(fd, data[: len(data) // 2])
            die()
        write(self, fd, content)

    def _install(self, temporary, full_path):
        if reached("after-write"):
            die()
        install(self, temporary, full_path)

    cls._create_temporary, cls._write_chunks, cls._install = (
        _create_temporary, _write_chunks, _install
    )


def patch_storage(module):
    cls = module.DjangoStorageBackend
    store = cls.store

    def patched(self, *args, **kwargs):
        store(self, *args, **kwargs)
        if reached("before-row"):
            die()

    cls.store = patched


PATCHES = {
    "reduction_app.records.folder": patch_folder,
    "reduction_app.records.storage": patch_storage,
}


class Patcher:
    @staticmethod
    def find_spec(name, path=None, target=None):
        patch = PATCHES.get(name)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            patch(module)

        spec.loader.exec_module = exec_module
        return spec


if CONTROL:
    sys.meta_path.insert(0, Patcher())
'''

STEPS = [
    ("before-create", 2),
    ("after-create", 2),
    ("mid-write", 2),
    ("after-write", 2),
    ("before-row", 1),
]
"""Where the worker is killed, and at which content of the request (the first one is
stored whole before the second one's step)."""


def _backends() -> list[Any]:
    """The server's own SQLite file, and a database on the run's PostgreSQL server when
    there is one (``db``, so the PostgreSQL pass runs it)."""
    url = os.environ.get("TEST_DATABASE_URL", "")
    postgres = pytest.param("postgres", marks=pytest.mark.db)
    return ["sqlite", postgres] if url.startswith("postgres") else ["sqlite"]


@pytest.fixture(scope="module", params=_backends())
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    with ExitStack() as stack:
        database_url = None
        folder = tmp_path_factory.mktemp(f"killed-{request.param}")
        if request.param == "postgres":
            template = request.getfixturevalue("postgres_template")
            database_url = stack.enter_context(
                fresh_postgres(os.environ["TEST_DATABASE_URL"], template=template)
            )
        else:
            copy_sqlite(request.getfixturevalue("sqlite_template"), folder)
        hooks = folder / "hooks"
        hooks.mkdir()
        (hooks / "sitecustomize.py").write_text(KILL_HOOK)
        path = os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH", "")]))
        env = {
            # Thousands of offloads in one request: more than REDUCTION_MAX_OFFLOADS lets
            # through by default, as an operator may allow.
            "REDUCTION_MAX_OFFLOADS": str(ROUNDS),
            "PYTHONPATH": path,
            "REDUCTION_TEST_KILL_FILE": str(folder / "kill-at"),
        }
        yield stack.enter_context(
            production_server(folder, database_url=database_url, env=env, migrated=True)
        )


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


def _get(server: Server, path: str, params: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    query = urllib.parse.urlencode(params)
    request = urllib.request.Request(
        f"{server.url}/api/v1{path}?{query}",
        headers={"Authorization": f"Bearer {server.api_key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def _names_hold_their_content(server: Server) -> None:
    """Every content's name holds the bytes whose digest it is named by: never a half."""
    for path in _stored(server):
        assert hashlib.sha256(path.read_bytes()).hexdigest() == path.stem, path


@pytest.mark.parametrize(("step", "nth"), STEPS, ids=[step for step, _ in STEPS])
def test_a_worker_killed_at_each_step_of_storing_leaves_nothing_half_done(
    server: Server, step: str, nth: int
) -> None:
    outputs = [f"{step} round {n} " * 20 for n in range(4)]
    body = {
        "config": {"max_tokens_for_clear": 1},
        "conversation_id": f"steps-{step}",
        "messages": grep_rounds(4, lambda n: outputs[n]),
    }
    data = json.dumps(body).encode()
    control = server.folder / "kill-at"
    control.write_text(f"{step} {nth}")
    try:
        answer: int | str = _post(server, data)
    except OSError as error:  # the worker died: the connection closes unanswered
        answer = type(error).__name__
    assert isinstance(answer, str), f"the request was answered {answer}"
    assert not control.exists(), f"no worker reached {step}"
    _names_hold_their_content(server)
    unfinished = list((server.folder / "media" / "offload").rglob(".*.partial"))
    if step in ("after-create", "mid-write", "after-write"):
        assert unfinished, "the killed write left no temporary file"

    assert _post(server, data) == 200
    _names_hold_their_content(server)
    status, _, listed = _get(server, "/files", {"conversation_id": f"steps-{step}"})
    assert status == 200
    files = {row["sha256"]: row["path"] for row in json.loads(listed)["results"]}
    # Every round but the last is cleared, each to a file of its own.
    expected = {hashlib.sha256(o.encode()).hexdigest(): o for o in outputs[:3]}
    assert set(files) == set(expected)
    for digest, path in files.items():
        status, headers, content = _get(
            server, "/files/raw", {"path": path, "conversation_id": f"steps-{step}"}
        )
        assert status == 200
        assert content == expected[digest].encode()
        assert headers["X-Content-SHA256"] == digest

    server.manage("offload_reclaim", "--workspace", "bench", "--older-than", "0")
    assert list((server.folder / "media" / "offload").rglob(".*.partial")) == []
    report = server.manage("offload_check", "--workspace", "bench", "--deep")
    assert report.splitlines()[0].endswith("; SHA-256 of each checked: consistent"), report
    assert len(report.splitlines()) == 1, report
