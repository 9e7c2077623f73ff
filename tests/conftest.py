"""Shared test fixtures, and the recordings folder.

The recorded agent runs are not in the repository (:mod:`simulator.recordings_folder`
says where they are). A test that reads them carries :data:`needs_recordings`, or calls
:func:`skip_without_recordings` from a shared helper: without the folder it is skipped,
with a reason naming the folder. Under CI (``CI=true``) a missing folder fails the run
before any test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulator.recordings_folder import RecordingsNotFound, recordings_dir
from tests.offload_stores import S3Server, running_s3_server

REPO = Path(__file__).resolve().parent.parent
CONVERSATIONS = recordings_dir()
"""The real recorded agent conversations (tau-bench, τ²-bench, OpenHands, SWE-agent,
mini-swe-agent, Claude Code), kept outside the repository; the folder may be missing."""
HAVE_RECORDINGS = CONVERSATIONS.is_dir()
WITHOUT_RECORDINGS = f"needs the recordings: {RecordingsNotFound(CONVERSATIONS)}"
"""The reason a test that reads them is skipped."""
needs_recordings = pytest.mark.skipif(not HAVE_RECORDINGS, reason=WITHOUT_RECORDINGS)
"""Skips a test (or, as ``pytestmark``, a module) when the recordings are missing."""


def skip_without_recordings() -> None:
    """Skip the calling test when the recordings are missing: for helpers shared by many
    tests, which are not all marked."""
    if not HAVE_RECORDINGS:
        pytest.skip(WITHOUT_RECORDINGS)


def temporary_offload_storage(settings: Any, tmp_path: Path) -> Path:
    """Point the ``offload`` storage at a fresh folder under ``tmp_path``; return it."""
    folder = tmp_path / "offload"
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {
            "BACKEND": "reduction_app.records.folder.OffloadFolderStorage",
            "OPTIONS": {"location": folder},
        },
    }
    return folder


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-protocol server (moto's) on loopback with an empty test bucket, started
    the first time a test asks for it and stopped at the end of the run."""
    with running_s3_server(tmp_path_factory.mktemp("aws")) as server:
        yield server


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "s3: runs on the loopback S3 server (set by the fixtures; -m 'not s3' skips)"
    )
    # As the Makefile reads CI: under CI, tests that would be skipped without the
    # recordings must run, so their absence is an error, not a list of skips.
    if os.environ.get("CI") in {"true", "1"} and not HAVE_RECORDINGS:
        raise pytest.UsageError(f"CI={os.environ['CI']}: {RecordingsNotFound(CONVERSATIONS)}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that runs on S3: those taking ``s3_server``, and the ``[s3]`` half
    of those taking ``offloads``."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_s3 = callspec is not None and callspec.params.get("offloads") == "s3"
        if on_s3 or "s3_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.s3)
