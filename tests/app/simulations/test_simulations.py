"""Simulations from the app: inline replays, background sweeps through the real task
backend and worker, errors, isolation, and ``manage.py replay``."""

from __future__ import annotations

import json
from http import HTTPStatus
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from reduction_app.conversations.selectors import conversation_transcript
from reduction_app.models import Simulation
from tests.app.pages_support import CUT_LISTING, HIDDEN_NAME, cut_listing
from tests.app.support import ApiClient, documented, error
from tests.conftest import CONVERSATIONS, skip_without_recordings

pytestmark = pytest.mark.django_db


def _openhands_run() -> dict[str, object]:
    """The first OpenHands recording, converted to OpenAI chat by the simulator's importer."""
    from simulator.importers import openhands_to_openai

    skip_without_recordings()
    line = (CONVERSATIONS / "openhands-multi-swe-bench-llama4.jsonl").read_text().splitlines()[0]
    messages, tools = openhands_to_openai(json.loads(line))
    return {"messages": messages, "tools": tools}


@pytest.fixture
def recorded(api: ApiClient) -> str:
    run = _openhands_run()
    response = api.post(
        "/conversations",
        {"conversation_id": "ponyc-4595", "messages": run["messages"], "tools": run["tools"]},
    )
    assert response.status_code == HTTPStatus.CREATED, response.json()
    return "ponyc-4595"


def _drain_worker() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())


def test_simulation_small_replay_answers_inline(api: ApiClient, recorded: str) -> None:
    response = api.post(
        "/simulations",
        {
            "conversation_id": recorded,
            "configs": [
                {"name": "off"},
                {"name": "tight", "config": {"max_tokens_for_clear": 8000}},
            ],
            "baseline": "none",
        },
    )
    assert response.status_code == HTTPStatus.CREATED, response.json()
    body = response.json()
    assert (body["kind"], body["status"], body["progress"]) == (
        "replay",
        "done",
        {"done": 2, "total": 2},
    )
    off, tight = body["results"]["results"]
    assert off["name"] == "off" and tight["name"] == "tight"
    assert off["totals"]["model_calls"] == tight["totals"]["model_calls"] == 23
    assert off["totals"]["clears"] == 0
    assert tight["totals"]["input_tokens_billed"] < off["totals"]["input_tokens_billed"]
    assert tight["deltas"]["input_tokens_billed"] == (
        tight["totals"]["input_tokens_billed"] - off["totals"]["input_tokens_billed"]
    )
    assert body["duration_seconds"] >= 0
    again = api.get(f"/simulations/{body['id']}").json()
    assert again["results"] == body["results"]
    assert again["parts"] == []  # a replay runs as one task


@pytest.mark.django_db(transaction=True)
def test_simulation_sweep_runs_in_the_background_worker(api: ApiClient, recorded: str) -> None:
    grid = {"max_tokens_for_clear": [4000, 8000, 16000], "clear_retention_suffix_limit": [1, 2]}
    response = api.post("/simulations", {"conversation_id": recorded, "grid": grid})
    assert response.status_code == HTTPStatus.ACCEPTED, response.json()
    queued = response.json()
    assert (queued["status"], queued["progress"], queued["results"]) == (
        "queued",
        {"done": 0, "total": 6},
        None,
    )
    _drain_worker()
    done = api.get(f"/simulations/{queued['id']}").json()
    assert (done["status"], done["progress"], done["error"]) == (
        "done",
        {"done": 6, "total": 6},
        "",
    )
    assert len(done["results"]["results"]) == 6
    front = done["results"]["pareto_front"]
    assert front and all(done["results"]["results"][i]["pareto"] for i in front)


