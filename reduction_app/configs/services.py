"""Writes of config profiles: every version is validated by the engine first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from reduction_app import engine
from reduction_app.errors import ServiceError
from reduction_app.models import OFFLOAD_PATH_CHARS, ConfigProfile, ConfigVersion, Workspace


class _ServiceLimits(engine.InMemoryBackend):
    """Checks a profile as the storage it will run on would: a ``root_dir`` too long for
    its paths is refused when the profile is saved, not each time it is used."""

    max_path_chars = OFFLOAD_PATH_CHARS


def _validated(data: Mapping[str, Any]) -> dict[str, Any]:
    """The config's JSON fields, validated by the engine and written out in full."""
    config = engine.config_from_dict(data, backend=_ServiceLimits())
    return engine.config_to_dict(config)


@transaction.atomic
def config_create(*, workspace: Workspace, name: str, data: Mapping[str, Any]) -> ConfigVersion:
    validated = _validated(data)
    if ConfigProfile.objects.filter(
        workspace=workspace, name=name, deleted_at__isnull=True
    ).exists():
        raise ServiceError(f"a config named {name!r} already exists")
    profile = ConfigProfile.objects.create(workspace=workspace, name=name)
    return ConfigVersion.objects.create(profile=profile, number=1, data=validated)


@transaction.atomic
def config_update(
    *, profile: ConfigProfile, data: Mapping[str, Any], name: str | None = None
) -> ConfigVersion:
    """A new version of ``profile`` (the earlier ones stay, and events keep pointing at them)."""
    validated = _validated(data)
    profile = ConfigProfile.objects.select_for_update().get(pk=profile.pk)
    if name and name != profile.name:
        taken = ConfigProfile.objects.filter(
            workspace=profile.workspace, name=name, deleted_at__isnull=True
        ).exclude(pk=profile.pk)
        if taken.exists():
            raise ServiceError(f"a config named {name!r} already exists")
        profile.name = name
        profile.save(update_fields=["name"])
    last = profile.versions.order_by("-number").first()
    number = (last.number if last else 0) + 1
    return ConfigVersion.objects.create(profile=profile, number=number, data=validated)


def config_delete(*, profile: ConfigProfile) -> None:
    """Hide the profile; its versions stay so recorded events keep their config."""
    profile.deleted_at = timezone.now()
    profile.save(update_fields=["deleted_at"])
