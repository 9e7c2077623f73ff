"""Fixtures of the Django app's tests: the offload storage on a temporary folder, and
two workspaces, each with a key and a client for the real URLs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reduction_app.models import Workspace
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.support import ApiClient, make_api
from tests.conftest import temporary_offload_storage


@pytest.fixture(autouse=True)
def offload_dir(settings: Any, tmp_path: Path) -> Path:
    """The offload storage on a fresh temporary folder, for every test."""
    return temporary_offload_storage(settings, tmp_path)


@pytest.fixture
def api(db: None) -> ApiClient:
    """A key of workspace ``alpha``."""
    return make_api("alpha")


@pytest.fixture
def other_api(db: None) -> ApiClient:
    """A key of another workspace, ``beta``."""
    return make_api("beta")


@pytest.fixture
def workspace() -> Workspace:
    return workspace_get_or_create(name="Alpha Team")
