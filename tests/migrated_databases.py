"""Databases migrated once per test run, copied for each server a test starts: a
SQLite file copied through SQLite's backup API, or a PostgreSQL database made with
``CREATE DATABASE … TEMPLATE``. Each copy holds what ``manage.py migrate`` leaves, made
in a fraction of the time."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from benchmarks.server import fresh_postgres, manage, server_env

SQLITE_NAME = "db.sqlite3"
"""The file name ``benchmarks.server`` gives a server's SQLite database in its folder."""


def _migrate(folder: Path, database_url: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    env = server_env(folder, workers=1, database_url=database_url)
    manage(env, "migrate", "--noinput", "--verbosity", "0")


def migrated_sqlite(folder: Path) -> Path:
    """A migrated SQLite database in ``folder``; its path."""
    _migrate(folder)
    return folder / SQLITE_NAME


def copy_sqlite(template: Path, target: Path) -> Path:
    """Copy the SQLite database ``template`` to ``target`` (a file, or a folder that gets
    the server's file name); the copy's path. The backup API copies what a write-ahead
    log holds too."""
    if target.is_dir() or not target.suffix:
        target.mkdir(parents=True, exist_ok=True)
        target = target / SQLITE_NAME
    with closing(sqlite3.connect(template)) as source, closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
    return target


@contextmanager
def migrated_postgres(server_url: str, scratch: Path) -> Iterator[str]:
    """A migrated database on the PostgreSQL server of ``server_url``, dropped on exit;
    its name, for :func:`benchmarks.server.fresh_postgres`'s ``template``."""
    with fresh_postgres(server_url) as url:
        _migrate(scratch, url)
        yield urlsplit(url).path.lstrip("/")
