"""Browser tests: Playwright drives Debian's Chromium (``/usr/bin/chromium``, never a
downloaded browser) against the app on pytest-django's live server.

Each test gets a signed-in page (``signed_in``) and may save a screenshot of what it saw
with ``shoot(page, name)`` into ``screenshots/`` at the repository root (the folder the
README names; gitignored).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from reduction_app.workspaces.services import workspace_get_or_create
from tests.conftest import temporary_offload_storage

CHROMIUM = os.environ.get("REDUCTION_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(__file__).resolve().parents[2] / "screenshots"
PASSWORD = "a long demo password"

# Playwright's sync API runs an event loop in this thread; Django allows its ORM there.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


# Package scope: Playwright's sync API keeps an event loop running in this thread while
# it lives, which would break the asyncio tests that run after tests/browser.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def offload_dir(settings: Any, tmp_path: Path) -> Path:
    """The offload storage on a temporary folder (the live server runs in this process)."""
    return temporary_offload_storage(settings, tmp_path)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def demo_user(transactional_db: None) -> User:
    user = User.objects.create_user("ada", password=PASSWORD)
    workspace_get_or_create(name="Demo", user=user)
    return user


def sign_in(page: Any, live_server: Any) -> Any:
    """``page`` signed in as ``ada`` (:func:`demo_user`), its ``base`` the server's URL."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "ada")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.base = live_server.url
    return page


@pytest.fixture
def signed_in(page: Any, live_server: Any, demo_user: User) -> Any:
    """A page signed in as ``ada``, a member of workspace ``Demo``."""
    return sign_in(page, live_server)


@pytest.fixture
def clipboard_page(browser: Any, live_server: Any, demo_user: User) -> Iterator[Any]:
    """A signed-in page at 1280×800 that may read and write the clipboard."""
    context = browser.new_context(
        viewport={"width": 1280, "height": 800},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield sign_in(page, live_server)
    context.close()


@pytest.fixture
def shoot() -> Callable[[Any, str], Path]:
    def take(page: Any, name: str) -> Path:
        SCREENSHOTS.mkdir(exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take
