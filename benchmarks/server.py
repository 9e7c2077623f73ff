"""A production server in a temporary folder, as ``make serve`` runs it.

:mod:`benchmarks.api_load` measures this server and ``tests/app/test_production_server.py``
checks it, so the figures are those of the server the test vouches for. Every process
started here is stopped on the way out, whatever happened.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "GUNICORN_ARGS",
    "NOT_INHERITED",
    "ROOT",
    "ManageError",
    "Server",
    "fresh_postgres",
    "production_server",
    "server_env",
    "temporary_server",
]

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 60.0
"""Seconds for gunicorn to listen and boot every worker."""
STOP_TIMEOUT = 10.0
"""Seconds for a graceful stop before the process group is killed."""
GUNICORN_ARGS = ("--config", "config/gunicorn_conf.py", "config.wsgi")
"""What ``make serve`` passes to gunicorn."""

# What the server must not inherit: another database (TEST_DATABASE_URL wins over
# DATABASE_URL in the settings), another key, or gunicorn flags meant for another server.
NOT_INHERITED = (
    "DATABASE_URL",
    "TEST_DATABASE_URL",
    "DJANGO_SECRET_KEY",
    "DJANGO_ALLOW_INSECURE_KEY",
    "DJANGO_SETTINGS_MODULE",
    "GUNICORN_CMD_ARGS",
)


@dataclass(frozen=True)
class Server:
    url: str
    """``http://127.0.0.1:<port>``, no trailing slash."""
    api_key: str
    """A key of workspace ``bench``."""
    folder: Path
    env: dict[str, str]
    log: Path
    """gunicorn's output and the app's log (stderr)."""
    workers: int
    pid: int = 0
    """The gunicorn master's process id (0 where unknown)."""

    def manage(self, *args: str) -> str:
        """Run ``manage.py`` on this server's settings; its standard output."""
        return manage(self.env, *args)

    def worker_pids(self) -> list[int]:
        """The process ids of the master's live workers (its children), sorted."""
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # The command name, in parentheses, may hold spaces: the fields follow it.
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == self.pid and fields[0] != "Z":
                pids.append(int(entry.name))
        return sorted(pids)


def server_env(
    folder: Path,
    *,
    workers: int,
    database_url: str | None = None,
    settings: str | None = None,
    extra: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a production server whose data all lives in ``folder`` (or,
    with ``database_url``, in that database and ``folder``); ``settings`` names another
    settings module than ``config.settings``; ``extra`` adds variables (or overrides
    these)."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    if settings is not None:
        env["DJANGO_SETTINGS_MODULE"] = settings
        # Benchmark-only settings load only with this (benchmarks/stack_floor/settings.py).
        env["REDUCTION_BENCHMARK_SERVER"] = "1"
    env.update(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
        # sqlite:////abs/path: the settings read the path after the third slash.
        DATABASE_URL=database_url or f"sqlite:///{folder.resolve() / 'db.sqlite3'}",
        DJANGO_STATIC_ROOT=str(folder / "static"),
        REDUCTION_MEDIA_ROOT=str(folder / "media"),
        WEB_CONCURRENCY=str(workers),
        # Port 0: the system picks a free port, and gunicorn says which in its log.
        GUNICORN_BIND="127.0.0.1:0",
        PYTHONUNBUFFERED="1",
        # Served over plain HTTP on loopback: cookies marked Secure would not come back.
        DJANGO_SECURE_COOKIES="0",
    )
    env.update(extra or {})
    return env


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise ManageError(args, done)
    return done.stdout


class ManageError(RuntimeError):
    """A ``manage.py`` command that exited with another status than 0; it keeps the
    command's status and both of its outputs."""

    def __init__(self, args: tuple[str, ...], done: subprocess.CompletedProcess[str]) -> None:
        super().__init__(f"manage.py {' '.join(args)} failed:\n{done.stderr}")
        self.returncode = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr


@contextmanager
def fresh_postgres(server_url: str, *, template: str | None = None) -> Iterator[str]:
    """The URL of a new, empty database on the PostgreSQL server of ``server_url``
    (``postgres://user@host:port/any``; the user needs CREATEDB), dropped on exit; with
    ``template``, a copy of that database (which nobody may be connected to) instead."""
    import psycopg

    parts = urlsplit(server_url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"not a PostgreSQL URL: {server_url!r}")
    name = f"reduction_bench_{uuid.uuid4().hex[:12]}"
    admin = urlunsplit(parts._replace(scheme="postgresql", path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        copy = "" if template is None else f' TEMPLATE "{template}"'
        connection.execute(f'CREATE DATABASE "{name}"{copy}')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def production_server(
    folder: Path,
    *,
    workers: int = 2,
    database_url: str | None = None,
    settings: str | None = None,
    ready_path: str = "/accounts/login/",
    env: dict[str, str] | None = None,
    migrated: bool = False,
) -> Iterator[Server]:
    """Migrate, collect static files, make an API key, start gunicorn; stop it on exit.

    DEBUG off, a secret key of its own, static files collected for whitenoise, an offload
    folder, and gunicorn with ``config/gunicorn_conf.py`` on a free loopback port.

    The database is a SQLite file in ``folder`` unless ``database_url`` names another
    (empty) one; ``migrated`` says it holds a migrated database already (a copy of one),
    which is not migrated again. ``settings`` names another settings module (the
    benchmark's floor), whose ``ready_path`` answers 200 once it serves; ``env`` adds to
    its environment."""
    folder.mkdir(parents=True, exist_ok=True)
    env = server_env(
        folder, workers=workers, database_url=database_url, settings=settings, extra=env
    )
    if not migrated:
        manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput", "--verbosity", "0")
    api_key = manage(env, "create_api_key", "load", "--workspace", "bench").splitlines()[-1]
    log = folder / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", *GUNICORN_ARGS],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            # Its own process group, so the master and its workers are stopped together.
            start_new_session=True,
        )
    try:
        url = _wait_until_serving(process, log, workers, ready_path)
        yield Server(url, api_key, folder, env, log, workers, process.pid)
    finally:
        _stop(process)


@contextmanager
def temporary_server(
    prefix: str,
    *,
    workers: int,
    database_url: str | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """A production server in a new temporary folder, on SQLite there or, with
    ``database_url`` (a PostgreSQL server's URL), on a fresh database made on that server;
    the folder and the database go on exit."""
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=prefix)))
        url = stack.enter_context(fresh_postgres(database_url)) if database_url else None
        yield stack.enter_context(
            production_server(folder, workers=workers, database_url=url, env=env)
        )


_LISTENING = re.compile(r"Listening at: (http://127\.0\.0\.1:\d+)")


def _wait_until_serving(
    process: subprocess.Popen[bytes], log: Path, workers: int, ready_path: str
) -> str:
    """The server's URL, once every worker has booted and a request was answered."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {process.returncode}:\n{log.read_text()}")
        text = log.read_text(errors="replace")
        found = _LISTENING.search(text)
        if (
            found
            and text.count("Booting worker") >= workers
            and _answers(found.group(1) + ready_path)
        ):
            return found.group(1)
        time.sleep(0.1)
    raise RuntimeError(f"gunicorn did not start in {START_TIMEOUT:.0f} s:\n{log.read_text()}")


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (gunicorn's graceful stop); SIGKILL to its process group if it lingers."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        # The master is still running, so its group is still this server's: the master
        # and its workers go together.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_TIMEOUT)
