"""What the browser tests of the Reduction Lab pages share: a sweep over two imported
recordings at a price other than the default, run to its end on the task worker (in
this thread, before any page is opened, so the live server never meets the worker), and
the check that a page fits its window."""

from __future__ import annotations

from typing import Any

from reduction_app.conversations.imports import recordings_import
from reduction_app.models import Conversation, Simulation, Workspace
from reduction_app.simulations.corpus import corpus_simulation_create
from reduction_app.simulations.services import simulation_enqueue
from tests.app.conversations.recordings import CLAUDE_CODE, SWE_AGENT
from tests.app.simulations.sweep_support import drain_worker
from tests.conftest import CONVERSATIONS

SWEEP_PRICING = "claude-sonnet-4.5"
SWEEP_GRID = {"max_tokens_for_clear": [2000, 20000], "max_length_for_trunc": [100, 50000]}
"""Cutting outputs at 100 characters and clearing at 2k cost these short runs more than no
reduction once recovery is counted, so point pages have conversations to name."""

DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def two_conversations(workspace: Workspace) -> list[Conversation]:
    """A SWE-agent run (11 messages) and a Claude Code one (14), through the importer."""
    files = [(p.split("/")[-1], (CONVERSATIONS / p).read_bytes()) for p in (SWE_AGENT, CLAUDE_CODE)]
    recordings_import(workspace=workspace, files=files)
    return list(Conversation.objects.filter(workspace=workspace).order_by("id"))


def finished_sweep(workspace: Workspace, conversations: list[Conversation]) -> Simulation:
    simulation = corpus_simulation_create(
        workspace=workspace,
        conversations=conversations,
        kind="sweep",
        grid=SWEEP_GRID,
        pricing=SWEEP_PRICING,
    )
    simulation_enqueue(simulation=simulation)
    drain_worker()
    simulation.refresh_from_db()
    assert simulation.status == "done", simulation.error
    return simulation


def overflow(page: Any) -> tuple[int, int]:
    """The page's scroll width and the window's inner width."""
    return page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
