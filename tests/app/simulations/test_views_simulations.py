"""The simulations pages: the list, and a sweep's progress then its results."""

from __future__ import annotations

import re
from datetime import timedelta
from http import HTTPStatus

import pytest
from django.test import Client
from django.utils import timezone

from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation, Simulation, SimulationPart
from reduction_app.simulations.services import (
    simulation_create,
    simulation_enqueue,
    simulation_run,
)
from reduction_app.simulations.sweeps import _claim, sweep_part_run
from simulator.compare import compare
from tests.app.pages_support import (
    CUT_LISTING,
    HIDDEN_NAME,
    cut_listing_conversation,
    elements,
    html,
    member_client,
    metric,
    parsed,
    record_conversation,
    row_of,
    text,
)

pytestmark = pytest.mark.django_db

GRID = {"max_tokens_for_clear": [4000, 8000], "clear_retention_suffix_limit": [1, 2]}


@pytest.fixture
def setup() -> tuple[Client, Conversation]:
    client, workspace = member_client()
    return client, record_conversation(workspace)


def _sweep(conversation: Conversation) -> Simulation:
    simulation = simulation_create(
        workspace=conversation.workspace, conversation=conversation, configs=[], grid=GRID
    )
    simulation_enqueue(simulation=simulation)
    return simulation


def _run_parts(simulation: Simulation, positions: list[int]) -> None:
    for part in SimulationPart.objects.filter(simulation=simulation, position__in=positions):
        sweep_part_run(part_id=part.pk)


