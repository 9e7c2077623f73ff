"""The Makefile as a new user meets it: ``make run`` (and ``make serve``) serve where they
are told and stop cleanly on Ctrl-C, and the first install says what it is doing.

The servers here are real: make runs its recipe on a temporary SQLite database, media and
static folder, and ``-o .venv/.installed`` keeps make from installing anything (``make
test`` has done that already). Each run carries a marker in its environment, which every
process it starts inherits, so that a process left behind is found by its environment.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STAMP = ".venv/.installed"
STARTUP_SECONDS = 60
STOP_SECONDS = 5
# What a make started by make (the suite runs under `make test`) inherits: its flags and
# command-line variables (a PORT=... given to the outer make would reach this one).
MAKE_VARIABLES = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")
UNIX = pytest.mark.skipif(sys.platform != "linux", reason="finds processes through /proc")
# The servers run on their own SQLite database whichever database the suite runs on, so
# they run in the suite's SQLite pass only (make test's PostgreSQL pass sets this).
ONCE = pytest.mark.skipif(
    bool(os.environ.get("TEST_DATABASE_URL")), reason="runs in the SQLite pass of make test"
)


def make_env(**extra: str) -> dict[str, str]:
    """This run's environment without what would steer the Makefile under test (its own
    variables, such as a TEST_TOGETHER the whole run was started with)."""
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    for name in (
        *("DATABASE_URL", "TEST_DATABASE_URL", "HOST", "PORT"),
        *("TEST_TOGETHER", "TEST_POSTGRES", "TEST_BROWSER", "PYTEST_ARGS"),
    ):
        env.pop(name, None)
    env.update(extra)
    return env


def dry_run(*args: str, **env: str) -> str:
    """What ``make -n`` would run, with the install step taken as done."""
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", "-o", STAMP, *args],
        cwd=REPO,
        env=make_env(**env),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def processes_with(marker: str) -> dict[int, str]:
    """``pid: command line`` of every live process whose environment holds ``marker``."""
    found = {}
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes():
                continue
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile, or not ours to read
            continue
        found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def page_status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


@dataclass
class Started:
    make: subprocess.Popen[bytes]
    marker: str
    log: Path
    url: str

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def start_make(tmp_path: Path) -> Iterator[Callable[..., Started]]:
    """Start ``make <args>`` in a process group of its own, as a terminal runs a command,
    with the given environment; on the way out, stop whatever is left of it."""
    started: list[Started] = []

    def start(*args: str, port: int, **env: str) -> Started:
        marker = f"REDUCTION_MAKEFILE_TEST={uuid.uuid4().hex}"
        name, value = marker.split("=")
        log = tmp_path / "make.log"
        environment = make_env(
            DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
            REDUCTION_MEDIA_ROOT=str(tmp_path / "media"),
            DJANGO_STATIC_ROOT=str(tmp_path / "static"),
            **{name: value},
            **env,
        )
        with log.open("wb") as out:
            make = subprocess.Popen(
                ["make", "--no-print-directory", "-o", STAMP, *args],
                cwd=REPO,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # A terminal's make has SIGINT at its default; a suite started in the
                # background may have it ignored, which make and its children inherit.
                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
            )
        started.append(Started(make, marker, log, f"http://127.0.0.1:{port}"))
        return started[-1]

    yield start
    for run in started:
        if run.make.poll() is None:
            os.killpg(run.make.pid, signal.SIGKILL)
            run.make.wait()
        for pid in processes_with(run.marker):
            os.kill(pid, signal.SIGKILL)


def wait_for_sign_in(run: Started) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while page_status(f"{run.url}/accounts/login/") != HTTPStatus.OK:
        if run.make.poll() is not None:
            pytest.fail(f"make ended with status {run.make.returncode}:\n{run.output()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no sign-in page on {run.url} after {STARTUP_SECONDS} s:\n{run.output()}")
        time.sleep(0.2)


def interrupt(run: Started) -> None:
    """Ctrl-C as a terminal sends it (SIGINT to the foreground group); make must end
    within STOP_SECONDS."""
    os.killpg(run.make.pid, signal.SIGINT)
    try:
        run.make.wait(timeout=STOP_SECONDS)
    except subprocess.TimeoutExpired:
        pytest.fail(f"make still runs {STOP_SECONDS} s after Ctrl-C:\n{run.output()}")


def interrupted_cleanly(run: Started) -> str:
    """Ctrl-C ``run`` and check that it stopped as it should; its output. make ends as an
    interrupted command does (killed by SIGINT: 130 in a shell), having printed no error
    of its own (the recipe itself finished with 0), and nothing it started is left."""
    interrupt(run)
    output = run.output()
    assert run.make.returncode == -signal.SIGINT, output
    for word in ("Segmentation fault", "Error", "Traceback"):
        assert word not in output
    assert processes_with(run.marker) == {}
    return output


@UNIX
@ONCE
@pytest.mark.slow
def test_make_run_serves_on_the_port_given_and_stops_cleanly_on_ctrl_c(
    start_make: Callable[..., Started],
) -> None:
    port = free_port()
    run = start_make("run", f"PORT={port}", port=port)
    wait_for_sign_in(run)
    alive = processes_with(run.marker).values()
    # The probe for what follows: the server and the worker are found while they run.
    assert any(f"runserver 127.0.0.1:{port}" in line for line in alive), alive
    assert any("manage.py db_worker" in line for line in alive), alive

    output = interrupted_cleanly(run)
    lines = output.splitlines()
    assert [line for line in lines if line.endswith(" ...") or line.startswith("Serving")] == [
        "Migrating the database ...",
        "Seeding the demo workspace ...",
        f"Serving on http://127.0.0.1:{port} (Ctrl-C stops the server and the worker)",
    ]
    assert f"Sign in at http://127.0.0.1:{port}/accounts/login/ as demo / demo-password" in lines


@UNIX
@ONCE
@pytest.mark.slow
def test_make_serve_stops_cleanly_on_ctrl_c(
    start_make: Callable[..., Started],
) -> None:
    port = free_port()
    run = start_make(
        "serve",
        port=port,
        GUNICORN_BIND=f"127.0.0.1:{port}",
        WEB_CONCURRENCY="1",
        DJANGO_ALLOW_INSECURE_KEY="1",
    )
    wait_for_sign_in(run)
    assert any("gunicorn" in line for line in processes_with(run.marker).values())

    interrupted_cleanly(run)


def test_make_run_names_the_host_and_port_given() -> None:
    out = dry_run("run", "PORT=8765", "HOST=0.0.0.0")
    assert "--site 'http://0.0.0.0:8765'" in out
    assert 'echo "Serving on http://0.0.0.0:8765 (Ctrl-C stops the server and the worker)"' in out
    assert "manage.py runserver '0.0.0.0:8765'" in out
    assert "8000" not in out and "127.0.0.1" not in out


def test_make_run_serves_on_loopback_port_8000_by_default() -> None:
    out = dry_run("run")
    assert "manage.py runserver '127.0.0.1:8000'" in out
    assert "Serving on http://127.0.0.1:8000 " in out


def test_make_run_takes_the_port_alone() -> None:
    assert "manage.py runserver '127.0.0.1:8765'" in dry_run("run", "PORT=8765")


def test_make_run_puts_an_ipv6_host_in_brackets() -> None:
    out = dry_run("run", "HOST=::1")
    assert "manage.py runserver '[::1]:8000'" in out
    assert "Serving on http://[::1]:8000 " in out


def test_make_run_ignores_a_host_in_the_environment() -> None:
    """tcsh exports HOST as the machine's name; only ``make run HOST=...`` moves the server."""
    assert "manage.py runserver '127.0.0.1:8000'" in dry_run("run", HOST="lab.example.org")


