"""Shared test fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.offload_stores import S3Server, running_s3_server

REPO = Path(__file__).resolve().parent.parent
CONVERSATIONS = REPO / "data" / "conversations"
"""The real recorded agent conversations shipped with the project (see its README)."""


@pytest.fixture(scope="session")
def conversations_dir() -> Path:
    return CONVERSATIONS


def temporary_offload_storage(settings: Any, tmp_path: Path) -> Path:
    """Point the ``offload`` storage at a fresh folder under ``tmp_path``; return it."""
    folder = tmp_path / "offload"
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that runs on S3: those taking ``s3_server``, and the ``[s3]`` half
    of those taking ``offloads``."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_s3 = callspec is not None and callspec.params.get("offloads") == "s3"
        if on_s3 or "s3_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.s3)
