"""The Sweep page in a real browser: a sweep over two imported recordings, followed to
its end, one of its points opened in Compare against no reduction and one saved as a
config; and Recommend over the same two.

The task worker runs in this thread (``drain_worker``) while the page polls. Every
request of the page goes through Playwright's routing, which answers it only while
this thread is inside a Playwright call: so the live server never touches the shared
in-memory test database while the worker does.
"""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.conversations.imports import recordings_import
from reduction_app.models import ConfigProfile, Conversation, Simulation
from reduction_app.simulations.points import points_of
from reduction_app.simulations.selectors import simulation_results
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.conversations.recordings import CLAUDE_CODE, SWE_AGENT
from tests.app.simulations.sweep_support import drain_worker
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = needs_recordings


@pytest.fixture
def two_recordings(demo_user: Any) -> list[Conversation]:
    """A SWE-agent run (11 messages) and a Claude Code one (14), through the importer."""
    workspace = workspace_get_or_create(name="Demo")
    files = [(p.split("/")[-1], (CONVERSATIONS / p).read_bytes()) for p in (SWE_AGENT, CLAUDE_CODE)]
    recordings_import(workspace=workspace, files=files)
    return list(Conversation.objects.filter(workspace=workspace).order_by("id"))


def _serialised(page: Any) -> None:
    page.route("**/*", lambda route: route.continue_())


def _pick(page: Any, conversations: list[Conversation]) -> None:
    page.click("nav >> text=Sweep")
    page.wait_for_url(f"{page.base}/sweep/")
    for conversation in conversations:
        page.check(f"#pick-{conversation.pk}")


def _finish(page: Any) -> Simulation:
    page.wait_for_url(f"{page.base}/simulations/*/")
    simulation = Simulation.objects.latest("id")
    drain_worker()
    page.wait_for_selector("[data-status=done]", timeout=30_000)
    return simulation


def test_sweep_two_recordings_open_a_point_in_compare_and_save_one(
    signed_in: Any, two_recordings: list[Conversation], shoot: Any
) -> None:
    page = signed_in
    _serialised(page)
    _pick(page, two_recordings)
    page.fill("#knob-max_length_for_trunc", "100, 50k")
    page.check("input[name=clear_superseded][value=both]")
    # 2 values × off and on = 4 combinations, on 2 conversations.
    page.wait_for_selector("#sweep-count [data-replays='8']")
    assert page.locator("#sweep-count .count").inner_text() == (
        "4 combinations × 2 conversations = 8 replays (at most 500 combinations and 5,000 replays)."
    )
    shoot(page, "sweep")
    page.click("button:has-text('Start sweep')")
    simulation = _finish(page)
    assert sorted(c.pk for c in simulation.conversations.all()) == [c.pk for c in two_recordings]
    assert simulation.grid == {
        "max_length_for_trunc": [100, 50000],
        "clear_superseded": [False, True],
    }
    page.wait_for_selector("svg[data-chart=front] a.point")
    counts = page.eval_on_selector_all(
        "svg[data-chart=front] a.point", "els => els.map(e => Number(e.dataset.count))"
    )
    assert sum(counts) == 4
    assert page.locator("table.all tbody tr").count() == 4
    grid = page.locator(".grid-knobs dl.knobs").inner_text()
    assert "max_length_for_trunc\n= 100, 50000" in grid
    assert "{" not in page.locator("main").inner_text()
    shoot(page, "sweep-results")

    # A point of the chart: its knobs in its hover title, then its page.
    point = page.locator("svg[data-chart=front] a.point").first
    number = point.get_attribute("data-point")
    title = point.locator("title").text_content()
    assert f"point {number}:" in title and "max_length_for_trunc = " in title
    point.locator("circle").click()
    page.wait_for_url(f"{page.base}/simulations/{simulation.pk}/points/{number}/")
    knobs = page.locator("dl.knobs").inner_text()
    assert "max_length_for_trunc" in knobs and "clear_superseded" in knobs
    page.click("#point-compare button")
    page.wait_for_url(f"{page.base}/compare/*")
    names = page.locator("table.totals tbody th[scope=row]").all_inner_texts()
    expected = f"Sweep a grid #{simulation.pk} point {number}"
    assert [" ".join(n.split()) for n in names] == ["no reduction baseline", expected]
    # Replayed as it is: Compare saved no config for it.
    assert not ConfigProfile.objects.exists()
    results = Simulation.objects.get(pk=simulation.pk)
    trunc = points_of(simulation_results(results), results.grid)[int(number) - 1].config[
        "max_length_for_trunc"
    ]
    shoot(page, "sweep-point-compare")

    # The same point in Tune, its knobs on the sliders.
    page.go_back()
    page.wait_for_url(f"{page.base}/simulations/{simulation.pk}/points/{number}/")
    page.click("#point-tune button")
    page.wait_for_url(f"{page.base}/tune/*")
    assert page.locator("input[type=number][name=max_length_for_trunc]").input_value() == str(trunc)

    # Another point, saved as a config of its own.
    page.goto(f"{page.base}/simulations/{simulation.pk}/")
    page.locator("table.all tbody tr").nth(3).locator("td").nth(2).click()
    page.wait_for_url(f"{page.base}/simulations/{simulation.pk}/points/4/")
    page.fill("#point-save input[name=name]", "superseded, cut at 50k")
    page.click("#point-save button")
    page.wait_for_url(f"{page.base}/configs/*/versions/")
    profile = ConfigProfile.objects.get(name="superseded, cut at 50k")
    assert page.url == f"{page.base}/configs/{profile.pk}/versions/"
    assert (
        page.locator("ul.flash")
        .inner_text()
        .startswith("Saved as config “superseded, cut at 50k”, version 1")
    )
    data = profile.versions.get().data
    assert (data["max_length_for_trunc"], data["clear_superseded"]) == (50000, True)


def test_recommend_over_two_recordings_and_save_its_config(
    signed_in: Any, two_recordings: list[Conversation], shoot: Any
) -> None:
    page = signed_in
    _serialised(page)
    _pick(page, two_recordings)
    page.fill("#knob-max_length_for_trunc", "100, 50k")
    page.fill("input[name=max_seconds]", "20")
    page.click("button:has-text('Recommend')")
    simulation = _finish(page)
    assert simulation.kind == "recommend"
    results = Simulation.objects.get(pk=simulation.pk).results
    assert results is not None
    shoot(page, "recommend")
    assert results["config"] is not None
    assert page.locator("#recommendation h2").inner_text() == "Recommended config"
    page.click("#recommended-save button")
    page.wait_for_url(f"{page.base}/configs/*/versions/")
    profile = ConfigProfile.objects.get(name=f"Recommended by #{simulation.pk}")
    data = profile.versions.get().data
    assert all(data[k] == v for k, v in results["config"].items())
