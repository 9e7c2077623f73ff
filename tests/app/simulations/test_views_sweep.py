"""The Sweep page, a sweep's and a recommendation's results, and a point's page and
actions."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from django.test import Client

from reduction_app import engine
from reduction_app.configs.snippets import config_snippets
from reduction_app.conversations.services import conversation_create, conversation_upsert
from reduction_app.models import ConfigProfile, Conversation, Simulation
from reduction_app.simulations.points import group_points, knob_items, points_of
from reduction_app.simulations.selectors import simulation_results
from reduction_app.simulations.services import simulation_create, simulation_enqueue
from reduction_app.templatetags.reduction_tags import usd
from tests.app.pages_support import (
    cut_listing,
    cut_listing_conversation,
    elements,
    member_client,
    parsed,
    text,
)
from tests.app.simulations.sweep_support import drain_worker

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def setup() -> tuple[Client, list[Conversation]]:
    client, workspace = member_client()
    return client, [
        cut_listing_conversation(workspace, client_id="listing-a"),
        cut_listing_conversation(workspace, tool="find_files", client_id="listing-b"),
    ]


def _form(conversations: list[Conversation], **fields: Any) -> dict[str, Any]:
    return {"scope": "picked", "conversation": [str(c.pk) for c in conversations], **fields}


def test_sweep_page_offers_the_conversations_and_a_field_per_knob_and_switch(
    setup: tuple[Client, list[Conversation]],
) -> None:
    client, conversations = setup
    page = parsed(client.get("/sweep/"))
    boxes = elements(page, "input", type="checkbox", name="conversation")
    assert [dict(b.attributes)["value"] for b in boxes] == [str(c.pk) for c in conversations]
    for spec in engine.config_knobs():
        (field,) = elements(page, "input", type="text", name=spec.name)
        assert dict(field.attributes)["placeholder"] == f"default {spec.default}"
    for spec in engine.config_switches():
        radios = elements(page, "input", type="radio", name=spec.name)
        assert [dict(r.attributes)["value"] for r in radios] == ["off", "on", "both"]
    (nav,) = elements(page, "nav")
    assert "Sweep" in [text(a) for a in elements(nav, "a")]


def test_sweep_count_follows_the_fields(setup: tuple[Client, list[Conversation]]) -> None:
    client, conversations = setup
    fields = _form(conversations, max_tokens_for_clear="20k, 40_000", clear_superseded="both")
    response = client.post("/sweep/count/", fields, HTTP_HX_REQUEST="true")
    assert response.status_code == HTTPStatus.OK
    part = parsed(response)
    assert not elements(part, "nav")  # the count alone
    # 2 values × off and on, on 2 conversations.
    assert len(elements(part, "strong", data_combinations="4")) == 1
    assert len(elements(part, "span", data_conversations="2")) == 1
    assert len(elements(part, "span", data_replays="8")) == 1
    # Without JavaScript, the "Count" button gets the whole page, the fields kept.
    page = parsed(client.post("/sweep/count/", fields))
    (field,) = elements(page, "input", name="max_tokens_for_clear")
    assert dict(field.attributes)["value"] == "20k, 40_000"
    assert len(elements(page, "span", data_replays="8")) == 1


def test_sweep_page_takes_the_conversation_lists_filter(
    setup: tuple[Client, list[Conversation]],
) -> None:
    client, conversations = setup
    page = parsed(client.get("/sweep/?q=listing-b"))
    boxes = elements(page, "input", type="checkbox", name="conversation")
    assert [dict(b.attributes)["value"] for b in boxes] == [str(conversations[1].pk)]
    assert "checked" in dict(boxes[0].attributes)  # what the filter shows is what is swept
    scopes = elements(page, "input", name="scope")
    assert [dict(s.attributes)["value"] for s in scopes if "checked" in dict(s.attributes)] == [
        "filter"
    ]
    assert len(elements(page, "span", data_conversations="1")) == 1


@pytest.mark.parametrize(
    ("fields", "where", "error"),
    [
        ({"max_tokens_for_clear": "20k, 2o"}, "knob", "'2o' is not a whole number"),
        (
            {"max_length_for_trunc": "-1"},
            "knob",
            "-1: must be at least 0, got -1",
        ),
        (
            {},
            "grid",
            "Give values for at least one knob, or turn a switch on or to both.",
        ),
        (
            {
                "max_tokens_for_clear": ",".join(f"{n}k" for n in range(1, 27)),
                "max_length_for_trunc": ",".join(str(n * 100) for n in range(1, 21)),
            },
            "grid",
            "520 combinations: at most 500 can be swept at once",
        ),
    ],
)
def test_sweep_start_shows_what_is_wrong_on_the_form(
    setup: tuple[Client, list[Conversation]], fields: dict[str, str], where: str, error: str
) -> None:
    client, conversations = setup
    response = client.post("/sweep/start/", _form(conversations, **fields))
    assert response.status_code == HTTPStatus.BAD_REQUEST
    page = parsed(response)
    if where == "knob":
        (row,) = elements(page, "tr", class_="invalid")
        assert [text(p) for p in elements(row, "p", class_="error")] == [error]
    else:
        (shown,) = elements(page, "p", id="error-grid")
        assert text(shown) == error
    assert not Simulation.objects.exists()


def test_sweep_start_needs_a_conversation(setup: tuple[Client, list[Conversation]]) -> None:
    client, _ = setup
    response = client.post("/sweep/start/", {"scope": "picked", "max_length_for_trunc": "200"})
    assert response.status_code == HTTPStatus.BAD_REQUEST
    (shown,) = elements(parsed(response), "p", id="error-conversations")
    assert text(shown) == "Pick at least one conversation."


def _shows_snippets(node: Any, config: dict[str, Any], *, prefix: str) -> None:
    """The config's snippets to copy (tests/app/configs/test_snippets.py runs them)."""
    (details,) = elements(node, "details", class_="copy-as", id=f"{prefix}copy-as")
    snippets = config_snippets(config)
    for snippet in snippets:
        (code,) = elements(details, "code", id=f"{prefix}snippet-{snippet.key}")
        assert text(code) == " ".join(snippet.text.split())
    assert len(elements(details, "button", class_="copy")) == len(snippets)


