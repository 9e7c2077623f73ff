"""Reads of a workspace's API keys."""

from __future__ import annotations

import pytest

from reduction_app.models import Workspace
from reduction_app.workspaces.selectors import api_key_get, api_key_list
from reduction_app.workspaces.services import api_key_create, api_key_revoke

pytestmark = pytest.mark.django_db


def test_api_key_list_is_the_workspaces_keys_newest_first(workspace: Workspace) -> None:
    first, _ = api_key_create(workspace=workspace, name="first")
    second, _ = api_key_create(workspace=workspace, name="second")
    api_key_revoke(key=first)
    api_key_create(workspace=Workspace.objects.create(name="Other", slug="other"), name="x")
    assert list(api_key_list(workspace=workspace)) == [second, first]


def test_api_key_get_finds_only_the_workspaces_key(workspace: Workspace) -> None:
    key, _ = api_key_create(workspace=workspace, name="ci")
    other = Workspace.objects.create(name="Other", slug="other")
    assert api_key_get(workspace=workspace, key_id=key.pk) == key
    assert api_key_get(workspace=other, key_id=key.pk) is None
