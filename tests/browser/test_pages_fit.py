"""Every page fits its window in a real browser, at 1,280 × 800 and at a phone's
390 × 844: no page scrolls sideways (a wide table scrolls in its own box, its first
column kept in view)."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.models import Workspace
from tests.browser.lab_support import (
    DESKTOP,
    PHONE,
    finished_sweep,
    overflow,
    two_conversations,
)
from tests.conftest import needs_recordings

pytestmark = needs_recordings


def _pages(workspace: Workspace) -> list[str]:
    conversations = two_conversations(workspace)
    simulation = finished_sweep(workspace, conversations)
    first = conversations[0]
    return [
        "/",
        "/conversations/",
        f"/conversations/{first.client_id}/",
        "/imports/",
        "/events/",
        "/files/",
        "/configs/",
        "/configs/new/",
        "/prices/",
        "/sweep/",
        "/simulations/",
        f"/simulations/{simulation.pk}/",
        f"/simulations/{simulation.pk}/points/1/",
        # Four configs: the widest totals Compare draws.
        f"/compare/?conversation={first.pk}&config=none&config=defaults&config=defaults"
        "&config=none&baseline=first",
        f"/compare/?conversation={first.pk}&config=none&config=defaults&call=3",
        f"/tune/?conversation={first.pk}&start=defaults",
        f"/tune/?conversation={first.pk}&start=none",
    ]


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["1280x800", "phone"])
def test_no_page_scrolls_sideways(signed_in: Any, shoot: Any, size: dict[str, int]) -> None:
    page = signed_in
    page.set_viewport_size(size)
    wide: dict[str, tuple[int, int]] = {}
    for path in _pages(Workspace.objects.get(slug="demo")):
        page.goto(f"{page.base}{path}")
        page.wait_for_load_state("load")
        if page.locator("canvas[data-chart]").count():
            page.wait_for_selector("canvas[data-rendered=true]")
        scroll, inner = overflow(page)
        if scroll > inner:
            wide[path] = (scroll, inner)
        if "/compare/" in path or "/tune/" in path or "/simulations/" in path:
            shoot(page, f"fit-{size['width']}-{path.strip('/').split('?')[0].replace('/', '-')}")
    assert wide == {}


def test_wide_tables_scroll_in_their_box_with_the_first_column_kept(
    signed_in: Any, shoot: Any
) -> None:
    page = signed_in
    page.set_viewport_size(DESKTOP)
    first = two_conversations(Workspace.objects.get(slug="demo"))[0]
    page.goto(
        f"{page.base}/compare/?conversation={first.pk}&config=none&config=defaults"
        "&config=defaults&config=none&baseline=first"
    )
    page.wait_for_selector("#compare-results canvas[data-rendered=true]")
    box = page.locator("#compare-results .wide-table").first
    assert box.evaluate("el => el.scrollWidth > el.clientWidth")
    name = box.locator("tbody th[scope=row]").first
    left = name.evaluate("el => el.getBoundingClientRect().left")
    box.evaluate("el => { el.scrollLeft = el.scrollWidth }")
    assert name.evaluate("el => el.getBoundingClientRect().left") == left
    assert name.is_visible()
    shoot(page, "compare-four-configs-1280")
