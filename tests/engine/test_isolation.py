"""The engine and the simulator are importable without Django."""

from __future__ import annotations

import subprocess
import sys


def test_engine_import_loads_no_django() -> None:
    """A fresh interpreter imports the engine and the simulator; no django module appears."""
    code = (
        "import sys\n"
        "import reduction_app.engine, simulator\n"
        "loaded = sorted(m for m in sys.modules if m == 'django' or m.startswith('django.'))\n"
        "print(len(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "0", done.stdout + done.stderr
