"""``scripts/run_together.py``: commands run side by side and stop together, each told
once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "run_together.py"
WAIT = 10
# A command that writes down each SIGTERM and SIGINT it gets, and ends a moment after its
# Nth SIGTERM: long enough for a stray further signal to be written down too.
RECORDER = """\
import pathlib, signal, sys, time
log, terms = pathlib.Path(sys.argv[1]), int(sys.argv[2])
got = []
def note(signum, frame):
    got.append(signum)
    with log.open("a") as out:
        out.write(signal.Signals(signum).name + "\\n")
signal.signal(signal.SIGTERM, note)
signal.signal(signal.SIGINT, note)
with log.open("a") as out:
    out.write("ready\\n")
while got.count(signal.SIGTERM) < terms:
    time.sleep(0.02)
time.sleep(0.3)
"""


def recorder(tmp_path: Path, name: str, terms: int = 1) -> tuple[list[str], Path]:
    """The command line of a recorder ending at its ``terms``-th SIGTERM, and its log."""
    script = tmp_path / "recorder.py"
    script.write_text(RECORDER)
    return [sys.executable, str(script), str(tmp_path / name), str(terms)], tmp_path / name


def start(
    *commands: list[str], preexec_fn: Callable[[], object] | None = None
) -> subprocess.Popen[str]:
    """``run_together`` in a process group of its own, as a terminal starts a command."""
    args = [sys.executable, str(SCRIPT)]
    for command in commands:
        args += ["--", *command]
    return subprocess.Popen(
        args, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=preexec_fn
    )


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_run_together_ctrl_c_tells_each_command_once_with_sigterm(tmp_path: Path) -> None:
    """The terminal's SIGINT reaches run_together alone; every command gets one SIGTERM."""
    first, first_log = recorder(tmp_path, "first")
    second, second_log = recorder(tmp_path, "second")
    together = start(first, second)
    wait_for(lambda: lines(first_log) == lines(second_log) == ["ready"])

    os.killpg(together.pid, signal.SIGINT)

    assert together.wait(timeout=WAIT) == 0
    assert (lines(first_log), lines(second_log)) == (["ready", "SIGTERM"], ["ready", "SIGTERM"])
    assert together.stderr is not None and together.stderr.read() == ""


def test_run_together_a_second_ctrl_c_tells_them_again(tmp_path: Path) -> None:
    """The task worker reads a second signal as "give up the running task now"."""
    stubborn, log = recorder(tmp_path, "stubborn", terms=2)
    together = start(stubborn)
    wait_for(lambda: lines(log) == ["ready"])

    os.killpg(together.pid, signal.SIGINT)
    wait_for(lambda: lines(log) == ["ready", "SIGTERM"])
    assert together.poll() is None
    os.killpg(together.pid, signal.SIGINT)

    assert together.wait(timeout=WAIT) == 0
    assert lines(log) == ["ready", "SIGTERM", "SIGTERM"]


def test_run_together_sigterm_stops_them_too(tmp_path: Path) -> None:
    """What make sends its recipe when make itself is terminated."""
    command, log = recorder(tmp_path, "log")
    together = start(command)
    wait_for(lambda: lines(log) == ["ready"])

    together.terminate()

    assert together.wait(timeout=WAIT) == 0
    assert lines(log) == ["ready", "SIGTERM"]


def test_run_together_keeps_a_signal_it_started_with_ignored(tmp_path: Path) -> None:
    """Under ``nohup`` a closed terminal (SIGHUP) leaves the commands running."""
    command, log = recorder(tmp_path, "log")
    together = start(command, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    wait_for(lambda: lines(log) == ["ready"])

    together.send_signal(signal.SIGHUP)
    time.sleep(0.3)
    assert together.poll() is None
    together.terminate()

    assert together.wait(timeout=WAIT) == 0
    assert lines(log) == ["ready", "SIGTERM"]


def test_run_together_a_command_ending_stops_the_others_with_its_status(tmp_path: Path) -> None:
    command, log = recorder(tmp_path, "log")
    # It ends once the recorder is ready to write down what it gets.
    ending = f"until [ -s {log} ]; do sleep 0.02; done; exit 3"
    together = start(command, ["sh", "-c", ending])

    assert together.wait(timeout=WAIT) == 3
    assert lines(log) == ["ready", "SIGTERM"]
    assert together.stderr is not None
    assert together.stderr.read() == (
        f"run_together: sh -c '{ending}' ended with status 3; stopping the others\n"
    )


def test_run_together_a_command_killed_by_a_signal_ends_with_128_plus_it() -> None:
    together = start(["sh", "-c", "kill -KILL $$"])
    assert together.wait(timeout=WAIT) == 128 + signal.SIGKILL


def test_run_together_a_command_that_cannot_start_stops_the_others(tmp_path: Path) -> None:
    command, log = recorder(tmp_path, "log")
    missing = str(tmp_path / "no-such-program")
    together = start(command, [missing])

    # It ended: the recorder, stopped perhaps before it was ready, ended too.
    assert together.wait(timeout=WAIT) == 127
    assert lines(log).count("SIGTERM") <= 1
    assert together.stderr is not None
    assert together.stderr.read().startswith(f"run_together: cannot start {missing}: ")


@pytest.mark.parametrize("args", [[], ["sleep", "1"], ["--"], ["--", "true", "--"]])
def test_run_together_refuses_arguments_that_are_not_commands(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=WAIT
    )
    assert (done.returncode, done.stderr) == (
        1,
        "usage: run_together.py -- COMMAND [ARG ...] [-- COMMAND [ARG ...] ...]\n",
    )
