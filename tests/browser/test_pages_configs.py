"""Configs in a real browser: create one through the form, edit it, see the versions."""

from __future__ import annotations

from typing import Any


def test_create_edit_and_see_versions(signed_in: Any, shoot: Any) -> None:
    page = signed_in
    page.goto(f"{page.base}/configs/new/")
    shoot(page, "config-form")
    page.fill("#id_name", "tight")
    page.fill("#id_max_tokens_for_clear", "8000")
    page.click("#config-form button[type=submit]")
    page.wait_for_selector("h1:has-text('tight')")
    page.click("a.button:text-is('Edit')")
    page.fill("#id_max_tokens_for_clear", "-1")
    page.click("#config-form button[type=submit]")
    assert page.inner_text("#error-max_tokens_for_clear") == (
        "max_tokens_for_clear must be at least 0, got -1"
    )
    page.fill("#id_max_tokens_for_clear", "6000")
    page.click("#config-form button[type=submit]")
    page.wait_for_selector("#v2")
    assert "max_tokens_for_clear: 8,000 → 6,000" in page.inner_text("#v2 ul.changes")
    shoot(page, "config-versions")
    page.goto(f"{page.base}/configs/")
    assert page.inner_text("table.configs tbody td:nth-child(2)") == "v2"
    shoot(page, "configs")
