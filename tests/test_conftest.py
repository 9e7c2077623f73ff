"""tests/conftest.py: without the recordings folder, the tests that read it are skipped
with a reason naming it, or, under CI, the run fails before any test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

MODULE = "tests/simulator/test_calibration.py"
"""A module whose every test reads the recordings."""


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        name: value
        for name, value in os.environ.items()
        if name not in {"CI", "TEST_DATABASE_URL", "DATABASE_URL"}
    }
    environ["REDUCTION_RECORDINGS_DIR"] = str(tmp_path / "none")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", MODULE],
        cwd=REPO,
        env=environ | env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _reason(tmp_path: Path) -> str:
    return (
        f"needs the recordings: no recordings at {tmp_path / 'none'}: set "
        "REDUCTION_RECORDINGS_DIR to the folder of recorded agent runs (a copy of "
        "shared/data/conversations)"
    )


def test_conftest_skips_tests_that_need_the_missing_recordings(tmp_path: Path) -> None:
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    skipped = [line for line in lines if line.startswith(f"SKIPPED [1] {MODULE}:")]
    assert len(skipped) == 5, done.stdout
    assert all(line.endswith(f": {_reason(tmp_path)}") for line in skipped), skipped
    assert lines[-1].startswith("5 skipped in ")


def test_conftest_under_ci_fails_the_run_without_the_recordings(tmp_path: Path) -> None:
    done = _pytest(tmp_path, CI="true")
    assert done.returncode == 4, done.stdout + done.stderr  # pytest's usage error
    assert (
        f"ERROR: CI=true: no recordings at {tmp_path / 'none'}: set REDUCTION_RECORDINGS_DIR "
        "to the folder of recorded agent runs (a copy of shared/data/conversations)"
    ) in done.stderr.splitlines()
    assert "passed" not in done.stdout and "skipped" not in done.stdout