def _swept(client: Client, conversations: list[Conversation]) -> Simulation:
    fields = _form(conversations, max_length_for_trunc="200, 2k", clear_superseded="both")
    response = client.post("/sweep/start/", fields)
    simulation = Simulation.objects.get()
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == f"/simulations/{simulation.pk}/"
    drain_worker()
    simulation.refresh_from_db()
    return simulation


def test_a_sweeps_page_charts_one_circle_per_distinct_point(
    setup: tuple[Client, list[Conversation]],
) -> None:
    client, conversations = setup
    simulation = _swept(client, conversations)
    assert simulation.kind == "sweep"
    assert simulation.grid == {
        "max_length_for_trunc": [200, 2000],
        "clear_superseded": [False, True],
    }
    page = parsed(client.get(f"/simulations/{simulation.pk}/"))
    groups = group_points(points_of(simulation_results(simulation), simulation.grid))
    (chart,) = elements(page, "svg", data_chart="front")
    links = elements(chart, "a", class_="point")
    assert [(dict(a.attributes)["href"], int(dict(a.attributes)["data-count"])) for a in links] == [
        (f"/simulations/{simulation.pk}/points/{g.first.number}/", g.count) for g in groups
    ]
    for link, group in zip(links, groups, strict=True):
        (title,) = elements(link, "title")
        for name, value in group.first.knobs:
            assert f"{name} = {value}" in text(title)
    # The grid as names and values; every row of every combination links to its point.
    knobs = elements(page, "dl", class_="knobs")[0]
    assert [text(d) for d in elements(knobs, "dd")] == ["= 200, 2000", "= off, on"]
    rows = elements(elements(page, "table", class_="all")[0], "tr", class_="linked")
    assert len(rows) == 4
    for number, row in enumerate(rows, start=1):
        hrefs = {dict(a.attributes)["href"] for a in elements(row, "a")}
        assert hrefs == {f"/simulations/{simulation.pk}/points/{number}/"}
    # No worker ids nor parts: it ran as one task.
    assert not elements(page, "details", class_="parts")


