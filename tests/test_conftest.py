"""tests/conftest.py: without the recordings folder, the tests that read it are skipped
with a reason naming it, or, under CI, the run fails before any test; tests are marked
``db`` and ``browser`` by what they use; Hypothesis runs its quick profile locally."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from tests.conftest import HYPOTHESIS_PROFILE, REPO, hypothesis_profile, max_examples

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


KNOWN = {
    "tests/engine/test_config.py::test_config_default_paths_need_a_readable_backend": set(),
    # `client` alone opens no database.
    "tests/app/test_favicon.py::test_favicon_ico_leads_to_the_icon": set(),
    # The module's `pytestmark = pytest.mark.django_db`.
    "tests/app/test_commands.py::test_create_api_key_defaults_to_the_default_workspace": {"db"},
    # `report` takes `transactional_db` two fixtures down.
    "tests/app/test_agent_loop.py::test_agent_loop_records_truncation_events": {"db"},
    # The server's own SQLite file, then a database on the run's PostgreSQL server.
    "tests/app/test_concurrency.py::test_concurrent_clients_lose_nothing[sqlite]": {"sqlite_only"},
    "tests/app/test_concurrency.py::test_concurrent_clients_lose_nothing[postgresql]": {"db"},
    # Workers on a SQLite file of their own, the test on the test database: the SQLite
    # pass runs it, the PostgreSQL pass runs its `[postgresql]` twin instead.
    "tests/app/simulations/test_watch.py::"
    "test_slow_simulation_on_real_workers_is_never_failed[sqlite]": {"db", "sqlite_only"},
    # `live_server` (and so the database), in tests/browser.
    "tests/browser/test_sign_in.py::test_wrong_password_is_refused": {"db", "browser"},
}
"""Tests whose marks are known, and the marks tests/conftest.py gives them."""


def _collected(*args: str) -> set[str]:
    environ = {k: v for k, v in os.environ.items() if k not in {"TEST_DATABASE_URL", "CI"}}
    command = [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, *args, *KNOWN],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # A set: pytest-django runs the tests that use the database first.
    return {line for line in done.stdout.splitlines() if "::" in line}


@pytest.mark.slow
def test_conftest_marks_the_tests_that_use_the_database_and_the_browser() -> None:
    for mark in ("db", "browser", "sqlite_only"):
        assert _collected("-m", mark) == {test for test, marks in KNOWN.items() if mark in marks}


@pytest.mark.slow
def test_conftest_db_only_keeps_the_tests_that_use_the_database() -> None:
    assert _collected("--db-only") == {
        test for test, marks in KNOWN.items() if "db" in marks and "sqlite_only" not in marks
    }


def test_conftest_hypothesis_profile_is_quick_locally_and_thorough_under_ci() -> None:
    assert hypothesis_profile({}) == "quick"
    assert hypothesis_profile({"CI": "true"}) == "thorough"
    assert hypothesis_profile({"CI": "true", "HYPOTHESIS_PROFILE": "quick"}) == "quick"
    assert hypothesis_profile({"HYPOTHESIS_PROFILE": "thorough"}) == "thorough"
    assert settings.get_profile("quick").max_examples == 20
    assert settings.get_profile("thorough").max_examples == 100
    assert settings.default.max_examples == settings.get_profile(HYPOTHESIS_PROFILE).max_examples
    assert max_examples(300) == {"quick": 60, "thorough": 300}[HYPOTHESIS_PROFILE]


@pytest.mark.slow
def test_conftest_db_only_over_tests_without_the_database_passes() -> None:
    """``make test PYTEST_ARGS=tests/engine``: nothing to run on PostgreSQL, no failure."""
    environ = {k: v for k, v in os.environ.items() if k not in {"TEST_DATABASE_URL", "CI"}}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--db-only"]
    done = subprocess.run(
        [*command, "tests/engine/test_config.py"],
        cwd=REPO,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert " deselected in " in done.stdout.splitlines()[-1]
