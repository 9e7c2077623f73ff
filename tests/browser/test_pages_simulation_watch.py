"""A simulation's page in a real browser while the worker running it dies: the page,
polling, turns from running to failed, saying the worker stopped answering.

Every request of the page goes through Playwright's routing, which answers it only while
this thread is inside a Playwright call: so the live server never touches the shared
in-memory test database while this thread writes to it.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from reduction_app.models import Simulation
from reduction_app.simulations.services import simulation_create, simulation_enqueue
from reduction_app.workspaces.services import workspace_get_or_create
from simulator.replay import no_reduction
from tests.app.pages_support import cut_listing_conversation


def test_simulation_page_says_the_worker_running_it_stopped_answering(
    signed_in: Any, shoot: Any
) -> None:
    page = signed_in
    page.route("**/*", lambda route: route.continue_())
    conversation = cut_listing_conversation(workspace_get_or_create(name="Demo"))
    simulation = simulation_create(
        workspace=conversation.workspace,
        conversation=conversation,
        configs=[{"name": "none", "config": no_reduction()}],
    )
    simulation_enqueue(simulation=simulation)
    # A worker took it and beats.
    now = timezone.now()
    Simulation.objects.filter(pk=simulation.pk).update(
        status="running", started_at=now, heartbeat_at=now
    )
    page.goto(f"{page.base}/simulations/{simulation.pk}/")
    page.wait_for_selector("[data-status=running]")
    assert page.locator("[role=alert]").count() == 0
    # Its worker dies: no heartbeat for over a lease (60 s).
    then = now - timedelta(seconds=61)
    Simulation.objects.filter(pk=simulation.pk).update(started_at=then, heartbeat_at=then)
    page.wait_for_selector("[data-status=failed]", timeout=10_000)
    assert page.locator("#simulation-status [role=alert]").inner_text() == (
        "It failed: the worker running it stopped answering (no heartbeat for 60 s); start it again"
    )
    assert page.locator("#simulation-status").get_attribute("hx-trigger") is None
    shoot(page, "simulation-worker-lost")
