"""API keys in a real browser at 1280×800: create one from the navigation, copy its
secret, use it against the live API, see it gone on the next visit, revoke it."""

from __future__ import annotations

import urllib.error
import urllib.request
from http import HTTPStatus
from typing import Any


def _events(base: str, key: str) -> int:
    request = urllib.request.Request(
        f"{base}/api/v1/events", headers={"Authorization": f"Bearer {key}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_create_copy_use_and_revoke_a_key(clipboard_page: Any, shoot: Any) -> None:
    page = clipboard_page
    page.click("nav a:text-is('API keys')")
    page.wait_for_selector("h1:text-is('API keys')")
    assert page.is_visible("#no-keys")
    page.fill("#key-new input[name=name]", "laptop <agent>")
    page.click("#key-new button[type=submit]")
    page.wait_for_selector("#new-key")
    assert page.inner_text("#new-key h2") == "Key “laptop <agent>” created"
    secret = page.inner_text("#new-key-secret")
    assert secret.startswith("rl_")
    page.click("#new-key button.copy")
    page.wait_for_selector("#new-key .copy-status:text-is('Copied.')")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shoot(page, "api-key-created")

    assert _events(page.base, secret) == HTTPStatus.OK
    page.goto(f"{page.base}/keys/")
    assert not page.is_visible("#new-key")
    assert secret not in page.content()
    row = "table.keys tbody tr"
    assert page.inner_text(f"{row} .key-name") == "laptop <agent>"
    assert page.inner_text(f"{row} .last-used") != "never"
    shoot(page, "api-keys")

    page.click(f"{row} a:text-is('revoke')")
    page.click("button.danger:text-is('Revoke')")
    page.wait_for_selector(f"{row}.revoked")
    assert page.inner_text(f"{row} .state").startswith("revoked ")
    assert _events(page.base, secret) == HTTPStatus.UNAUTHORIZED
