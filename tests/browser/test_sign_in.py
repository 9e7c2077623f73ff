"""Signing in, in a real browser."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import PASSWORD


def test_sign_in_shows_the_overview(
    page: Any, live_server: Any, demo_user: Any, shoot: Any
) -> None:
    page.goto(f"{live_server.url}/")
    assert page.url == f"{live_server.url}/accounts/login/?next=/"
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    assert page.locator("nav a[aria-current=page]").inner_text() == "Overview"
    assert page.locator(".ws").inner_text() == "Demo"
    shoot(page, "overview")


def test_wrong_password_is_refused(page: Any, live_server: Any, demo_user: Any) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", "not it")
    page.click("button[type=submit]")
    assert "do not match" in page.locator("[role=alert]").inner_text()