def test_simulation_page_follows_a_sweep_on_the_workers(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    simulation = _sweep(conversation)
    url = f"/simulations/{simulation.pk}/"
    page = html(client.get(url))
    assert "Queued: 0 of 4 combinations done." in page
    assert f'hx-get="{url}" hx-trigger="every 1s"' in page
    _run_parts(simulation, [0, 1])
    swap = html(client.get(url, headers={"HX-Request": "true"}))
    assert swap.lstrip().startswith('<section id="simulation-status"')  # the partial only
    assert "Running: 2 of 4 combinations done." in swap
    assert "Parts: 2 done, 3 queued." in swap
    assert "Workers: <code>" in swap and "(2)" in swap
    _run_parts(simulation, [2, 3, 4])
    page = html(client.get(url))
    assert "Done: 4 of 4 combinations in" in page
    assert "hx-trigger" not in page  # no more polling
    assert "Pareto front: cost saved with recovery against re-fetches + misses" in page
    assert "clear_retention_suffix_limit=1,max_tokens_for_clear=4000" in page
    # The rows marked on the front are the chart's blue circles (4 distinct results).
    assert page.count('class="badge">front</span>') == page.count('class="point pareto"')
    assert "No reduction: " in page


def test_simulation_page_says_why_a_sweep_failed(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    simulation = _sweep(conversation)
    SimulationPart.objects.filter(simulation=simulation, position=0).update(
        config={"max_tokens_for_clear": -1}
    )
    _run_parts(simulation, [0])
    page = html(client.get(f"/simulations/{simulation.pk}/"))
    assert (
        "It failed: clear_retention_suffix_limit=1,max_tokens_for_clear=4000: ConfigError" in page
    )


def _lost(simulation: Simulation, position: int, worker: str, runs: int = 1) -> None:
    """Part ``position`` claimed by ``worker`` (on run ``runs``), silent for over a lease."""
    part = SimulationPart.objects.get(simulation=simulation, position=position)
    assert _claim(part.pk) is not None
    SimulationPart.objects.filter(pk=part.pk).update(
        worker=worker, runs=runs, heartbeat_at=timezone.now() - timedelta(seconds=61)
    )


def test_simulation_page_names_the_worker_a_part_was_queued_again_after(
    setup: tuple[Client, Conversation],
) -> None:
    """Looking at a sweep takes back a part whose worker stopped answering; the page says
    after which worker it was queued again, and how many runs it took."""
    client, conversation = setup
    simulation = _sweep(conversation)
    _lost(simulation, 0, "<ghost>:7")
    url = f"/simulations/{simulation.pk}/"
    page = html(client.get(url))
    assert (
        "<li><code>clear_retention_suffix_limit=1,max_tokens_for_clear=4000</code> "
        "(run 1 time, queued): re-queued after worker <code>&lt;ghost&gt;:7</code> stopped "
        "answering.</li>"
    ) in page
    _run_parts(simulation, [0])
    _lost(simulation, 1, "ghost:8", runs=1)
    swap = html(client.get(url, headers={"HX-Request": "true"}))
    assert (
        "<li><code>clear_retention_suffix_limit=1,max_tokens_for_clear=4000</code> "
        "(run 2 times, done): re-queued after worker <code>&lt;ghost&gt;:7</code> stopped "
        "answering.</li>"
        "<li><code>clear_retention_suffix_limit=1,max_tokens_for_clear=8000</code> "
        "(run 1 time, queued): re-queued after worker <code>ghost:8</code> stopped "
        "answering.</li>"
    ) in swap
    assert "Parts: 1 done, 4 queued." in swap


def test_simulation_page_says_which_worker_a_sweep_failed_with(
    setup: tuple[Client, Conversation],
) -> None:
    client, conversation = setup
    simulation = _sweep(conversation)
    _lost(simulation, 0, "<ghost>:9", runs=3)
    page = html(client.get(f"/simulations/{simulation.pk}/"))
    assert (
        "It failed: clear_retention_suffix_limit=1,max_tokens_for_clear=4000: worker "
        "&lt;ghost&gt;:9 stopped answering (no heartbeat for 60 s) on run 3 of 3</p>"
    ) in page
    assert "hx-trigger" not in page


def test_simulation_list_links_each_simulation(setup: tuple[Client, Conversation]) -> None:
    client, conversation = setup
    simulation = _sweep(conversation)
    page = html(client.get("/simulations/"))
    assert f'<a href="/simulations/{simulation.pk}/">{simulation.pk}</a>' in page
    assert "Sweep a grid" in page and "0 / 4" in page


def test_simulation_list_sorts_and_filters_by_its_columns() -> None:
    client, workspace = member_client()
    conversation = conversation_upsert(
        workspace=workspace, client_id="run", message_format="openai_chat"
    )
    made = [
        Simulation.objects.create(
            workspace=workspace,
            conversation=conversation,
            kind=kind,
            status=status,
            progress_done=done,
            progress_total=10,
        )
        for kind, status, done in (
            ("replay", "done", 10),
            ("sweep", "running", 3),
            ("recommend", "queued", 0),
            ("sweep", "done", 7),
        )
    ]
    ids = [s.pk for s in made]

    def listed(**params: str) -> list[int]:
        response = client.get("/simulations/", params)
        assert response.status_code == HTTPStatus.OK
        return [int(i) for i in re.findall(r'<td><a href="/simulations/(\d+)/">', html(response))]

    assert listed() == ids[::-1]
    assert listed(sort="-done") == [ids[0], ids[3], ids[1], ids[2]]
    assert listed(sort="done") == [ids[2], ids[1], ids[3], ids[0]]
    assert listed(sort="kind") == [ids[2], ids[0], ids[1], ids[3]]
    assert listed(kind="sweep") == [ids[3], ids[1]]
    assert listed(kind="sweep", sort="done") == [ids[1], ids[3]]
    assert listed(status="done", sort="-id") == [ids[3], ids[0]]
    assert listed(kind="nonsense", status="lost", sort="progress_done") == ids[::-1]
    assert "No simulations match these filters." in html(
        client.get("/simulations/", {"kind": "recommend", "status": "done"})
    )
    headers = html(client.get("/simulations/", {"kind": "sweep", "sort": "done"}))
    assert 'href="/simulations/?kind=sweep&amp;sort=-done"' in headers


def test_simulation_of_another_workspace_is_not_found(setup: tuple[Client, Conversation]) -> None:
    _, conversation = setup
    simulation = _sweep(conversation)
    stranger, _ = member_client("bob", workspace="Elsewhere")
    assert stranger.get(f"/simulations/{simulation.pk}/").status_code == HTTPStatus.NOT_FOUND
    assert "No simulations yet" in html(stranger.get("/simulations/"))


@pytest.fixture
def cut_replay() -> tuple[Client, Simulation]:
    """A finished replay of the cut listing under ``CUT_LISTING`` and no reduction."""
    client, workspace = member_client()
    conversation = cut_listing_conversation(workspace)
    configs = [{"name": "cut", "config": CUT_LISTING}, {"name": "off", "config": None}]
    simulation = simulation_create(workspace=workspace, conversation=conversation, configs=configs)
    return client, simulation_run(simulation_id=simulation.pk)


def test_simulation_page_shows_a_replays_misses(cut_replay: tuple[Client, Simulation]) -> None:
    """The listing's middle is cut under "cut" and the answer types a name from there: 1
    miss (worked out in ``cut_listing_conversation``), none with no reduction."""
    client, simulation = cut_replay
    assert simulation.status == "done"
    (cut, _) = compare(
        recorded_conversation(simulation.conversation),
        [("cut", CUT_LISTING), ("off", None)],
    ).results
    assert cut.totals.cost_with_recovery_usd is not None
    page = parsed(client.get(f"/simulations/{simulation.pk}/"))
    row = row_of(page, "all", "cut")
    assert metric(row, "misses") == "1"
    assert metric(row, "cost_with_recovery_usd") == f"${cut.totals.cost_with_recovery_usd:,.4f}"
    assert metric(row_of(page, "all", "off"), "misses") == "0"
    (heading,) = elements(page, "th", data_metric="misses")
    assert "typed later" in dict(heading.attributes)["title"]
    (examples,) = elements(page, "table", id="miss-examples")
    (example,) = [r for r in elements(examples, "tr") if elements(r, "td")]
    assert [text(td) for td in elements(example, "td")] == ["2", "grep_repo", HIDDEN_NAME]


def test_simulation_page_shows_a_sweeps_misses_on_the_front_and_every_row() -> None:
    """At 200 characters the listing's middle is cut (1 miss); at 2,000 it is whole."""
    client, workspace = member_client()
    conversation = cut_listing_conversation(workspace)
    simulation = simulation_create(
        workspace=workspace,
        conversation=conversation,
        configs=[],
        grid={"max_length_for_trunc": [200, 2000]},
    )
    simulation_enqueue(simulation=simulation)
    _run_parts(simulation, [0, 1, 2])
    page = parsed(client.get(f"/simulations/{simulation.pk}/"))
    assert metric(row_of(page, "all", "max_length_for_trunc=200"), "misses") == "1"
    assert metric(row_of(page, "all", "max_length_for_trunc=2000"), "misses") == "0"
    # The front weighs cost saved with recovery against re-fetches + misses, as the chart
    # does: going back for what the cut at 200 hid costs more than the cut saves, so
    # 2,000 (nothing hidden, no miss) alone is on the front.
    (front,) = elements(page, "table", class_="front")
    assert [text(th) for th in elements(front, "th", scope="row")] == ["max_length_for_trunc=2000"]
    row = row_of(page, "front", "max_length_for_trunc=2000")
    assert (metric(row, "misses"), metric(row, "lost")) == ("0", "0")
    assert not elements(page, "table", id="miss-examples")  # a sweep keeps totals only


def test_simulation_page_shows_unknown_misses_for_results_stored_before_them(
    cut_replay: tuple[Client, Simulation],
) -> None:
    client, simulation = cut_replay
    assert simulation.results is not None
    for run in simulation.results["results"]:
        del run["totals"]["misses"], run["totals"]["cost_with_recovery_usd"]
        del run["miss_examples"]
    simulation.save(update_fields=["results"])
    response = client.get(f"/simulations/{simulation.pk}/")
    assert response.status_code == HTTPStatus.OK
    page = parsed(response)
    for name in ("cut", "off"):
        row = row_of(page, "all", name)
        assert (metric(row, "misses"), metric(row, "cost_with_recovery_usd")) == ("—", "—")
    assert not elements(page, "table", id="miss-examples")
