"""Several ``manage.py db_worker`` processes against one database, driven from outside, for
the sweep benchmark (``python -m benchmarks.sweep --tasks``) and the multi-worker test.

Workers are processes of their own, as on separate machines. Nothing here imports
Django: every process that does is a ``manage.py`` one.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

__all__ = ["Site", "WorkerError"]

REPO = Path(__file__).resolve().parent.parent

_STORE = """
import json
from reduction_app.conversations.services import conversation_upsert
from reduction_app.workspaces.services import workspace_get_or_create
with open({path!r}, encoding="utf-8") as f:
    data = json.load(f)
workspace = workspace_get_or_create(name="Sweep workers")
conversation = conversation_upsert(
    workspace=workspace, client_id={client_id!r}, message_format="openai_chat",
    transcript=data["messages"], tools=data["tools"],
)
print(conversation.pk)
"""

_QUEUE = """
import json
from reduction_app.models import Conversation
from reduction_app.simulations.services import simulation_create, simulation_enqueue
conversation = Conversation.objects.select_related("workspace").get(pk={conversation_id})
simulation = simulation_create(
    workspace=conversation.workspace, conversation=conversation, configs=[],
    grid=json.loads({grid!r}), pricing={pricing!r},
)
simulation_enqueue(simulation=simulation)
print(simulation.pk)
"""


class WorkerError(RuntimeError):
    """A ``manage.py`` process failed, or a sweep did not finish in time."""


@dataclass
class Site:
    """One database and the media folder the app's processes share.

    The database (a SQLite file, or a PostgreSQL database named by URL) is migrated; a
    conversation is stored and sweeps are queued through the app's own services, in a
    ``manage.py shell`` process; workers are started and stopped as processes; and the
    sweep's rows are read back with plain SQL while the workers run.
    """

    database_url: str
    media_root: Path
    environ: Mapping[str, str] = field(default_factory=dict)
    """More environment for every process of the site (a shorter sweep lease, say)."""
    started: int = field(default=0, init=False)
    """Workers started so far: each gets a worker id of its own."""

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite:")

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "REDUCTION_MEDIA_ROOT": str(self.media_root),
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "PYTHONPATH": str(REPO),
            **self.environ,
        }
        # The test database's URL wins over DATABASE_URL in settings: these processes
        # must use this site's database.
        env.pop("TEST_DATABASE_URL", None)
        return env

    def manage(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run(
            [sys.executable, str(REPO / "manage.py"), *args],
            cwd=REPO,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            raise WorkerError(f"manage.py {args[0]} failed:\n{done.stderr[-4000:]}")
        return done.stdout

    def migrate(self) -> None:
        self.manage("migrate", "--no-input", "-v", "0")

    def store_conversation(self, messages: Sequence[Any], tools: Sequence[Any], name: str) -> int:
        """Store an OpenAI chat conversation; its primary key."""
        path = self.media_root / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"messages": list(messages), "tools": list(tools)}))
        code = _STORE.format(path=str(path), client_id=name)
        return int(self.manage("shell", "-c", code).split()[-1])

    def queue_sweep(self, conversation_id: int, grid: Mapping[str, Any], pricing: str) -> int:
        """Queue a sweep through the app's services (one task per combination); its key."""
        code = _QUEUE.format(
            conversation_id=conversation_id, grid=json.dumps(grid), pricing=pricing
        )
        return int(self.manage("shell", "-c", code).split()[-1])

    def start_workers(self, count: int, *, interval: float = 0.1) -> list[subprocess.Popen[str]]:
        """``count`` workers polling every ``interval`` seconds, each its own process
        (numbered on from those started before, ``worker-<n>-<this pid>``)."""
        command = [sys.executable, str(REPO / "manage.py"), "db_worker", "--no-reload"]
        command += ["--no-startup-delay", "--interval", str(interval)]
        first, self.started = self.started, self.started + count
        return [
            subprocess.Popen(
                [*command, "--worker-id", f"worker-{n + 1}-{os.getpid()}"],
                cwd=REPO,
                env=self.env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in range(first, first + count)
        ]

    @staticmethod
    def stop_workers(workers: Sequence[subprocess.Popen[str]]) -> list[str]:
        """Stop the workers (SIGTERM: each finishes its task first); their stderr."""
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGTERM)
        errors = []
        for worker in workers:
            try:
                _, err = worker.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                worker.kill()
                _, err = worker.communicate()
            errors.append(err or "")
        return errors

    # Reading rows -------------------------------------------------------------------------

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        if self.is_sqlite:
            # sqlite:///relative.db and sqlite:////absolute/path.db, as the settings read them.
            path = urlsplit(self.database_url).path
            with sqlite3.connect(path[1:] if path.startswith("/") else path, timeout=30) as db:
                db.row_factory = sqlite3.Row
                return [dict(r) for r in db.execute(sql.replace("%s", "?"), params)]
        import psycopg
        from psycopg.rows import dict_row

        with psycopg.connect(self.database_url, row_factory=dict_row) as db:
            return list(db.execute(sql, params))  # type: ignore[arg-type]

    def simulation(self, simulation_id: int) -> dict[str, Any]:
        (row,) = self.rows(
            "SELECT status, progress_done, progress_total, CAST(results AS TEXT) AS results, "
            "error, created_at, "
            "started_at, finished_at FROM reduction_app_simulation WHERE id = %s",
            [simulation_id],
        )
        row["results"] = _json(row["results"])
        return row

    def parts(self, simulation_id: int) -> list[dict[str, Any]]:
        rows = self.rows(
            "SELECT id, position, name, status, runs, worker, "
            "CAST(requeued_after AS TEXT) AS requeued_after, CAST(result AS TEXT) AS result, "
            "started_at, finished_at FROM reduction_app_simulationpart "
            "WHERE simulation_id = %s ORDER BY position",
            [simulation_id],
        )
        for row in rows:
            row["result"] = _json(row["result"])
            row["requeued_after"] = _json(row["requeued_after"])
        return rows

    def part_tasks(self) -> list[dict[str, Any]]:
        """The task rows of sweep parts: which part each ran, its status, its workers and
        what it returned."""
        rows = self.rows(
            "SELECT status, CAST(args_kwargs AS TEXT) AS args_kwargs, "
            "CAST(worker_ids AS TEXT) AS worker_ids, CAST(return_value AS TEXT) AS return_value "
            "FROM django_tasks_database_dbtaskresult WHERE task_path = %s",
            ["reduction_app.simulations.sweeps.run_sweep_part"],
        )
        return [
            {
                "status": r["status"],
                "part_id": _json(r["args_kwargs"])["args"][0],
                "worker_ids": _json(r["worker_ids"]),
                "return_value": _json(r["return_value"]),
            }
            for r in rows
        ]

    def wait(self, simulation_id: int, *, timeout: float, poll: float = 0.2) -> dict[str, Any]:
        """The simulation once done or failed; :class:`WorkerError` after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            row = self.simulation(simulation_id)
            if row["status"] in ("done", "failed"):
                return row
            if time.monotonic() > deadline:
                raise WorkerError(
                    f"simulation {simulation_id} still {row['status']} after {timeout:.0f} s "
                    f"({row['progress_done']}/{row['progress_total']} done)"
                )
            time.sleep(poll)


def _json(value: str | None) -> Any:
    """A JSON column read as text (cast in the query: SQLite gives JSON columns as text,
    psycopg decodes ``jsonb`` itself, and a JSON string would then look like text)."""
    return json.loads(value) if value is not None else None
