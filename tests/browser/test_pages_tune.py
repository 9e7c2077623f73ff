"""Tune in a real browser: moving a slider re-runs the replay and the totals change in
place, without a page load; the switches' layout and notes, the threshold's note, and
an address that names each parameter once."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlsplit

from reduction_app import engine
from reduction_app.models import Workspace
from tests.app.pages_support import record_conversation

KNOBS = [spec.name for spec in engine.config_knobs()]
SWITCHES = [spec.name for spec in engine.config_switches()]
# The third row: no reduction (the reference), the start, then the tuned config.
TUNED_BILLED = "table.totals tbody tr:nth-child(3) [data-metric=input_tokens_billed] .value"


def test_slider_changes_the_totals_in_place(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(f"{page.base}/tune/?conversation={conversation.pk}&start=defaults")
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert page.inner_text(TUNED_BILLED) == "516,549 tok"
    page.evaluate("window.notReloaded = true")
    page.locator("input[type=range][name=max_tokens_for_clear]").evaluate(
        "el => { el.value = 5000; el.dispatchEvent(new Event('input', {bubbles: true})) }"
    )
    # A function, not an expression: Playwright evals an expression inside the page, which
    # the Content-Security-Policy (no 'unsafe-eval') refuses.
    page.wait_for_function(
        f"() => document.querySelector({TUNED_BILLED!r}).textContent === '156,062 tok'"
    )
    assert page.evaluate("window.notReloaded") is True
    assert page.input_value("input[type=number][name=max_tokens_for_clear]") == "5000"
    assert "max_tokens_for_clear=5000" in page.url
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    shoot(page, "tune")
    page.fill("form.save-as input[name=name]", "tuned in the browser")
    page.click("form.save-as button[type=submit]")
    page.wait_for_selector("p.saved")
    assert page.inner_text("p.saved") == "Saved as tuned in the browser v1."


def test_strategy_switch_reruns_and_shows_what_it_removed(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(
        f"{page.base}/tune/?conversation={conversation.pk}&start=defaults"
        "&max_tokens_for_clear=20000"
    )
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert page.locator("table.strategies").count() == 0
    page.evaluate("window.notReloaded = true")
    page.check("#switch-clear_superseded input[type=checkbox]")
    page.wait_for_selector("table.strategies")
    assert page.evaluate("window.notReloaded") is True
    assert "superseded" in page.inner_text("table.strategies thead")
    assert "clear_superseded=on" in page.url
    shoot(page, "tune-strategy")


def _tune(page: Any, query: str = "") -> None:
    conversation = record_conversation(Workspace.objects.get(slug="demo"))
    page.goto(f"{page.base}/tune/?conversation={conversation.pk}&start=defaults{query}")
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")


def _move(page: Any, knob: str, value: int) -> None:
    page.locator(f"input[type=range][name={knob}]").evaluate(
        f"el => {{ el.value = {value}; el.dispatchEvent(new Event('input', {{bubbles: true}})) }}"
    )


def test_switches_are_rows_under_the_sliders(signed_in: Any, shoot: Any) -> None:
    """The slider cards stay short, and each switch is one row below them: its checkbox
    beside its name, its description on the same row."""
    page = signed_in
    _tune(page)
    shoot(page, "tune-switches")
    cards = [page.locator(f"#knob-{name}").bounding_box() for name in KNOBS]
    assert max(card["height"] for card in cards) < 260
    sliders_end = max(card["y"] + card["height"] for card in cards)
    rows = page.locator("#strategy-switches .switch")
    assert rows.count() == len(SWITCHES)
    previous_row_end = sliders_end
    for name in SWITCHES:
        box = page.locator(f"#switch-{name} input[type=checkbox]").bounding_box()
        label = page.locator(f"#switch-{name} label").bounding_box()
        description = page.locator(f"#switch-{name} .help").bounding_box()
        assert label is not None and page.inner_text(f"#switch-{name} label") == name
        middle = box["y"] + box["height"] / 2
        assert label["y"] <= middle <= label["y"] + label["height"]
        assert description["y"] <= middle <= description["y"] + description["height"]
        assert box["x"] < label["x"] < description["x"]
        assert box["y"] >= previous_row_end
        previous_row_end = max(box["y"] + box["height"], description["y"] + description["height"])


def test_a_switch_that_changes_nothing_says_so(signed_in: Any, shoot: Any) -> None:
    """At the default threshold nothing is cleared, so no clear strategy changes what is
    sent; at 20,000 tokens clear_superseded clears two results (the totals test above)
    while clear_cache_aware still changes nothing."""
    page = signed_in
    _tune(page)
    for name in SWITCHES:
        assert page.inner_text(f"#effect-{name}") == "no effect on this conversation"
    _move(page, "max_tokens_for_clear", 20000)
    page.wait_for_function(
        "() => document.querySelector('#effect-clear_superseded').textContent === ''"
    )
    assert page.inner_text("#effect-clear_cache_aware") == "no effect on this conversation"
    shoot(page, "tune-no-effect")


def test_the_threshold_is_explained_as_a_trigger(signed_in: Any) -> None:
    page = signed_in
    _tune(page)
    note = page.locator("#knob-max_tokens_for_clear #threshold-note")
    assert note.is_visible()
    assert note.inner_text() == (
        "A trigger, not a cap: the clear phase starts when the context passes this many "
        "tokens. The context can stay above it when little is clearable, as only old tool "
        "results, outside the latest rounds that clear_retention_suffix_limit keeps, are "
        "cleared."
    )


def test_the_address_names_each_parameter_once(signed_in: Any) -> None:
    page = signed_in
    _tune(page)
    _move(page, "max_tokens_for_clear", 20000)
    page.wait_for_function("() => location.search.includes('max_tokens_for_clear=20000')")
    _move(page, "max_tokens_for_clear", 12000)
    page.wait_for_function("() => location.search.includes('max_tokens_for_clear=12000')")
    page.check("#switch-clear_superseded input[type=checkbox]")
    page.wait_for_function("() => location.search.includes('clear_superseded=on')")
    pairs = parse_qsl(urlsplit(page.url).query, keep_blank_values=True)
    keys = [key for key, _ in pairs]
    assert sorted(keys) == sorted({"conversation", "start", *KNOBS, *SWITCHES, "pricing"})
    query = dict(pairs)
    assert (query["max_tokens_for_clear"], query["clear_superseded"]) == ("12000", "on")
    assert query["clear_cache_aware"] == "off"
    page.reload()
    page.wait_for_selector("#tune-results canvas[data-rendered=true]")
    assert page.is_checked("#switch-clear_superseded input[type=checkbox]")
    assert page.input_value("input[type=number][name=max_tokens_for_clear]") == "12000"


def test_no_page_asks_for_anything_missing(signed_in: Any) -> None:
    """The icon each page links, and /favicon.ico, which browsers ask for anyway."""
    page = signed_in
    answers: list[tuple[int, str]] = []
    page.on("response", lambda response: answers.append((response.status, response.url)))
    _tune(page)
    page.goto(f"{page.base}/")
    page.wait_for_load_state("networkidle")
    icon = page.locator("link[rel=icon]").get_attribute("href")
    assert icon is not None and icon.endswith(".svg")
    assert page.request.get(f"{page.base}{icon}").status == 200
    favicon = page.request.get(f"{page.base}/favicon.ico")
    assert (favicon.status, favicon.headers["content-type"]) == (200, "image/svg+xml")
    assert favicon.url.endswith(icon)
    assert answers and [answer for answer in answers if answer[0] >= 400] == []