@pytest.mark.django_db(transaction=True)
def test_simulation_sweep_progress_in_the_api_while_workers_run_it(
    api: ApiClient, recorded: str
) -> None:
    """A sweep is one task per combination: the API counts the combinations done."""
    from reduction_app.models import SimulationPart
    from reduction_app.simulations.sweeps import sweep_part_run

    grid = {"max_tokens_for_clear": [4000, 8000, 16000], "clear_retention_suffix_limit": [1, 2]}
    queued = api.post("/simulations", {"conversation_id": recorded, "grid": grid}).json()
    for part in SimulationPart.objects.filter(simulation_id=queued["id"], position__lt=2):
        sweep_part_run(part_id=part.pk)
    running = api.get(f"/simulations/{queued['id']}").json()
    assert (running["status"], running["progress"], running["results"]) == (
        "running",
        {"done": 2, "total": 6},
        None,
    )


def test_simulation_detail_lists_a_sweeps_parts_and_takes_back_a_lost_one(
    api: ApiClient, recorded: str
) -> None:
    """Asking for a sweep takes back its parts whose worker stopped answering; the
    detail lists every part with its runs and the workers lost, the list none."""
    from datetime import timedelta

    from django.utils import timezone

    from reduction_app.models import SimulationPart
    from reduction_app.simulations.sweeps import _claim

    grid = {"max_tokens_for_clear": [4000, 8000]}
    queued = api.post("/simulations", {"conversation_id": recorded, "grid": grid}).json()
    first = SimulationPart.objects.get(simulation_id=queued["id"], position=0)
    claimed = _claim(first.pk)
    assert claimed is not None and claimed.started_at is not None
    SimulationPart.objects.filter(pk=first.pk).update(
        worker="ghost:7", heartbeat_at=timezone.now() - timedelta(seconds=61)
    )
    body = api.get(f"/simulations/{queued['id']}").json()
    assert body["status"] == "running"
    started = [part.pop("started_at") for part in body["parts"]]
    assert started[1:] == [None, None]
    assert started[0] == claimed.started_at.isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )
    assert body["parts"] == [
        {
            "position": 0,
            "name": "max_tokens_for_clear=4000",
            "status": "queued",
            "runs": 1,
            "worker": "",
            "requeued_after": ["ghost:7"],
            "error": "",
            "heartbeat_at": None,
            "finished_at": None,
        },
        *(
            {
                "position": position,
                "name": name,
                "status": "queued",
                "runs": 0,
                "worker": "",
                "requeued_after": [],
                "error": "",
                "heartbeat_at": None,
                "finished_at": None,
            }
            for position, name in ((1, "max_tokens_for_clear=8000"), (2, "no reduction"))
        ),
    ]
    (listed,) = api.get("/simulations").json()["results"]
    assert "parts" not in listed


def test_simulation_errors_name_the_field(api: ApiClient, recorded: str) -> None:
    cases = [
        ({"conversation_id": "nope", "configs": [{}]}, HTTPStatus.NOT_FOUND, "conversation_id"),
        (
            {"conversation_id": recorded, "configs": [{"config": {"max_tokens_for_clear": -1}}]},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "configs[0].config.max_tokens_for_clear",
        ),
        (
            {"conversation_id": recorded, "configs": [{"config_id": 999}]},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "configs[0].config_id",
        ),
        (
            {"conversation_id": recorded, "grid": {"nope": [1]}},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "grid",
        ),
        ({"conversation_id": recorded, "configs": []}, HTTPStatus.UNPROCESSABLE_ENTITY, "configs"),
        (
            {"conversation_id": recorded, "configs": [{}], "pricing": "free"},
            HTTPStatus.UNPROCESSABLE_ENTITY,
            "pricing",
        ),
    ]
    for body, status, field in cases:
        response = api.post("/simulations", body)
        assert response.status_code == status, (body, response.json())
        assert response.json()["field"] == field, response.json()
    assert Simulation.objects.count() == 0


def test_simulation_of_another_workspace_is_not_found(
    api: ApiClient, other_api: ApiClient, recorded: str
) -> None:
    made = api.post("/simulations", {"conversation_id": recorded, "configs": [{}]}).json()
    assert other_api.get(f"/simulations/{made['id']}").status_code == HTTPStatus.NOT_FOUND
    assert other_api.get("/simulations").json()["results"] == []
    assert [s["id"] for s in api.get("/simulations").json()["results"]] == [made["id"]]


