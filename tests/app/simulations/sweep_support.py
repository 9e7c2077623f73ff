"""What the tests of sweeps on the task workers share: a recorded OpenHands run, a sweep
queued as parts, a worker that drains the queue in this process, the in-process sweep the
parts must add up to, and the databases real worker processes run on."""

from __future__ import annotations

import json
import os
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django_tasks_db.models import DBTaskResult

from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.jobs.watch import jobs_watch
from reduction_app.models import Conversation, Simulation
from reduction_app.simulations.services import simulation_create, simulation_enqueue
from simulator.compare import sweep
from simulator.importers import openhands_to_openai
from simulator.pricing import pricing_for
from tests.conftest import CONVERSATIONS, skip_without_recordings

TASK_PATHS = {
    "run_simulation": "reduction_app.simulations.services.run_simulation",
    "run_sweep_part": "reduction_app.simulations.sweeps.run_sweep_part",
    "watch_jobs": "reduction_app.jobs.watch.watch_jobs",
}
"""Where each task is declared: beside the service it runs."""

GRID = {"max_tokens_for_clear": [4000, 8000, 16000], "clear_retention_suffix_limit": [1, 2]}


def openhands_run(index: int = 0) -> dict[str, Any]:
    """An OpenHands recording (the first: ponyc-4595) as OpenAI chat messages and tools."""
    skip_without_recordings()
    line = (
        (CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl").read_text().splitlines()[index]
    )
    messages, tools = openhands_to_openai(json.loads(line))
    return {"messages": messages, "tools": tools}


def queued(conversation: Conversation, grid: dict[str, Any] = GRID) -> Simulation:
    """A sweep of ``grid`` made into parts, with their tasks enqueued."""
    simulation = simulation_create(
        workspace=conversation.workspace, conversation=conversation, configs=[], grid=grid
    )
    simulation_enqueue(simulation=simulation)
    return simulation


def drain_worker() -> None:
    """Run every task ready, in this process, as ``manage.py db_worker --batch``."""
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())


def watches() -> list[DBTaskResult]:
    """The watch tasks queued so far, oldest first."""
    return list(DBTaskResult.objects.filter(task_path=TASK_PATHS["watch_jobs"]).order_by("pk"))


def run_the_watch() -> int:
    """What a worker taking the watch task that is due does: the queued watch is marked
    taken, then the watcher looks. How many jobs are unfinished."""
    DBTaskResult.objects.filter(task_path=TASK_PATHS["watch_jobs"], status="READY").update(
        status="SUCCESSFUL"
    )
    return jobs_watch()


def in_process(conversation: Conversation, grid: dict[str, Any] = GRID) -> dict[str, Any]:
    """The results the same sweep gives in one process."""
    recorded = recorded_conversation(conversation)
    return sweep(recorded, grid, pricing=pricing_for("gpt-4o"), workers=1).to_dict()


def databases() -> list[Any]:
    """SQLite always; PostgreSQL too when the test run has a server (TEST_DATABASE_URL).
    The PostgreSQL half is ``db``, so the PostgreSQL pass runs it."""
    url = os.environ.get("TEST_DATABASE_URL", "")
    marks = [pytest.mark.db]
    if not url.startswith(("postgres://", "postgresql://")):
        marks.append(pytest.mark.skip("no TEST_DATABASE_URL"))
    return [
        pytest.param("sqlite", marks=pytest.mark.sqlite_only),
        pytest.param("postgresql", marks=marks),
    ]
