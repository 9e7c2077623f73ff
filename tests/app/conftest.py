"""Fixtures of the Django app's tests: the offload storage on a temporary folder, and
two workspaces, each with a key and a client for the real URLs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.app.support import ApiClient, make_api


@pytest.fixture(autouse=True)
def offload_dir(settings: Any, tmp_path: Path) -> Path:
    """The offload storage on a fresh temporary folder, for every test."""
    folder = tmp_path / "offload"
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": folder},
        },
    }
    return folder


@pytest.fixture
def api(db: None) -> ApiClient:
    """A key of workspace ``alpha``."""
    return make_api("alpha")


@pytest.fixture
def other_api(db: None) -> ApiClient:
    """A key of another workspace, ``beta``."""
    return make_api("beta")