def test_a_points_page_opens_it_in_compare_and_saves_it(
    setup: tuple[Client, list[Conversation]],
) -> None:
    client, conversations = setup
    simulation = _swept(client, conversations)
    point = points_of(simulation_results(simulation), simulation.grid)[0]
    base = f"/simulations/{simulation.pk}/points/1/"
    page = parsed(client.get(base))
    (knobs,) = elements(page, "dl", class_="knobs")
    assert [text(dt) for dt in elements(knobs, "dt")] == [n for n, _ in point.knobs]
    assert point.knobs == [
        ("max_length_for_trunc", "200"),
        ("clear_superseded", "off"),
    ]
    (tune,) = elements(page, "form", id="point-tune")
    hidden = [
        (dict(i.attributes)["name"], dict(i.attributes)["value"])
        for i in elements(tune, "input", type="hidden")
    ]
    assert hidden == [
        ("start", "defaults"),
        ("max_length_for_trunc", "200"),
        ("clear_superseded", "off"),
        ("pricing", "gpt-4o"),  # the price the sweep ran at
    ]
    _shows_snippets(page, point.config, prefix="")

    # Compare replays the point as it is: nothing is saved.
    response = client.post(f"{base}compare/", {"conversation": str(conversations[1].pk)})
    query = [
        ("conversation", conversations[1].pk),
        ("config", "none"),
        ("config", f"point-{simulation.pk}-1"),
        ("baseline", "first"),
        ("pricing", "gpt-4o"),  # the price the sweep ran at, named
    ]
    assert response["Location"] == f"/compare/?{urlencode(query)}"
    assert not ConfigProfile.objects.exists()
    compared = client.get(response["Location"])
    assert compared.status_code == HTTPStatus.OK
    slots = [
        o
        for o in elements(parsed(compared), "option")
        if dict(o.attributes).get("value") == f"point-{simulation.pk}-1"
    ]
    # In every slot's picker, chosen in the second.
    assert len(slots) == 4 and "selected" in dict(slots[1].attributes)
    slot = slots[0]
    assert text(slot) == f"Sweep a grid #{simulation.pk} point 1"
    assert f"Sweep a grid #{simulation.pk} point 1" in text(elements(parsed(compared), "table")[0])
    # Another workspace's point, or none, is not found.
    assert client.get("/compare/", {**dict(query[:1]), "config": "point-999-1"}).status_code == (
        HTTPStatus.NOT_FOUND
    )

    response = client.post(f"{base}save/", {"name": "cut at 200"})
    saved = ConfigProfile.objects.get(name="cut at 200")
    assert response["Location"] == f"/configs/{saved.pk}/versions/"
    landed = client.get(response["Location"])
    (flash,) = elements(parsed(landed), "ul", class_="flash")
    assert text(flash).startswith("Saved as config “cut at 200”, version 1")
    # Said once: the next page does not repeat it.
    assert not elements(parsed(client.get(response["Location"])), "ul", class_="flash")
    # Once saved, Compare opens the stored config rather than the point.
    response = client.post(f"{base}compare/", {"conversation": str(conversations[0].pk)})
    assert ("config", str(saved.pk)) in parse_qsl(response["Location"].split("?", 1)[1])
    data = saved.versions.get().data
    assert (data["max_length_for_trunc"], data["clear_superseded"]) == (200, False)
    for name, error in (
        ("", "Give the new config a name."),
        ("cut at 200", "a config named 'cut at 200' already exists"),
    ):
        response = client.post(f"{base}save/", {"name": name})
        assert response.status_code == HTTPStatus.BAD_REQUEST
        (form,) = elements(parsed(response), "form", id="point-save")
        assert [text(p) for p in elements(form, "p", class_="error")] == [error]


def test_a_point_elsewhere_is_not_found(setup: tuple[Client, list[Conversation]]) -> None:
    client, conversations = setup
    simulation = _swept(client, conversations)
    assert client.get(f"/simulations/{simulation.pk}/points/5/").status_code == HTTPStatus.NOT_FOUND
    stranger, _ = member_client("bob", workspace="Elsewhere")
    assert (
        stranger.get(f"/simulations/{simulation.pk}/points/1/").status_code == HTTPStatus.NOT_FOUND
    )
    assert (
        stranger.post(f"/simulations/{simulation.pk}/points/1/save/", {"name": "x"}).status_code
        == HTTPStatus.NOT_FOUND
    )


