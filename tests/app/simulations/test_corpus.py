"""Sweeps and recommendations over several conversations: validated when queued, run as
one task on the worker, their results what the simulator gives in one process."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.db import DatabaseError

from reduction_app import engine
from reduction_app.conversations.selectors import recorded_conversation
from reduction_app.models import Conversation, Simulation, Workspace
from reduction_app.simulations import corpus
from reduction_app.simulations.corpus import corpus_simulation_create
from reduction_app.simulations.services import SimulationInputError, simulation_enqueue
from reduction_app.workspaces.services import workspace_get_or_create
from simulator.corpus_sweep import corpus_sweep
from simulator.pricing import pricing_for
from simulator.recommend import Budget, recommend
from tests.app.pages_support import cut_listing_conversation
from tests.app.simulations.sweep_support import drain_worker
from tests.app.support import ApiClient

pytestmark = pytest.mark.django_db(transaction=True)

GRID = {"max_length_for_trunc": [200, 2000], "clear_superseded": [False, True]}


@pytest.fixture
def two() -> list[Conversation]:
    """Two conversations of two model calls each, their listings cut at 200 characters."""
    workspace = workspace_get_or_create(name="Alpha Team")
    return [
        cut_listing_conversation(workspace, client_id="listing-a"),
        cut_listing_conversation(workspace, tool="find_files", client_id="listing-b"),
    ]


def _queued(conversations: list[Conversation], kind: str, **kwargs: Any) -> Simulation:
    simulation = corpus_simulation_create(
        workspace=conversations[0].workspace, conversations=conversations, kind=kind, **kwargs
    )
    simulation_enqueue(simulation=simulation)
    return simulation


def test_corpus_sweep_runs_on_the_worker_as_the_simulator_sums_it(
    two: list[Conversation],
) -> None:
    simulation = _queued(two, "sweep", grid=GRID)
    # 4 combinations on 2 conversations.
    assert (simulation.status, simulation.progress_total) == ("queued", 8)
    assert simulation.conversation == two[0]
    assert list(simulation.conversations.order_by("id")) == two
    assert not simulation.parts.exists()  # one task, not one per combination
    drain_worker()
    simulation.refresh_from_db()
    assert (simulation.status, simulation.error) == ("done", "")
    assert (simulation.progress_done, simulation.progress_total) == (8, 8)
    expected = corpus_sweep(
        [recorded_conversation(c) for c in two], GRID, pricing=pricing_for("gpt-4o")
    ).to_dict()
    assert simulation.results == expected
    assert len(expected["combinations"]) == 4


def test_recommend_runs_on_the_worker_as_the_simulator_searches(two: list[Conversation]) -> None:
    grid = {"max_length_for_trunc": [200, 2000]}
    budget = Budget(misses_per_100_calls=50, refetches_per_100_calls=1, max_run_loss=0.5)
    simulation = _queued(two, "recommend", grid=grid, max_seconds=60, budget=budget)
    assert simulation.options == {
        "pricing": "gpt-4o",
        "corpus": True,
        "max_seconds": 60,
        "budget": budget.to_dict(),
    }
    drain_worker()
    simulation.refresh_from_db()
    assert (simulation.status, simulation.error) == ("done", "")
    assert simulation.results is not None
    expected = recommend(
        [recorded_conversation(c) for c in two],
        pricing=pricing_for("gpt-4o"),
        grid=grid,
        max_seconds=60,
        budget=budget,
    ).to_dict()
    for key in ("config", "saved", "saved_with_recovery", "misses", "refetches", "front",
                "budget", "expected", "binding", "nearest"):  # fmt: skip
        assert simulation.results[key] == expected[key], key


def _refused(conversations: list[Conversation], workspace: Workspace, **kwargs: Any) -> str:
    with pytest.raises(SimulationInputError) as caught:
        corpus_simulation_create(workspace=workspace, conversations=conversations, **kwargs)
    return str(caught.value)


def test_corpus_simulation_create_refuses_what_cannot_run(
    two: list[Conversation], monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = two[0].workspace
    assert _refused([], workspace, kind="sweep", grid=GRID) == (
        "conversations: pick at least one conversation"
    )
    assert _refused(two, workspace, kind="sweep", grid=None) == "grid: give the values to sweep"
    many = {"max_tokens_for_clear": list(range(1000, 27000, 1000))}  # 26 values
    many["max_length_for_trunc"] = list(range(100, 2100, 100))  # 20 values
    assert _refused(two, workspace, kind="sweep", grid=many) == (
        "grid: 520 combinations; at most 500 can be swept at once"
    )
    monkeypatch.setattr(corpus, "MAX_CONVERSATIONS", 1)
    assert _refused(two, workspace, kind="sweep", grid=GRID) == (
        "conversations: 2 conversations; at most 1 at once"
    )
    monkeypatch.setattr(corpus, "MAX_CONVERSATIONS", 2)
    monkeypatch.setattr(corpus, "MAX_REPLAYS", 7)
    assert _refused(two, workspace, kind="sweep", grid=GRID) == (
        "grid: 4 combinations × 2 conversations = 8 replays; at most 7 at once"
    )
    with pytest.raises(engine.ConfigError) as problem:
        engine.config_from_dict({"max_length_for_trunc": -1}, backend=engine.InMemoryBackend())
    assert _refused(two, workspace, kind="sweep", grid={"max_length_for_trunc": [-1]}) == (
        f"grid: {problem.value}"
    )
    assert _refused(two, workspace, kind="recommend", grid=None, max_seconds=2) == (
        "max_seconds: must be between 5 and 900, got 2"
    )
    assert _refused(two, workspace, kind="replay", grid=GRID) == (
        "kind: must be 'sweep' or 'recommend', got 'replay'"
    )
    elsewhere = workspace_get_or_create(name="Elsewhere")
    assert _refused(two, elsewhere, kind="sweep", grid=GRID) == (
        "conversations: a conversation of another workspace"
    )
    assert not Simulation.objects.exists()


def test_the_rest_api_reads_sweeps_and_recommendations_over_several_conversations(
    api: ApiClient,
) -> None:
    """They are started from the Sweep page; the REST API lists and reads them, their
    results as the simulator wrote them."""
    conversations = [
        cut_listing_conversation(api.workspace, client_id="listing-a"),
        cut_listing_conversation(api.workspace, tool="find_files", client_id="listing-b"),
    ]
    swept = _queued(conversations, "sweep", grid=GRID)
    recommended = _queued(conversations, "recommend", grid={"max_length_for_trunc": [200]})
    drain_worker()
    listed = api.get("/simulations")
    assert listed.status_code == HTTPStatus.OK
    assert [(s["id"], s["kind"], s["status"]) for s in listed.json()["results"]] == [
        (recommended.pk, "recommend", "done"),
        (swept.pk, "sweep", "done"),
    ]
    for simulation in (swept, recommended):
        simulation.refresh_from_db()
        detail = api.get(f"/simulations/{simulation.pk}")
        assert detail.status_code == HTTPStatus.OK
        body = detail.json()
        assert (body["conversation_id"], body["parts"]) == ("listing-a", [])
        assert body["results"] == simulation.results


def test_corpus_simulation_is_recorded_with_its_conversations_or_not_at_all(
    two: list[Conversation], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database fails as the conversations are attached: no simulation is left
    behind that a worker or a page would find without them."""

    def lost_connection(*args: Any, **kwargs: Any) -> None:
        raise DatabaseError("the connection was lost")

    monkeypatch.setattr(Simulation.conversations.related_manager_cls, "set", lost_connection)
    with pytest.raises(DatabaseError):
        corpus_simulation_create(
            workspace=two[0].workspace, conversations=two, kind="sweep", grid=GRID
        )
    assert not Simulation.objects.exists()
