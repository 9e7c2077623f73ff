"""``config/gunicorn_conf.py``: gunicorn's settings, read from the environment."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from gunicorn.config import Config
from gunicorn.glogging import Logger

from benchmarks.server import GUNICORN_ARGS, NOT_INHERITED
from tests.conftest import REPO


def conf() -> dict[str, Any]:
    return runpy.run_path(str(REPO / "config" / "gunicorn_conf.py"))


def test_gunicorn_conf_defaults_to_loopback_and_a_worker_per_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GUNICORN_BIND", raising=False)
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    settings = conf()
    assert settings["bind"] == ["127.0.0.1:8000"]
    assert settings["workers"] == max(2, os.cpu_count() or 1)
    assert settings["control_socket_disable"] is True


def test_gunicorn_conf_takes_workers_and_address_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GUNICORN_BIND", "0.0.0.0:9000")
    monkeypatch.setenv("WEB_CONCURRENCY", "5")
    settings = conf()
    assert (settings["bind"], settings["workers"]) == (["0.0.0.0:9000"], 5)


def test_gunicorn_conf_freezes_what_a_worker_loaded() -> None:
    """After a worker loads the app, what it holds is out of the collector's reach (in a
    process of its own: freezing this one would change every later test)."""
    script = (
        "import gc, runpy, sys\n"
        f"conf = runpy.run_path({str(REPO / 'config' / 'gunicorn_conf.py')!r})\n"
        "assert gc.get_freeze_count() == 0\n"
        "conf['post_worker_init'](None)\n"
        "print(gc.get_freeze_count() > 0, gc.get_count()[2])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["True", "0"]


def test_gunicorn_conf_loads_the_urls_before_the_first_request() -> None:
    """A worker that has loaded the app (Django set up, as the WSGI module does) has the
    URL patterns and the API's views loaded, and frozen, before any request comes."""
    script = (
        "import django, runpy, sys\n"
        "django.setup()\n"
        f"conf = runpy.run_path({str(REPO / 'config' / 'gunicorn_conf.py')!r})\n"
        "assert 'config.urls' not in sys.modules\n"
        "conf['post_worker_init'](None)\n"
        "print('config.urls' in sys.modules, 'reduction_app.reductions.api' in sys.modules)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=REPO,
        env=env,
    )
    assert done.stdout.split() == ["True", "True"]


def test_gunicorn_conf_access_log_leaves_out_query_strings() -> None:
    """A logged request names its method, path and protocol; neither the query string (an
    offloaded file's path, a key sent as ``?api_key=``) nor the referer's appears."""
    config = Config()
    config.set("access_log_format", conf()["access_log_format"])
    query = "path=/tmp/trunc/call_1&api_key=rl_secret"
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": f"/api/v1/files/read?{query}",
        "PATH_INFO": "/api/v1/files/read",
        "QUERY_STRING": query,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_REFERER": f"http://127.0.0.1:8000/files/?{query}",
        "HTTP_USER_AGENT": "agent/1.0",
    }

    class Response:
        status = "200 OK"
        sent = 42
        headers = ()

    logger = Logger(config)
    atoms = logger.atoms(Response(), [], environ, timedelta(milliseconds=5))
    atoms["t"] = "[04/Dec/2026:18:00:00 +0000]"
    assert config.access_log_format % atoms == (
        '127.0.0.1 - - [04/Dec/2026:18:00:00 +0000] "GET /api/v1/files/read HTTP/1.1" 200 42 '
        '"agent/1.0"'
    )


def test_gunicorn_conf_selects_the_json_sync_worker() -> None:
    """gunicorn loads the worker the file names (``--worker-class`` still overrides it)."""
    from config.gunicorn_worker import JSONSyncWorker

    config = Config()
    config.set("worker_class", conf()["worker_class"])
    assert config.worker_class is JSONSyncWorker


@pytest.mark.parametrize(
    ("cmd_args", "worker_class"),
    [
        (None, "config.gunicorn_worker.JSONSyncWorker"),
        ("--worker-class sync", "sync"),
    ],
)
def test_gunicorn_conf_worker_class_gives_way_to_gunicorn_cmd_args(
    cmd_args: str | None, worker_class: str
) -> None:
    """As gunicorn resolves it, starting the way ``make serve`` does."""
    env = {name: value for name, value in os.environ.items() if name not in NOT_INHERITED}
    if cmd_args is not None:
        env["GUNICORN_CMD_ARGS"] = cmd_args
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--print-config", *GUNICORN_ARGS],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    resolved = dict(
        (name.strip(), value.strip())
        for name, _, value in (line.partition("=") for line in done.stdout.splitlines())
    )
    assert resolved["worker_class"] == worker_class
