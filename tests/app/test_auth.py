"""API keys: bearer authentication, revocation, and keys stored only as digests."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from http import HTTPStatus
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from reduction_app.models import ApiKey
from reduction_app.workspaces.services import api_key_revoke
from tests.app.support import ApiClient, error

pytestmark = pytest.mark.django_db

ENDPOINTS = [
    ("get", "/api/v1/events"),
    ("get", "/api/v1/files"),
    ("get", "/api/v1/files/read?path=x"),
    ("get", "/api/v1/files/raw?path=x"),
    ("get", "/api/v1/conversations"),
    ("get", "/api/v1/conversations/x"),
    ("delete", "/api/v1/conversations/x"),
    ("get", "/api/v1/configs"),
    ("post", "/api/v1/configs"),
    ("get", "/api/v1/configs/1"),
    ("put", "/api/v1/configs/1"),
    ("delete", "/api/v1/configs/1"),
    ("post", "/api/v1/truncate"),
    ("post", "/api/v1/clear"),
    ("get", "/api/v1/tools/read_file"),
]


def _unauthorized(response: object) -> None:
    assert response.status_code == HTTPStatus.UNAUTHORIZED  # type: ignore[attr-defined]
    assert response.json() == error("missing or invalid API key")  # type: ignore[attr-defined]
    assert response["WWW-Authenticate"] == "Bearer"  # type: ignore[index]


@pytest.mark.parametrize(("method", "url"), ENDPOINTS)
def test_auth_missing_key_is_401_everywhere(api: ApiClient, method: str, url: str) -> None:
    _unauthorized(getattr(api.client, method)(url, content_type="application/json"))


@pytest.mark.parametrize(
    "header",
    [
        "Bearer rl_not-a-key",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "rl_raw-key-without-scheme",
        "Bearer a b",
    ],
)
def test_auth_bad_key_is_401(api: ApiClient, header: str) -> None:
    _unauthorized(api.client.get("/api/v1/events", headers={"Authorization": header}))


def test_auth_scheme_is_case_insensitive(api: ApiClient) -> None:
    response = api.client.get("/api/v1/events", headers={"Authorization": f"bearer {api.raw_key}"})
    assert response.status_code == HTTPStatus.OK


def test_auth_revoked_key_is_401(api: ApiClient) -> None:
    assert api.get("/events").status_code == HTTPStatus.OK
    api_key_revoke(key=api.key)
    _unauthorized(api.get("/events"))


def test_auth_key_revoked_by_the_command_is_401_on_the_very_next_request(
    api: ApiClient,
) -> None:
    """No key is cached: the request right after the revocation reads the row again."""
    assert api.get("/tools/read_file").status_code == HTTPStatus.OK
    call_command("api_keys", "--revoke", api.key.prefix, stdout=StringIO())
    _unauthorized(api.get("/tools/read_file"))


def test_auth_checks_the_key_before_the_body(api: ApiClient) -> None:
    """An unauthenticated request learns nothing about its input."""
    response = api.client.post("/api/v1/truncate", b"not json", content_type="application/json")
    _unauthorized(response)


def test_auth_key_is_stored_only_as_a_digest(api: ApiClient) -> None:
    row = ApiKey.objects.get()
    assert row.digest == hashlib.sha256(api.raw_key.encode()).hexdigest()
    assert row.prefix == api.raw_key[:10]
    assert api.raw_key.startswith("rl_")
    out = StringIO()
    call_command("dumpdata", stdout=out)
    assert api.raw_key not in out.getvalue()
    assert row.digest in out.getvalue()


def test_auth_sets_last_used_at(api: ApiClient) -> None:
    assert ApiKey.objects.get().last_used_at is None
    before = timezone.now()
    api.get("/events")
    used = ApiKey.objects.get().last_used_at
    assert used is not None and before <= used <= timezone.now()


def test_auth_refreshes_last_used_at_at_most_once_a_minute(api: ApiClient) -> None:
    recent = timezone.now() - timedelta(seconds=30)
    ApiKey.objects.update(last_used_at=recent)
    api.get("/events")
    assert ApiKey.objects.get().last_used_at == recent
    old = timezone.now() - timedelta(minutes=5)
    ApiKey.objects.update(last_used_at=old)
    api.get("/events")
    assert ApiKey.objects.get().last_used_at > old  # type: ignore[operator]


def test_auth_a_key_sees_its_own_workspace(api: ApiClient, other_api: ApiClient) -> None:
    api.post("/conversations", {"conversation_id": "mine"})
    assert [c["conversation_id"] for c in api.get("/conversations").json()["results"]] == ["mine"]
    assert other_api.get("/conversations").json()["results"] == []
