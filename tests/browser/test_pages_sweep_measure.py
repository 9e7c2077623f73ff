"""One measure on a sweep's page in a real browser: the chart, its blue front and the
front's table plot and list the same saving, named the same, and a point's page names
the conversations it costs more on."""

from __future__ import annotations

from typing import Any

from reduction_app.models import Workspace
from reduction_app.simulations.points import points_of
from reduction_app.simulations.selectors import simulation_results
from tests.browser.lab_support import finished_sweep, two_conversations
from tests.conftest import needs_recordings

pytestmark = needs_recordings

MEASURE = "cost saved with recovery"


def test_chart_and_front_table_show_one_measure(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    simulation = finished_sweep(workspace, two_conversations(workspace))
    page.goto(f"{page.base}/simulations/{simulation.pk}/")
    page.wait_for_selector("svg[data-chart=front] a.point")

    assert page.locator("h2#front-head").inner_text() == (
        f"Pareto front: {MEASURE} against re-fetches + misses"
    )
    assert page.locator("table.front thead th[data-metric=saving]").inner_text() == MEASURE
    assert page.locator("table.all thead th[data-metric=saving]").inner_text() == MEASURE
    assert MEASURE in page.locator("figure.front-chart figcaption").inner_text()
    y_label = page.locator("svg[data-chart=front] > text").last.text_content()
    assert y_label == MEASURE

    # The blue circles are the front's rows, each at the saving the table gives it.
    blue = page.eval_on_selector_all(
        "svg[data-chart=front] a.point.pareto", "els => els.map(e => e.dataset.point)"
    )
    listed = page.eval_on_selector_all(
        "table.front tbody tr", "els => els.map(e => e.dataset.point)"
    )
    assert blue and sorted(blue) == sorted(listed)
    for number in listed:
        row = page.locator(f"table.front tbody tr[data-point='{number}']")
        saving = row.locator("td[data-metric=saving]").inner_text()
        title = page.locator(f"svg[data-chart=front] a.point[data-point='{number}'] title")
        assert f"{MEASURE}: {saving}" in (title.text_content() or "").splitlines()
    shoot(page, "sweep-one-measure")


def test_point_page_names_the_conversations_it_costs_more_on(signed_in: Any) -> None:
    page = signed_in
    workspace = Workspace.objects.get(slug="demo")
    conversations = two_conversations(workspace)
    simulation = finished_sweep(workspace, conversations)
    points = points_of(simulation_results(simulation), simulation.grid)
    worse = next(p for p in points if p.runs_worse)
    page.goto(f"{page.base}/simulations/{simulation.pk}/points/{worse.number}/")
    links = page.locator("#worse-on a")
    assert links.count() == worse.runs_worse
    by_id = {c.client_id: c for c in conversations}
    assert links.all_inner_texts() == [str(by_id[name]) for name in worse.worse_runs]
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    assert hrefs == [f"/conversations/{name}/" for name in worse.worse_runs]
