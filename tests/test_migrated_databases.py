"""The migrated databases the servers of the tests start on."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest

from benchmarks.server import manage, server_env
from tests.migrated_databases import copy_sqlite
from tests.offload_stores import S3Server

pytestmark = pytest.mark.slow  # manage.py in a fresh process


def test_copy_sqlite_leaves_nothing_to_migrate(sqlite_template: Path, tmp_path: Path) -> None:
    copy = copy_sqlite(sqlite_template, tmp_path / "server")
    assert copy == tmp_path / "server" / "db.sqlite3"
    env = server_env(copy.parent, workers=1)
    # migrate --check exits with 1 (ManageError) when a migration is unapplied.
    manage(env, "migrate", "--check", "--noinput")


def test_boto3_sessions_share_one_loader_while_the_s3_server_runs(s3_server: S3Server) -> None:
    sessions = [boto3.Session() for _ in range(5)]
    assert len({id(session._loader) for session in sessions}) == 1
    # Each session adds boto3's folder once more; the next one takes the repeat out.
    paths = boto3.Session()._loader.search_paths
    assert len(paths) <= len(set(paths)) + 1
