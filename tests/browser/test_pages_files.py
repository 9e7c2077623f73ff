"""The files pages in a real browser: a large file paged and searched in place, and a
file holding a script shown as text."""

from __future__ import annotations

from typing import Any

from reduction_app.models import Workspace
from tests.app.dashboard_data import event_row, stored_file
from tests.browser.conftest import PASSWORD

LINES = 50_000


def _demo() -> Workspace:
    return Workspace.objects.get(slug="demo")


def test_open_a_large_file_and_page_through_it(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    ws = _demo()
    content = "".join(
        f"line {i + 1}: {'needle' if (i + 1) % 10_000 == 0 else 'hay'}\n" for i in range(LINES)
    )
    big = stored_file(ws, "/tmp/trunc/call_big", content, tool_name="grep", call_id="call_big")
    event_row(ws, offload_path=big.path, tokens_saved=150_000)
    stored_file(ws, "/tmp/clear/call_2", "small\n", tool_name="read_file", phase="clear")

    page.goto(f"{page.base}/files/")
    assert page.locator("#file-table tbody tr").count() == 2
    shoot(page, "files")
    page.click("#file-table a:has-text('/tmp/trunc/call_big')")
    page.wait_for_url("**/files/view/**")
    assert page.locator("#line-range").inner_text() == "Lines 1–500 of 50,000 · page 1 of 100"
    assert page.locator("#file-lines tbody tr").count() == 500
    shoot(page, "file")

    page.evaluate("window.notReloaded = true")
    page.locator("#file-lines a[rel=next]").first.click()
    page.wait_for_url("**page=2**")
    page.wait_for_selector("#L501")
    assert page.locator("#line-range").inner_text() == "Lines 501–1,000 of 50,000 · page 2 of 100"
    assert page.locator("#file-lines tbody tr").count() == 500
    assert page.locator("#L1").count() == 0
    assert page.evaluate("window.notReloaded") is True

    page.fill("#id_q", "needle")
    page.click("button:has-text('Search')")
    page.wait_for_selector("#L10000.hit")
    assert page.locator(".hits").inner_text().startswith("5 lines match “needle”")
    page.click(".hits >> text=30000")
    page.wait_for_selector("#L30000.hit")
    assert page.locator("#line-range").inner_text().startswith("Lines 29,501–30,000")


def test_file_with_a_script_is_shown_as_text(signed_in: Any) -> None:
    page = signed_in
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    evil = "<script>alert('xss')</script><img src=x onerror=alert('img')>"
    stored_file(_demo(), "/tmp/trunc/evil", f"{evil}\nsecond line\n")
    page.goto(f"{page.base}/files/view/?path=/tmp/trunc/evil")
    assert page.locator("#L1 td").nth(1).inner_text() == evil
    assert page.locator("#file-lines img").count() == 0
    page.fill("#id_q", "<script>")
    page.click("button:has-text('Search')")
    page.wait_for_selector("#L1.hit")
    assert "“<script>”" in page.locator(".hits").inner_text()
    assert dialogs == []


def _search_lands_on_the_first_hit(page: Any) -> None:
    page.fill("#id_q", "tool_result")
    page.press("#id_q", "Enter")
    page.wait_for_url("**q=tool_result**")
    page.wait_for_selector("#L250.hit mark")
    page.wait_for_function("document.querySelector('#L250').getBoundingClientRect().top < 200")
    top = page.evaluate("document.querySelector('#L250').getBoundingClientRect().top")
    assert 0 <= top < 200  # the first hit at the top of the window, not the file's start
    assert page.evaluate("window.scrollY") > 0


def test_searching_a_file_lands_on_the_first_hit(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    content = "".join(
        f"[tool_result_cleared call_{i}]\n" if i >= 250 else f"hay {i}\n" for i in range(1, 301)
    )
    stored_file(_demo(), "/tmp/trunc/call_search", content)
    page.goto(f"{page.base}/files/view/?path=/tmp/trunc/call_search")
    _search_lands_on_the_first_hit(page)
    assert page.locator("#L250 mark").all_inner_texts() == ["tool_result"]
    shoot(page, "file-search")


def test_searching_a_file_lands_on_the_first_hit_without_javascript(
    browser: Any, live_server: Any, demo_user: Any
) -> None:
    content = "".join(f"line_{i} tool_result\n" if i >= 250 else f"hay {i}\n" for i in range(300))
    stored_file(_demo(), "/tmp/trunc/call_search", content)
    context = browser.new_context(
        viewport={"width": 1400, "height": 900}, java_script_enabled=False
    )
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/files/view/?path=/tmp/trunc/call_search")
    page.fill("#id_q", "tool_result")
    page.click("button:has-text('Search')")
    page.wait_for_url("**q=tool_result#hit-1")
    top = page.evaluate("document.querySelector('#L250').getBoundingClientRect().top")
    assert 0 <= top < 200
    context.close()


def test_highlighted_underscores_are_not_covered(signed_in: Any) -> None:
    """The highlight of the next line stops above this line's underscores (which hang
    below the font's descent in DejaVu Sans Mono): a line-height of ``normal`` made the
    highlights of consecutive lines touch and the lower one paint over them."""
    page = signed_in
    content = "".join(f"[tool_result_cleared call_{i}]\n" for i in range(3))
    stored_file(_demo(), "/tmp/trunc/call_marks", content)
    page.goto(f"{page.base}/files/view/?path=/tmp/trunc/call_marks&q=tool_result_cleared")
    first, second = (page.locator(f"#L{n} mark").bounding_box() for n in (1, 2))
    assert first is not None and second is not None
    assert second["y"] - (first["y"] + first["height"]) >= 2  # px of the first line's own


LONG_PATH = "/tmp/trunc/call_" + "reduction-lab_demo-orm-long-session_" * 3 + "00065"


def test_file_paths_stay_on_one_line_and_show_their_underscores(signed_in: Any) -> None:
    page = signed_in
    stored_file(_demo(), LONG_PATH, "output\n")
    page.goto(f"{page.base}/files/")
    code = "#file-table tbody td.token code"
    lines, height, line_height = page.evaluate(
        """s => { const e = document.querySelector(s);
                  return [e.getClientRects().length, e.getBoundingClientRect().height,
                          parseFloat(getComputedStyle(e).lineHeight)] }""",
        code,
    )
    assert (lines, height <= line_height + 1) == (1, True)
    assert page.locator("#file-table tbody td.token").get_attribute("title") == LONG_PATH
    # The link's underline runs below the underscores instead of through them.
    offset = page.evaluate(
        f"getComputedStyle(document.querySelector('{code}')).textUnderlineOffset"
    )
    assert offset != "auto"
    assert float(offset.removesuffix("px")) >= 3


def test_an_empty_file_says_its_output_was_empty(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    ws = _demo()
    stored_file(ws, "/tmp/clear/call_empty", "", phase="clear", call_id="call_empty")
    event_row(
        ws,
        phase="clear",
        call_id="call_empty",
        offload_path="/tmp/clear/call_empty",
        tokens_before=1,
        tokens_after=30,
        tokens_saved=-29,
        chars_after=115,
    )
    stored_file(ws, "/tmp/trunc/call_full", "output\n")
    page.goto(f"{page.base}/files/")
    rows = page.locator("#file-table tbody tr")
    assert [rows.nth(i).locator(".badge.empty-output").count() for i in range(2)] == [0, 1]
    assert rows.nth(1).locator(".badge.empty-output").inner_text() == "empty output"
    assert rows.nth(1).locator("td.token").get_attribute("title") == "/tmp/clear/call_empty"
    page.click("#file-table a:has-text('/tmp/clear/call_empty')")
    page.wait_for_url("**/files/view/**")
    assert page.locator("p.empty-output").inner_text() == (
        "This file is empty because the tool's output was empty: the clear phase offloads "
        "every result it clears, empty ones too."
    )
    assert page.locator(".added-tokens").inner_text() == (
        "Added tokens: the placeholder is longer than the result it replaced, which was empty."
    )
    shoot(page, "file-empty")


def test_a_truncation_that_added_tokens_says_why_on_its_file(signed_in: Any) -> None:
    page = signed_in
    ws = _demo()
    stored_file(ws, "/tmp/trunc/call_1", "x" * 4_051)
    event_row(
        ws,
        offload_path="/tmp/trunc/call_1",
        tokens_before=1_012,
        tokens_after=1_047,
        tokens_saved=-35,
    )
    page.goto(f"{page.base}/files/view/?path=/tmp/trunc/call_1")
    assert page.locator(".added-tokens").inner_text() == (
        "Added tokens: the truncation notice (previews, path and all) is longer than the output "
        "it replaced. trunc_only_when_shorter keeps such outputs whole."
    )
    assert page.locator("p.empty-output").count() == 0
