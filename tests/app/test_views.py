"""The dashboard's shared frame: sign-in, workspaces, navigation, the JSON 404 of the API."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.contrib.auth.models import User
from django.test import Client

from reduction_app.workspaces.services import workspace_get_or_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def member() -> User:
    user = User.objects.create_user("ada", password="correct horse battery")
    workspace_get_or_create(name="Demo", user=user)
    return user


def test_pages_need_sign_in(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == "/accounts/login/?next=/"


def test_login_page_renders(client: Client) -> None:
    response = client.get("/accounts/login/")
    assert response.status_code == HTTPStatus.OK
    assert '<input type="password" name="password"' in response.content.decode()


def test_sign_in_then_overview(client: Client, member: User) -> None:
    response = client.post(
        "/accounts/login/", {"username": "ada", "password": "correct horse battery"}
    )
    assert response.status_code == HTTPStatus.FOUND
    page = client.get("/").content.decode()
    assert '<a href="/" aria-current="page">Overview</a>' in page
    assert '<span class="ws">Demo</span>' in page
    assert 'src="/static/django_htmx/htmx-2.min.js"' in page
    assert 'src="/static/chartkick/Chart.bundle.js"' in page


def test_user_without_workspace_is_told(client: Client) -> None:
    User.objects.create_user("bob", password="pw-for-bob-123")
    client.login(username="bob", password="pw-for-bob-123")
    response = client.get("/")
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert "not a member of any workspace" in response.content.decode()


def test_overview_refuses_post(client: Client, member: User) -> None:
    client.force_login(member)
    assert client.post("/").status_code == HTTPStatus.METHOD_NOT_ALLOWED


def test_unknown_api_address_answers_json_404(client: Client) -> None:
    response = client.get("/api/v1/nope")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == {"detail": "no such endpoint: /api/v1/nope", "field": None}


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_unknown_api_address_answers_json_404_to_any_method(method: str) -> None:
    """Found by schemathesis: a DELETE got Django's HTML 403 (CSRF) instead of the 404."""
    client = Client(enforce_csrf_checks=True)
    response = client.generic(method, "/api/v1/nope/a")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == {
        "detail": "no such endpoint: /api/v1/nope/a",
        "field": None,
    }


def test_history_restore_gets_the_whole_page(client: Client, member: User) -> None:
    """htmx refetching a page for its history gets the page, not a partial."""
    client.force_login(member)
    page = client.get(
        "/events/", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"}
    )
    assert page.status_code == HTTPStatus.OK
    assert "<html" in page.content.decode()
    assert "HX-Request" in page["Vary"]
    partial = client.get("/events/", headers={"HX-Request": "true"})
    assert "<html" not in partial.content.decode()


def test_workspace_switch_is_a_post_and_only_among_mine(client: Client, member: User) -> None:
    workspace_get_or_create(name="Second", user=member)
    workspace_get_or_create(name="Not mine")
    client.force_login(member)
    assert '<span class="ws">' not in client.get("/").content.decode()  # a switcher instead
    # A link shows another of my workspaces for that request only.
    assert 'value="second" selected' in client.get("/?workspace=second").content.decode()
    assert 'value="demo" selected' in client.get("/").content.decode()
    # The switcher's POST remembers it, and goes back where it came from.
    response = client.post("/workspace/switch/", {"workspace": "second", "next": "/events/"})
    assert (response.status_code, response["Location"]) == (HTTPStatus.FOUND, "/events/")
    assert 'value="second" selected' in client.get("/").content.decode()
    assert client.post("/workspace/switch/", {"workspace": "not-mine"}).status_code == 404
    off_site = client.post(
        "/workspace/switch/", {"workspace": "demo", "next": "https://evil.test/"}
    )
    assert off_site["Location"] == "/"
    assert client.get("/workspace/switch/").status_code == HTTPStatus.METHOD_NOT_ALLOWED