def _bulky(workspace: Any, client_id: str) -> Conversation:
    """Three reads of 4,000 characters holding no name, each followed by two more calls:
    truncation saves without hiding anything the agent uses."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Read them."}]
    for n in range(3):
        call = {"name": "grep_repo", "arguments": json.dumps({"pattern": f"p{n}"})}
        messages += [
            {"role": "assistant", "content": None,
             "tool_calls": [{"id": f"c{n}", "type": "function", "function": call}]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "= " * 2000},
            {"role": "assistant", "content": "Next."},
            {"role": "user", "content": "Go on."},
        ]  # fmt: skip
    messages.append({"role": "assistant", "content": "Done."})
    return conversation_upsert(
        workspace=workspace,
        client_id=client_id,
        message_format="openai_chat",
        transcript=messages,
        tools=cut_listing()[1],
    )


def test_recommend_offers_its_config_to_save(setup: tuple[Client, list[Conversation]]) -> None:
    client, listings = setup
    workspace = listings[0].workspace
    conversations = [_bulky(workspace, "bulky-a"), _bulky(workspace, "bulky-b")]
    fields = _form(
        conversations,
        max_length_for_trunc="200, 2k",
        max_seconds="30",
        misses_per_100_calls="100",
        refetches_per_100_calls="2.5",
        max_run_loss="12.5",
    )
    response = client.post("/sweep/recommend/", fields)
    simulation = Simulation.objects.get()
    assert response["Location"] == f"/simulations/{simulation.pk}/"
    assert (simulation.kind, simulation.options["max_seconds"]) == ("recommend", 30)
    assert simulation.options["budget"] == {
        "misses_per_100_calls": 100.0,
        "refetches_per_100_calls": 2.5,
        "max_run_loss": 0.125,
    }
    drain_worker()
    simulation.refresh_from_db()
    assert simulation.status == "done"
    assert simulation.results is not None
    page = parsed(client.get(f"/simulations/{simulation.pk}/"))
    (section,) = elements(page, "section", id="recommendation")
    best = simulation.results["config"]
    assert best is not None
    (knobs,) = elements(section, "dl", class_="knobs")
    assert [text(dt) for dt in elements(knobs, "dt")] == [n for n, _ in knob_items(best, best)]
    # What it saves in dollars, and how much the search replayed (every round's replays).
    results = simulation.results
    (dollars,) = elements(section, "span", **{"data-metric": "saved_usd"})
    saved_usd = results["baseline_cost_usd"] - results["cost_with_recovery_usd"]
    assert text(dollars) == usd(saved_usd)
    (progress,) = elements(page, "p", class_="progress-note")
    tried = results["configs_tried"]
    assert tried >= 2
    assert simulation.progress_done == simulation.progress_total == tried * 2
    assert text(progress).startswith(
        f"Done: searched {tried} configs, each on 2 conversations ({tried * 2} replays)"
    )
    _shows_snippets(section, best, prefix="recommended-")
    (form,) = elements(section, "form", id="recommended-save")
    assert dict(form.attributes)["action"] == f"/simulations/{simulation.pk}/points/1/save/"
    assert simulation.results["budget"] == simulation.options["budget"]
    (budget,) = elements(section, "p", id="recommend-budget")
    assert text(budget) == (
        "The budget: at most 100 misses and 2.5 re-fetches per 100 model calls, no "
        "conversation costing more than 12.5% above no reduction, with recovery."
    )
    expected = simulation.results["expected"]
    assert expected["folds"] == 2
    (said,) = elements(section, "p", id="recommend-expected")
    assert f"expect it to save {100 * expected['saved_with_recovery']:.1f}% with" in text(said)
    client.post(f"/simulations/{simulation.pk}/points/1/save/", {"name": "recommended"})
    data = ConfigProfile.objects.get(name="recommended").versions.get().data
    assert all(data[k] == v for k, v in best.items())


def test_recommend_says_when_no_config_beats_no_reduction(
    setup: tuple[Client, list[Conversation]],
) -> None:
    """Results where nothing qualified: the page says so plainly, with no save form."""
    client, conversations = setup
    simulation = Simulation.objects.create(
        workspace=conversations[0].workspace,
        conversation=conversations[0],
        kind="recommend",
        status="done",
        options={"pricing": "gpt-4o", "corpus": True, "max_seconds": 30},
        results={
            "config": None,
            "budget": {"misses": 0, "refetches": 0},
            "front": [
                {
                    "config": {"max_length_for_trunc": 200},
                    "saved_with_recovery": -0.05,
                    "misses": 2,
                    "refetches": 0,
                    "runs_worse": 2,
                }
            ],
        },
    )
    simulation.conversations.set(conversations)
    page = parsed(client.get(f"/simulations/{simulation.pk}/"))
    (said,) = elements(page, "p", class_="none-recommended")
    assert text(said) == (
        "No config to recommend: none costs less than no reduction on every conversation "
        "once recovering what it hid is counted while missing at most 0 and re-fetching at "
        "most 0. The front of what was tried is below."
    )
    assert not elements(page, "form", id="recommended-save")
    (row,) = elements(elements(page, "table", class_="recommend-front")[0], "tr", class_="linked")
    assert text(elements(row, "th")[0]) == "max_length_for_trunc = 200"


def test_recommend_names_the_limit_that_binds(
    setup: tuple[Client, list[Conversation]],
) -> None:
    client, conversations = setup
    simulation = Simulation.objects.create(
        workspace=conversations[0].workspace,
        conversation=conversations[0],
        kind="recommend",
        status="done",
        options={"pricing": "gpt-4o", "corpus": True, "max_seconds": 30},
        results={
            "config": None,
            "budget": {
                "misses_per_100_calls": 1.0,
                "refetches_per_100_calls": 2.0,
                "max_run_loss": 0.25,
            },
            "binding": "misses_per_100_calls",
            "expected": None,
            "ceiling": None,
            "nearest": [],
            "front": [],
        },
    )
    page = parsed(client.get(f"/simulations/{simulation.pk}/"))
    (said,) = elements(page, "p", class_="none-recommended")
    assert text(said) == (
        "No config to recommend: none within the budget saves anything once recovering what "
        "it hid is counted; the limit that binds is misses per 100 calls."
    )
    (budget,) = elements(page, "p", id="recommend-budget")
    assert "at most 1 misses and 2 re-fetches per 100 model calls" in text(budget)


@pytest.mark.parametrize(
    ("field", "value"),
    [("misses_per_100_calls", "-1"), ("refetches_per_100_calls", "lots"), ("max_run_loss", "inf")],
)
def test_recommend_refuses_a_bad_budget(
    setup: tuple[Client, list[Conversation]], field: str, value: str
) -> None:
    client, conversations = setup
    response = client.post("/sweep/recommend/", _form(conversations, **{field: value}))
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert not Simulation.objects.exists()
    errors = [text(p) for p in elements(parsed(response), "p", class_="error")]
    assert errors == [f"{value!r} is not a number of at least 0"]


def test_simulation_list_links_whole_rows(setup: tuple[Client, list[Conversation]]) -> None:
    client, conversations = setup
    simulation = _swept(client, conversations)
    page = parsed(client.get("/simulations/"))
    (row,) = elements(page, "tr", class_="linked")
    cells = elements(row, "td")
    assert len(cells) == 6
    for cell in cells:
        (link,) = elements(cell, "a")
        assert dict(link.attributes)["href"] == f"/simulations/{simulation.pk}/"
    assert text(cells[2]) == "listing-a and 1 more"
    (main,) = elements(parsed(client.get(f"/simulations/{simulation.pk}/")), "main")
    assert "{" not in text(main)  # knobs as names and values, never a dict


def test_sweep_every_recording_starts_over_the_imported_ones_only(
    setup: tuple[Client, list[Conversation]],
) -> None:
    client, conversations = setup
    messages, tools = cut_listing()
    recording = conversation_create(
        workspace=conversations[0].workspace,
        client_id="imported-listing",
        message_format="openai_chat",
        transcript=messages,
        tools=tools,
        source="swe_agent",
    )
    assert recording is not None
    page = parsed(client.get("/sweep/?source=any"))
    boxes = elements(page, "input", type="checkbox", name="conversation")
    assert [dict(b.attributes)["value"] for b in boxes] == [str(recording.pk)]
    fields = {"scope": "recordings", "max_length_for_trunc": "200"}
    response = client.post("/sweep/start/", fields)
    assert response.status_code == HTTPStatus.FOUND
    simulation = Simulation.objects.get()
    assert list(simulation.conversations.all()) == [recording]


def test_a_sweep_from_the_rest_api_has_points_too(
    setup: tuple[Client, list[Conversation]],
) -> None:
    """A sweep of one conversation on the task workers, one part per combination: its
    rows link to its points, its worker ids are in a details section."""
    client, conversations = setup
    simulation = simulation_create(
        workspace=conversations[0].workspace,
        conversation=conversations[0],
        configs=[],
        grid={"max_length_for_trunc": [200, 2000]},
    )
    simulation_enqueue(simulation=simulation)
    drain_worker()
    page = parsed(client.get(f"/simulations/{simulation.pk}/"))
    (details,) = elements(page, "details", class_="parts")
    assert "Workers:" in text(details)
    (front,) = elements(page, "table", class_="front")
    (link,) = elements(elements(front, "th", scope="row")[0], "a")
    # With recovery counted, the cut at 200 misses what 2,000 keeps whole: 2,000 leads.
    assert text(link) == "max_length_for_trunc=2000"
    assert dict(link.attributes)["href"] == f"/simulations/{simulation.pk}/points/2/"
    point = parsed(client.get(f"/simulations/{simulation.pk}/points/1/"))
    (knobs,) = elements(point, "dl", class_="knobs")
    assert [text(d) for d in elements(knobs, "div")] == ["max_length_for_trunc = 200"]
