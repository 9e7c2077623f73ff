"""The icon: each page links it, and /favicon.ico, which browsers ask for whatever a
page links, leads to it, in development and with the static files collected."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

ICON = "reduction_app/favicon.svg"


def test_favicon_ico_leads_to_the_icon() -> None:
    response = Client().get("/favicon.ico")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == f"/static/{ICON}"
    assert Client().head("/favicon.ico").status_code == HTTPStatus.FOUND
    assert Client().post("/favicon.ico").status_code == HTTPStatus.METHOD_NOT_ALLOWED


@pytest.mark.django_db
def test_the_sign_in_page_links_the_icon() -> None:
    page = Client().get("/accounts/login/").content.decode()
    assert f'<link rel="icon" href="/static/{ICON}" type="image/svg+xml">' in page


def test_favicon_ico_leads_to_the_collected_icon(settings: Any, tmp_path: Path) -> None:
    """With DEBUG off, to the name collectstatic gave it (with a hash of its content)."""
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
    }
    call_command("collectstatic", interactive=False, verbosity=0)
    location = Client().get("/favicon.ico")["Location"]
    name = location.removeprefix("/static/")
    assert name.startswith("reduction_app/favicon.") and name.endswith(".svg") and name != ICON
    collected = (tmp_path / "static" / name).read_text(encoding="utf-8")
    assert collected == (Path(__file__).parents[2] / "reduction_app/static" / ICON).read_text(
        encoding="utf-8"
    )
