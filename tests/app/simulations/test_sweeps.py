"""Sweeps on the task workers: one task per combination, gathered once all are done;
and a real run on two ``manage.py db_worker`` processes against one database."""

from __future__ import annotations

from pathlib import Path

import pytest
from django_tasks_db.models import DBTaskResult

from reduction_app.conversations.services import conversation_upsert
from reduction_app.models import Conversation, SimulationPart
from reduction_app.simulations import sweeps
from reduction_app.simulations.sweeps import sweep_part_run
from simulator.compare import sweep
from simulator.importers import conversation_from_json
from simulator.pricing import pricing_for
from tests.app.simulations.sweep_support import (
    databases,
    drain_worker,
    in_process,
    openhands_run,
    queued,
)


@pytest.mark.django_db(transaction=True)
def test_sweep_enqueue_makes_a_part_and_a_task_per_combination(stored: Conversation) -> None:
    simulation = queued(stored)
    parts = list(SimulationPart.objects.filter(simulation=simulation))
    assert [p.position for p in parts] == list(range(7))
    assert parts[0].name == "clear_retention_suffix_limit=1,max_tokens_for_clear=4000"
    assert parts[0].config == {"clear_retention_suffix_limit": 1, "max_tokens_for_clear": 4000}
    assert (parts[-1].name, parts[-1].config) == ("no reduction", None)
    assert {p.status for p in parts} == {"queued"}
    tasks = DBTaskResult.objects.filter(task_path="reduction_app.simulations.sweeps.run_sweep_part")
    assert sorted(t.args_kwargs["args"][0] for t in tasks) == [p.pk for p in parts]
    simulation.refresh_from_db()
    assert (simulation.status, simulation.progress_done, simulation.progress_total) == (
        "queued",
        0,
        6,
    )


@pytest.mark.django_db(transaction=True)
def test_sweep_parts_gather_what_an_in_process_sweep_gives(stored: Conversation) -> None:
    simulation = queued(stored)
    drain_worker()
    simulation.refresh_from_db()
    assert (simulation.status, simulation.error) == ("done", "")
    assert (simulation.progress_done, simulation.progress_total) == (6, 6)
    assert simulation.results == in_process(stored)
    parts = SimulationPart.objects.filter(simulation=simulation)
    assert {(p.status, p.runs) for p in parts} == {("done", 1)}
    assert all(p.worker and p.started_at and p.finished_at for p in parts)


@pytest.mark.django_db(transaction=True)
def test_sweep_progress_counts_the_combinations_done(stored: Conversation) -> None:
    simulation = queued(stored)
    first, baseline = (
        SimulationPart.objects.get(simulation=simulation, position=p) for p in (0, 6)
    )
    assert sweep_part_run(part_id=baseline.pk) == "done"
    assert sweep_part_run(part_id=first.pk) == "done"
    simulation.refresh_from_db()
    # The baseline is not one of the combinations the progress counts.
    assert (simulation.status, simulation.progress_done) == ("running", 1)
    assert simulation.results is None


@pytest.mark.django_db(transaction=True)
def test_sweep_part_runs_once_even_when_its_task_comes_twice(stored: Conversation) -> None:
    simulation = queued(stored)
    part = SimulationPart.objects.get(simulation=simulation, position=0)
    assert sweep_part_run(part_id=part.pk) == "done"
    assert sweep_part_run(part_id=part.pk) == "done"
    part.refresh_from_db()
    assert part.runs == 1


@pytest.mark.django_db(transaction=True)
def test_sweep_part_failure_fails_the_sweep_and_names_the_combination(
    stored: Conversation,
) -> None:
    simulation = queued(stored)
    broken = SimulationPart.objects.get(simulation=simulation, position=2)
    SimulationPart.objects.filter(pk=broken.pk).update(config={"max_tokens_for_clear": "lots"})
    drain_worker()
    simulation.refresh_from_db()
    assert simulation.status == "failed"
    assert simulation.error == (
        "clear_retention_suffix_limit=1,max_tokens_for_clear=16000: ConfigError: "
        "max_tokens_for_clear must be an integer, got 'lots'"
    )
    parts = {p.position: p for p in SimulationPart.objects.filter(simulation=simulation)}
    assert parts[2].status == "failed" and parts[2].error == simulation.error
    # Parts taken after the failure are not run; none is left queued.
    for part in parts.values():
        assert part.status == "done" or part.error in (
            simulation.error,
            "not run: the sweep had failed",
        )
    assert simulation.results is None


@pytest.mark.django_db(transaction=True)
def test_sweep_parts_of_one_worker_share_the_prepared_conversation(stored: Conversation) -> None:
    sweeps._prepared.clear()
    gpt4o = pricing_for("gpt-4o")
    first = sweeps._prepared_for(stored.pk, gpt4o)
    assert sweeps._prepared_for(stored.pk, gpt4o) is first
    assert sweeps._prepared_for(stored.pk, pricing_for("gpt-5")) is not first
    # A conversation that changed is prepared again.
    run = openhands_run()
    conversation_upsert(
        workspace=stored.workspace,
        client_id=stored.client_id,
        message_format="openai_chat",
        transcript=[*run["messages"], {"role": "user", "content": "and?"}],
        tools=run["tools"],
    )
    assert sweeps._prepared_for(stored.pk, gpt4o) is not first
    assert len(sweeps._prepared) == sweeps.PREPARED_KEPT


# Two real workers ----------------------------------------------------------------------


@pytest.mark.parametrize("site_url", databases(), indirect=True)
@pytest.mark.slow
def test_sweep_on_two_db_worker_processes(site_url: str, tmp_path: Path) -> None:
    """Two ``manage.py db_worker`` processes take the parts of one sweep from one database:
    every combination runs exactly once, and the gathered results are the in-process
    sweep's."""
    from benchmarks.taskworkers import Site

    site = Site(site_url, tmp_path / "media")
    run = openhands_run(2)  # ponyc-4588: 49 calls
    conversation_id = site.store_conversation(run["messages"], run["tools"], "ponyc-4588")
    grid = {
        "max_tokens_for_clear": [2000, 4000, 8000, 16000],
        "clear_retention_suffix_limit": [1, 3],
        "max_length_for_trunc": [2000, 20000],
    }
    workers = site.start_workers(2)
    try:
        simulation_id = site.queue_sweep(conversation_id, grid, "gpt-4o")
        finished = site.wait(simulation_id, timeout=240)
    finally:
        errors = site.stop_workers(workers)
    assert (finished["status"], finished["error"]) == ("done", ""), errors
    assert (finished["progress_done"], finished["progress_total"]) == (16, 16)
    parts = site.parts(simulation_id)
    assert [p["position"] for p in parts] == list(range(17))
    assert {(p["status"], p["runs"]) for p in parts} == {("done", 1)}
    tasks = site.part_tasks()
    assert sorted(t["part_id"] for t in tasks) == sorted(p["id"] for p in parts)
    assert {(t["status"], len(t["worker_ids"])) for t in tasks} == {("SUCCESSFUL", 1)}
    recorded = conversation_from_json(
        {"messages": run["messages"], "tools": run["tools"]}, fmt="openai_chat", name="ponyc-4588"
    )[0]
    expected = sweep(recorded, grid, pricing=pricing_for("gpt-4o"), workers=1).to_dict()
    assert finished["results"] == expected
    # Which worker took what is noted; both usually take some, but nothing makes them.
    assert {p["worker"] for p in parts} and all(p["worker"] for p in parts)
