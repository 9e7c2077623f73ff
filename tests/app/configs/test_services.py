"""Writes of config profiles: versions, validation, names."""

from __future__ import annotations

import pytest

from reduction_app import engine
from reduction_app.configs.services import config_create, config_delete, config_update
from reduction_app.errors import ServiceError
from reduction_app.models import ConfigVersion, Workspace
from reduction_app.workspaces.services import (
    workspace_get_or_create,
)

pytestmark = pytest.mark.django_db


def test_config_versions(workspace: Workspace) -> None:
    first = config_create(workspace=workspace, name="c", data={"max_length_for_trunc": 5})
    second = config_update(profile=first.profile, data={"trunc_exclude_tools": ["b", "a"]})
    assert (first.number, second.number) == (1, 2)
    assert first.data["max_length_for_trunc"] == 5
    # Each version is a whole config: what is not given is the default.
    assert (second.data["max_length_for_trunc"], second.data["trunc_exclude_tools"]) == (
        50000,
        ["a", "b"],
    )
    assert list(ConfigVersion.objects.values_list("number", flat=True)) == [2, 1]


def test_config_create_refuses_bad_data_and_duplicates(workspace: Workspace) -> None:
    with pytest.raises(engine.ConfigError, match="max_tokens_for_clear must be at least 0, got -1"):
        config_create(workspace=workspace, name="c", data={"max_tokens_for_clear": -1})
    config_create(workspace=workspace, name="c", data={})
    with pytest.raises(ServiceError, match="a config named 'c' already exists"):
        config_create(workspace=workspace, name="c", data={})
    # Another workspace may use the name.
    config_create(workspace=workspace_get_or_create(name="beta"), name="c", data={})


def test_config_delete_frees_the_name(workspace: Workspace) -> None:
    version = config_create(workspace=workspace, name="c", data={})
    config_delete(profile=version.profile)
    assert config_create(workspace=workspace, name="c", data={}).profile.pk != version.profile.pk
