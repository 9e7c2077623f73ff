"""Fixtures of the sweep tests: a stored recording, and a database of its own for real
worker processes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks.server import fresh_postgres
from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.simulations.sweep_support import openhands_run
from tests.migrated_databases import copy_sqlite


@pytest.fixture
def stored(db: None) -> Conversation:
    """ponyc-4595 (23 model calls) in workspace "Alpha Team"."""
    run = openhands_run()
    return conversation_upsert(
        workspace=workspace_get_or_create(name="Alpha Team"),
        client_id="ponyc-4595",
        message_format="openai_chat",
        transcript=run["messages"],
        tools=run["tools"],
    )


@pytest.fixture
def site_url(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A migrated database of its own for the workers: a SQLite file, or a new
    PostgreSQL database beside the test one, dropped afterwards (parametrize with
    ``sweep_support.databases()``, indirect). Both are copies of a database migrated
    once per run."""
    if request.param == "sqlite":
        path = copy_sqlite(request.getfixturevalue("sqlite_template"), tmp_path / "workers.sqlite3")
        yield f"sqlite:///{path}"
        return
    template = request.getfixturevalue("postgres_template")
    with fresh_postgres(os.environ["TEST_DATABASE_URL"], template=template) as url:
        yield url
