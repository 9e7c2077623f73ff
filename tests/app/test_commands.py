"""``manage.py create_api_key NAME [--workspace W]``."""

from __future__ import annotations

from http import HTTPStatus
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from reduction_app.models import ApiKey, Workspace
from reduction_app.workspaces.services import api_key_digest

pytestmark = pytest.mark.django_db


def create_key(*args: str) -> list[str]:
    out = StringIO()
    call_command("create_api_key", *args, stdout=out)
    return out.getvalue().splitlines()


def test_create_api_key_prints_a_working_key_last(client: Client) -> None:
    lines = create_key("laptop", "--workspace", "Team Rocket")
    raw = lines[-1]
    key = ApiKey.objects.get()
    assert lines == [
        f"Created key 'laptop' ({key.prefix}…) for workspace 'team-rocket'.",
        "Store it now: it is shown only once.",
        raw,
    ]
    assert (key.name, key.workspace.slug, key.workspace.name, key.digest) == (
        "laptop",
        "team-rocket",
        "Team Rocket",
        api_key_digest(raw),
    )
    headers = {"Authorization": f"Bearer {raw}"}
    response = client.post(
        "/api/v1/conversations",
        {"conversation_id": "cli"},
        content_type="application/json",
        headers=headers,
    )
    assert response.status_code == HTTPStatus.CREATED
    assert (
        client.get("/api/v1/conversations", headers=headers).json()["results"][0]["conversation_id"]
        == "cli"
    )


def test_create_api_key_defaults_to_the_default_workspace() -> None:
    create_key("ci")
    assert ApiKey.objects.get().workspace.slug == "default"


def test_create_api_key_twice_gives_two_keys_in_one_workspace() -> None:
    first = create_key("a", "--workspace", "w")[-1]
    second = create_key("b", "--workspace", "w")[-1]
    assert first != second
    assert Workspace.objects.count() == 1
    assert ApiKey.objects.filter(workspace__slug="w").count() == 2


def test_create_api_key_needs_a_name() -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="the following arguments are required: name"):
        call_command("create_api_key")


def test_api_keys_lists_and_revokes(client: Client) -> None:
    raw = create_key("laptop", "--workspace", "Team Rocket")[-1]
    key = ApiKey.objects.get()
    out = StringIO()
    call_command("api_keys", stdout=out)
    assert out.getvalue() == f"team-rocket\t{key.prefix}…\tlaptop\tlive\tlast used never\n"
    assert raw not in out.getvalue()
    out = StringIO()
    call_command("api_keys", "--revoke", key.prefix, stdout=out)
    assert out.getvalue() == f"Revoked key 'laptop' ({key.prefix}…) of workspace 'team-rocket'.\n"
    response = client.get("/api/v1/files", headers={"Authorization": f"Bearer {raw}"})
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    with pytest.raises(CommandError, match="no key with prefix 'nope'"):
        call_command("api_keys", "--revoke", "nope", stdout=StringIO())
