"""Fixtures of the Django app's tests: the offload storage on a temporary folder (or, for
a test that takes ``offloads``, on that folder and then on S3), and two workspaces, each
with a key and a client for the real URLs."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from reduction_app.models import Workspace
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.support import ApiClient, make_api
from tests.conftest import temporary_offload_storage
from tests.offload_stores import BucketStore, FolderStore, OffloadStore, use_store


@pytest.fixture(autouse=True)
def offload_dir(settings: Any, tmp_path: Path) -> Path:
    """The offload storage on a fresh temporary folder, for every test."""
    return temporary_offload_storage(settings, tmp_path)


@pytest.fixture(params=["local", "s3"])
def offloads(request: pytest.FixtureRequest, settings: Any, offload_dir: Path) -> OffloadStore:
    """The offload storage on the temporary folder, then on a bucket of the loopback S3
    server (a fresh key prefix per test): a test that takes this runs on both."""
    if request.param == "local":
        return use_store(settings, FolderStore(offload_dir))
    server = request.getfixturevalue("s3_server")
    return use_store(settings, BucketStore(server, f"offload-{uuid.uuid4().hex[:12]}"))


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
