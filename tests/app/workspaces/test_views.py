"""The API keys page: who may see and change a workspace's keys, a new key's secret shown
once and working against the real API until it is revoked, and names escaped."""

from __future__ import annotations

import hashlib
from http import HTTPStatus

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.html import escape

from reduction_app.models import ApiKey, Workspace
from reduction_app.workspaces.services import KEY_NAME_MAX_CHARS, api_key_create
from tests.app.pages_support import elements, html, member_client, parsed, text

pytestmark = pytest.mark.django_db


def _events(raw_key: str) -> int:
    """The status of ``GET /api/v1/events`` with ``raw_key``, as an agent sends it."""
    response = Client().get("/api/v1/events", headers={"Authorization": f"Bearer {raw_key}"})
    return int(response.status_code)


def _created_secret(client: Client, name: str) -> str:
    response = client.post("/keys/new/", {"name": name})
    assert response.status_code == HTTPStatus.CREATED
    assert "no-store" in response["Cache-Control"]
    (secret,) = elements(parsed(response), "code", id="new-key-secret")
    return text(secret)


def test_api_keys_page_is_for_signed_in_members() -> None:
    response = Client().get("/keys/")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == "/accounts/login/?next=/keys/"
    response = Client().post("/keys/new/", {"name": "ci"})
    assert response.status_code == HTTPStatus.FOUND
    assert ApiKey.objects.count() == 0
    loner = Client()
    loner.force_login(User.objects.create_user("loner"))
    assert loner.get("/keys/").status_code == HTTPStatus.FORBIDDEN
    assert loner.post("/keys/new/", {"name": "ci"}).status_code == HTTPStatus.FORBIDDEN
    assert ApiKey.objects.count() == 0


def test_api_keys_page_is_linked_from_the_navigation() -> None:
    client, _ = member_client()
    (nav,) = elements(parsed(client.get("/")), "nav")
    (link,) = [a for a in elements(nav, "a") if text(a) == "API keys"]
    assert dict(link.attributes)["href"] == "/keys/"


def test_a_created_key_works_until_revoked_and_its_secret_is_shown_once() -> None:
    client, workspace = member_client()
    raw = _created_secret(client, "  ci runner  ")
    key = ApiKey.objects.get()
    assert (key.workspace, key.name, key.prefix) == (workspace, "ci runner", raw[:10])
    assert key.digest == hashlib.sha256(raw.encode()).hexdigest()
    assert key.last_used_at is None

    assert _events(raw) == HTTPStatus.OK
    key.refresh_from_db()
    assert key.last_used_at is not None

    page = client.get("/keys/")
    assert raw not in html(page)
    assert not elements(parsed(page), "section", id="new-key")
    (row,) = elements(parsed(page), "tr", data_key=str(key.pk))
    cells = [text(td) for td in elements(row, "td")]
    assert cells[:2] == ["ci runner", f"{raw[:10]}…"]
    assert cells[3] == key.last_used_at.strftime("%Y-%m-%d %H:%M")
    assert cells[4] == "live"

    revoke = f"/keys/{key.pk}/revoke/"
    assert len(elements(parsed(client.get(revoke)), "form", action=revoke)) == 1
    assert client.post(revoke)["Location"] == "/keys/"
    assert _events(raw) == HTTPStatus.UNAUTHORIZED
    (row,) = elements(parsed(client.get("/keys/")), "tr", data_key=str(key.pk))
    assert text(elements(row, "td", class_="state")[0]).startswith("revoked ")
    assert not elements(row, "a")


def test_each_key_created_has_its_own_secret() -> None:
    client, _ = member_client()
    first, second = _created_secret(client, "ci"), _created_secret(client, "ci")
    assert first != second
    assert ApiKey.objects.count() == 2
    assert {_events(first), _events(second)} == {HTTPStatus.OK}


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("   ", "Give the key a name."),
        (
            "x" * (KEY_NAME_MAX_CHARS + 1),
            f"A key's name is at most {KEY_NAME_MAX_CHARS} characters.",
        ),
    ],
)
def test_a_key_without_a_fitting_name_is_refused(name: str, error: str) -> None:
    client, _ = member_client()
    response = client.post("/keys/new/", {"name": name})
    assert response.status_code == HTTPStatus.BAD_REQUEST
    (shown,) = elements(parsed(response), "p", id="key-error")
    assert text(shown) == error
    assert not elements(parsed(response), "code", id="new-key-secret")
    assert ApiKey.objects.count() == 0


def test_another_workspaces_keys_are_not_found() -> None:
    client, _ = member_client()
    other = Workspace.objects.create(name="Other", slug="other")
    theirs, raw = api_key_create(workspace=other, name="theirs")
    page = html(client.get("/keys/?workspace=other"))
    assert "theirs" not in page
    revoke = f"/keys/{theirs.pk}/revoke/"
    assert client.get(revoke).status_code == HTTPStatus.NOT_FOUND
    assert client.post(revoke).status_code == HTTPStatus.NOT_FOUND
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    assert _events(raw) == HTTPStatus.OK


def test_every_member_may_create_and_revoke() -> None:
    """Workspaces have no roles: a second member revokes the key the first created."""
    client, workspace = member_client()
    raw = _created_secret(client, "ci")
    bob = User.objects.create_user("bob")
    workspace.members.add(bob)
    other = Client()
    other.force_login(bob)
    key = ApiKey.objects.get()
    assert other.post(f"/keys/{key.pk}/revoke/").status_code == HTTPStatus.FOUND
    assert _events(raw) == HTTPStatus.UNAUTHORIZED


def test_a_keys_name_is_escaped_everywhere_it_is_shown() -> None:
    client, _ = member_client()
    name = '<script>alert("key")</script>'
    response = client.post("/keys/new/", {"name": name})
    key = ApiKey.objects.get()
    for page in (response, client.get("/keys/"), client.get(f"/keys/{key.pk}/revoke/")):
        assert "<script>alert" not in html(page)
        assert escape(name) in html(page)