def test_replay_command_stores_and_prints(api: ApiClient, recorded: str, tmp_path: Path) -> None:
    config = tmp_path / "tight.json"
    config.write_text(json.dumps({"max_tokens_for_clear": 8000}))
    out = StringIO()
    call_command("replay", recorded, "--workspace", "alpha", "--config", str(config), stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["config", "calls", "billed"]
    assert lines[1].split()[:2] == ["tight", "23"]
    simulation = Simulation.objects.get()
    assert lines[-1] == f"Stored as simulation {simulation.pk}."
    assert simulation.status == "done"


def test_replay_command_baseline_none_prints_the_baseline_row(
    api: ApiClient, recorded: str, tmp_path: Path
) -> None:
    config = tmp_path / "tight.json"
    config.write_text(json.dumps({"max_tokens_for_clear": 8000}))
    out = StringIO()
    call_command(
        "replay", recorded, "--workspace", "alpha", "--config", str(config),
        "--baseline", "none", stdout=out,
    )  # fmt: skip
    lines = out.getvalue().splitlines()
    assert [line.split()[:2] for line in lines[1:3]] == [["no", "reduction"], ["tight", "23"]]
    assert lines[0].split()[-2:] == ["refetch", "repeat"]


def test_replay_command_refuses_bad_input(api: ApiClient, recorded: str, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="conversation 'nope' not found"):
        call_command("replay", "nope", "--workspace", "alpha", stdout=StringIO())
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(CommandError, match=r"bad\.json: config is not JSON"):
        call_command(
            "replay", recorded, "--workspace", "alpha", "--config", str(bad), stdout=StringIO()
        )


def test_recorded_conversation_puts_reduced_results_back(api: ApiClient) -> None:
    """A client sends its context already reduced after the first clear; a replay starts
    from what the agent really lived, read back from the offload files."""
    from reduction_app.conversations.selectors import recorded_conversation
    from reduction_app.models import Conversation

    def call(call_id: str) -> dict[str, object]:
        fn = {"name": "grep", "arguments": "{}"}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": fn}],
        }

    originals = {"c1": "first " * 200, "c2": "second " * 200}
    messages = [{"role": "user", "content": "go"}]
    for call_id, text in originals.items():
        messages += [call(call_id), {"role": "tool", "tool_call_id": call_id, "content": text}]
    messages.append(call("c3"))
    body = {
        "conversation_id": "lived",
        "config": {"max_tokens_for_clear": 100},
        "messages": messages,
    }
    reduced = api.post("/clear", body).json()["messages"]
    assert reduced[2]["content"].startswith("<persisted-output>Tool result saved to: /tmp/clear/c1")
    api.post(
        "/clear",
        {**body, "messages": [*reduced, {"role": "tool", "tool_call_id": "c3", "content": "ok"}]},
    )
    stored = Conversation.objects.get(client_id="lived")
    assert conversation_transcript(conversation=stored)[2]["content"].startswith(
        "<persisted-output>"
    ), "stored as received"
    replayed = recorded_conversation(stored)
    tool_texts = [m.content for m in replayed.messages if m.role == "tool"]
    assert tool_texts == [originals["c1"], originals["c2"], "ok"]


STORED = {
    "openai_chat": (None, [{"role": "user", "content": "List the files."}]),
    "anthropic": ("Be brief.", [{"role": "user", "content": "List the files."}]),
    "openai_responses": (None, [{"role": "user", "content": "List the files."}]),
}


@pytest.mark.parametrize("fmt", list(STORED))
def test_recorded_conversation_reads_each_format(fmt: str) -> None:
    """The stored columns reach the format's parser under its own body keys (Responses'
    ``input``, Anthropic's ``system``)."""
    from reduction_app.conversations.selectors import recorded_conversation
    from reduction_app.conversations.services import conversation_upsert
    from reduction_app.engine import ToolInfo, formats
    from reduction_app.workspaces.services import workspace_get_or_create

    system, transcript = STORED[fmt]
    tools = formats.dump_tools(fmt, [ToolInfo(name="ls", parameters={"type": "object"})])
    stored = conversation_upsert(
        workspace=workspace_get_or_create(name="Alpha Team"),
        client_id=f"c-{fmt}",
        message_format=fmt,
        system=system,
        transcript=transcript,
        tools=tools,
    )
    recorded = recorded_conversation(stored, restore=False)
    assert (recorded.name, recorded.format) == (f"c-{fmt}", fmt)
    assert list(recorded.messages) == formats.parse(fmt, transcript, system=system)
    assert list(recorded.tools) == [ToolInfo(name="ls", parameters={"type": "object"})]


