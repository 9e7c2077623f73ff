"""Run commands side by side and stop them together: the web server and the task worker
that ``make run`` and ``make serve`` start.

    python scripts/run_together.py -- COMMAND [ARG ...] -- COMMAND [ARG ...]

Each command gets a process group of its own and exactly one SIGTERM when it is time to
stop (the comment above :func:`run_together` says why not the shell).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import FrameType

USAGE = "usage: run_together.py -- COMMAND [ARG ...] [-- COMMAND [ARG ...] ...]"
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def split_commands(argv: Sequence[str]) -> list[list[str]]:
    """``["--", "a", "b", "--", "c"]`` as ``[["a", "b"], ["c"]]``; SystemExit with the
    usage when the arguments are not commands each led by ``--``."""
    if not argv or argv[0] != "--":
        raise SystemExit(USAGE)
    commands: list[list[str]] = [[]]
    for arg in argv[1:]:
        if arg == "--":
            commands.append([])
        else:
            commands[-1].append(arg)
    if not all(commands):
        raise SystemExit(USAGE)
    return commands


# One SIGTERM per command, because the task worker (django-tasks' ``db_worker``) reads a
# second one as "abandon the task you are running"; to the whole group, because Django's
# development server is two processes (the autoreloader and the server it restarts).
# Another Ctrl-C while they stop sends SIGTERM again: the worker then gives up its task at
# once. A signal this process started with ignored (``nohup``) stays ignored. Exiting 0
# once everything ended keeps make quiet about a Ctrl-C ("Error 130", "Interrupt").
#
# Why not the shell: ``trap 'kill 0' INT TERM EXIT`` signals every process in make's
# group, make itself and whatever ran make included, and dash runs the TERM trap again
# inside ``kill 0`` (which signals the shell too), deeper each time, until the shell
# overflows its stack. Signalling each child by its id instead still gives the worker two
# signals, the terminal's and the shell's (``db_worker`` installs its own SIGINT handler),
# and a shell without job control cannot give a command a process group of its own
# (``setsid`` is not on macOS).
def run_together(commands: Sequence[Sequence[str]]) -> int:
    """Start ``commands``, wait until all have ended, and return the exit status: that of
    the command which ended first by itself, or 0 when a signal stopped them."""
    running: dict[int, tuple[subprocess.Popen[bytes], Sequence[str]]] = {}
    stopping = False
    status: int | None = None
    told: set[int] = set()  # the commands sent SIGTERM for the latest request to stop

    def tell(pid: int) -> None:
        told.add(pid)
        # ProcessLookupError: the group has ended, and its leader awaits reaping.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)

    def stop_all() -> None:
        nonlocal stopping
        stopping = True
        told.clear()
        for pid in running:
            tell(pid)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop_all()

    for signum in STOP_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, on_signal)

    for command in commands:
        if stopping:
            break
        # stdin from /dev/null: a command in a background group that read the terminal
        # would be stopped (SIGTTIN), and this process would wait for it forever.
        try:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, process_group=0)
        except OSError as exc:
            print(f"run_together: cannot start {shlex.join(command)}: {exc}", file=sys.stderr)
            status = 127  # the shell's status for a command it cannot run
            stop_all()
            break
        running[process.pid] = (process, command)
        if stopping and process.pid not in told:  # the signal came while it started
            tell(process.pid)

    while running:
        # Whichever command ends first; a signal handler runs during the wait, which then
        # resumes (PEP 475).
        pid, wait_status = os.wait()
        if pid not in running:
            continue
        process, command = running.pop(pid)
        process.returncode = code = os.waitstatus_to_exitcode(wait_status)
        if not stopping:
            status = 128 - code if code < 0 else code
            others = "; stopping the others" if running else ""
            print(
                f"run_together: {shlex.join(command)} ended with status {status}{others}",
                file=sys.stderr,
                flush=True,
            )
            stop_all()
    return status or 0


if __name__ == "__main__":
    sys.exit(run_together(split_commands(sys.argv[1:])))
