"""Entry point of ``python -m simulator``."""

from __future__ import annotations

import os
import sys

from simulator.cli import main

try:
    code = main()
    sys.stdout.flush()
except BrokenPipeError:
    # The reader went away (``| head``): stop quietly, as a SIGPIPE-killed tool would.
    # Python flushes stdout again at exit; pointing it at devnull keeps that quiet too.
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    code = 128 + 13
sys.exit(code)