def test_make_install_says_what_it_does(tmp_path: Path) -> None:
    """The install step on a fresh folder, with a stand-in for python that makes a
    stand-in virtualenv whose pip only writes down how it was called."""
    calls = tmp_path / "calls"
    venv = tmp_path / "venv"
    python = tmp_path / "python"
    stand_in = f'#!/bin/sh\necho "$0 $*" >> {calls}\n'
    python.write_text(
        stand_in + 'if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; '
        'cp "$0" "$3/bin/python"; fi\n'
    )
    python.chmod(0o755)
    done = subprocess.run(
        ["make", "--no-print-directory", f"VENV={venv}", f"PYTHON={python}", f"{venv}/.installed"],
        cwd=REPO,
        env=make_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines() == [
        f"Creating {venv} with {python} ...",
        f"Installing Reduction Lab and its dependencies into {venv} (a minute the first time) ...",
    ]
    assert calls.read_text().splitlines()[1:] == [
        f"{python} -m venv {venv}",
        f"{venv}/bin/python -m pip install --quiet --upgrade pip",
        f"{venv}/bin/python -m pip install --quiet -e .[dev]",
    ]
    assert (venv / ".installed").exists()


def test_make_check_runs_lint_types_and_the_quick_tests() -> None:
    """Lint, types, then pytest on SQLite without the tests that use the database or a
    browser or take seconds; PYTEST_ARGS comes last, so it narrows the run."""
    assert dry_run("check", "PYTEST_ARGS=tests/engine").splitlines() == [
        ".venv/bin/ruff check .",
        ".venv/bin/ruff format --check .",
        ".venv/bin/mypy",
        "env -u PYTHONDONTWRITEBYTECODE -u TEST_DATABASE_URL -u DATABASE_URL "
        ".venv/bin/python -m pytest -q "
        "-m 'not db and not browser and not slow' --ignore=tests/browser tests/engine",
    ]


STAND_IN_PYTEST = """#!/bin/sh
# python -m pytest ...: writes down how it was called, and answers as the pass it is.
echo "${TEST_DATABASE_URL:-sqlite} $*" >> "$CALLS"
case "${TEST_DATABASE_URL:-}" in
postgres*) touch "$CALLS.postgres"; echo "postgres pass"; exit "$POSTGRES_STATUS";;
esac
for _ in $(seq "$WAIT_TENTHS"); do [ -e "$CALLS.postgres" ] && break; sleep 0.1; done
[ -e "$CALLS.postgres" ] && echo "sqlite pass, postgres already started" || echo "sqlite pass"
exit "$SQLITE_STATUS"
"""
PG = "postgres://tester@127.0.0.1:5432/test"


def make_test(
    tmp_path: Path, *args: str, sqlite: int = 0, postgres: int = 0, wait: float = 10
) -> tuple[int, str]:
    """``make test`` with a stand-in for the virtualenv's python that plays pytest (the
    SQLite pass waits up to ``wait`` seconds for the PostgreSQL one to start); its exit
    status and output."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(STAND_IN_PYTEST)
    python.chmod(0o755)
    make = ["make", "--no-print-directory", f"VENV={venv}", "-o", f"{venv}/.installed", "test"]
    done = subprocess.run(
        [*make, *args, "PYTEST_ARGS=-x"],
        cwd=REPO,
        env=make_env(
            TEST_DATABASE_URL=PG,
            REDUCTION_CHROMIUM="/bin/true",  # a browser "there", so nothing is installed
            CALLS=str(tmp_path / "calls"),
            SQLITE_STATUS=str(sqlite),
            POSTGRES_STATUS=str(postgres),
            WAIT_TENTHS=str(int(wait * 10)),
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout


def test_make_test_runs_the_database_tests_on_postgresql_beside_the_whole_suite(
    tmp_path: Path,
) -> None:
    status, out = make_test(tmp_path)
    assert status == 0, out
    assert out.splitlines()[-4:] == [
        "== SQLite ==",
        "sqlite pass, postgres already started",
        f"== PostgreSQL ({PG}): the tests that use the database ==",
        "postgres pass",
    ]
    assert sorted((tmp_path / "calls").read_text().splitlines()) == [
        f"{PG} -m pytest --db-only -x",
        "sqlite -m pytest -x",
    ]


@pytest.mark.parametrize(("sqlite", "postgres"), [(1, 0), (0, 1), (1, 3)])
def test_make_test_fails_when_either_pass_fails(tmp_path: Path, sqlite: int, postgres: int) -> None:
    """The SQLite pass's status first; the PostgreSQL pass's output is shown either way."""
    status, out = make_test(tmp_path, sqlite=sqlite, postgres=postgres)
    assert status == 2  # make's own, for a recipe that failed
    assert out.splitlines()[-1] == "postgres pass"


def test_make_test_one_pass_after_the_other_stops_after_a_failing_sqlite_pass(
    tmp_path: Path,
) -> None:
    status, out = make_test(tmp_path, "TEST_TOGETHER=no", sqlite=1, wait=0)
    assert status == 2
    assert out.splitlines()[-2:] == ["== SQLite ==", "sqlite pass"]
    assert (tmp_path / "calls").read_text().splitlines() == ["sqlite -m pytest -x"]
    status, out = make_test(tmp_path / "again", "TEST_TOGETHER=no", wait=0)
    assert status == 0
    assert out.splitlines()[-3:] == [
        "sqlite pass",
        f"== PostgreSQL ({PG}): the tests that use the database ==",
        "postgres pass",
    ]