def test_simulation_id_that_is_no_integer_is_a_documented_422(api: ApiClient) -> None:
    """Found by schemathesis: GET /simulations/{id} answered an undocumented 422."""
    response = api.get("/simulations/null,null")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "simulation_id: Input should be a valid integer, unable to parse string as an integer",
        "simulation_id",
    )
    assert HTTPStatus.UNPROCESSABLE_ENTITY in documented(api, "get", "/simulations/{simulation_id}")


def test_simulation_body_that_is_no_json_is_a_documented_400(api: ApiClient) -> None:
    """Found by schemathesis: POST /simulations answered an undocumented 400."""
    response = api.post_raw("/simulations", b"\x00")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json() == error("Cannot parse request body")
    assert {HTTPStatus.BAD_REQUEST, HTTPStatus.REQUEST_ENTITY_TOO_LARGE} <= documented(
        api, "post", "/simulations"
    )


def test_simulation_results_carry_misses_as_documented(api: ApiClient) -> None:
    """The cut listing (``pages_support.cut_listing``) misses once under ``CUT_LISTING``,
    at call 1 (0-based); the OpenAPI document describes the three fields."""
    messages, tools = cut_listing()
    api.post("/conversations", {"conversation_id": "cut", "messages": messages, "tools": tools})
    response = api.post(
        "/simulations",
        {
            "conversation_id": "cut",
            "configs": [{"name": "cut", "config": CUT_LISTING}, {"name": "off"}],
        },
    )
    assert response.status_code == HTTPStatus.CREATED, response.json()
    cut, off = response.json()["results"]["results"]
    assert (cut["totals"]["misses"], off["totals"]["misses"]) == (1, 0)
    assert cut["totals"]["cost_with_recovery_usd"] > cut["totals"]["cost_usd"]
    assert off["totals"]["cost_with_recovery_usd"] == off["totals"]["cost_usd"]
    assert cut["miss_examples"] == [{"call": 1, "tool": "grep_repo", "string": HIDDEN_NAME}]
    assert off["miss_examples"] == []
    assert cut["deltas"]["misses"] == 0  # against itself, the first config
    schemas = api.client.get("/api/v1/openapi.json").json()["components"]["schemas"]
    totals = schemas["TotalsOut"]["properties"]
    assert {"misses", "cost_with_recovery_usd", "refetches", "cost_usd"} <= set(totals)
    assert "typed later" in totals["misses"]["description"]
    examples = schemas["ReplayResultOut"]["properties"]["miss_examples"]
    assert examples["anyOf"][0]["items"] == {"$ref": "#/components/schemas/MissExampleOut"}
    assert schemas["MissExampleOut"]["required"] == ["call", "tool", "string"]


def test_simulation_stored_before_misses_answers_without_them(api: ApiClient) -> None:
    """Fields a stored result lacks stay absent (not null); every stored key is kept."""
    messages, tools = cut_listing()
    api.post("/conversations", {"conversation_id": "cut", "messages": messages, "tools": tools})
    body = api.post(
        "/simulations", {"conversation_id": "cut", "configs": [{"config": CUT_LISTING}]}
    ).json()
    simulation = Simulation.objects.get(pk=body["id"])
    assert simulation.results is not None
    (run,) = simulation.results["results"]
    del run["totals"]["misses"], run["totals"]["cost_with_recovery_usd"], run["miss_examples"]
    simulation.save(update_fields=["results"])
    again = api.get(f"/simulations/{body['id']}").json()
    assert again["results"] == simulation.results
    (run,) = again["results"]["results"]
    assert "misses" not in run["totals"] and "miss_examples" not in run
