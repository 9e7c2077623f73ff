"""Writes of workspaces and API keys."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.errors import ServiceError
from reduction_app.models import Workspace
from reduction_app.workspaces.services import (
    KEY_NAME_MAX_CHARS,
    api_key_create,
    api_key_revoke,
    workspace_get_or_create,
    workspace_retention_set,
)

pytestmark = pytest.mark.django_db


def test_workspace_get_or_create_slugs_and_reuses(
    workspace: Workspace, django_user_model: Any
) -> None:
    assert (workspace.slug, workspace.name) == ("alpha-team", "Alpha Team")
    user = django_user_model.objects.create_user("ada")
    again = workspace_get_or_create(name="alpha team", user=user)
    assert again.pk == workspace.pk
    assert list(again.members.all()) == [user]
    assert workspace_get_or_create(name="!!!").slug == "workspace"


def test_api_key_create_and_revoke(workspace: Workspace) -> None:
    key, raw = api_key_create(workspace=workspace, name="ci")
    assert raw.startswith("rl_") and len(raw) == 46
    assert key.revoked_at is None
    revoked = api_key_revoke(key=key).revoked_at
    assert revoked is not None
    assert api_key_revoke(key=key).revoked_at == revoked  # revoking twice keeps the first time


def test_api_key_create_needs_a_name_that_fits(workspace: Workspace) -> None:
    assert api_key_create(workspace=workspace, name="  ci  ")[0].name == "ci"
    with pytest.raises(ServiceError, match=r"^give the key a name$"):
        api_key_create(workspace=workspace, name=" ")
    with pytest.raises(ServiceError, match=rf"^a key's name is at most {KEY_NAME_MAX_CHARS} "):
        api_key_create(workspace=workspace, name="x" * (KEY_NAME_MAX_CHARS + 1))


def test_workspace_retention_set_and_back_to_forever(workspace: Workspace) -> None:
    workspace_retention_set(workspace=workspace, days=30)
    assert Workspace.objects.get().retention_days == 30
    workspace_retention_set(workspace=workspace, days=None)
    assert Workspace.objects.get().retention_days is None


def test_workspace_retention_set_refuses_less_than_a_day(workspace: Workspace) -> None:
    with pytest.raises(ServiceError, match=r"^retention must be at least 1 day, not 0$"):
        workspace_retention_set(workspace=workspace, days=0)
    assert Workspace.objects.get().retention_days is None
