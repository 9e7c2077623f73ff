"""Reads of config profiles and their versions, scoped to one workspace, and the config
choices the Compare and Tune pages offer. A profile's latest version comes in the same
query, through a subquery."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from django.db.models import JSONField, OuterRef, QuerySet, Subquery

from reduction_app.models import ConfigProfile, ConfigVersion, Workspace
from simulator.replay import no_reduction

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


def config_get(*, workspace: Workspace, profile_id: int) -> ConfigProfile | None:
    return ConfigProfile.objects.filter(
        workspace=workspace, pk=profile_id, deleted_at__isnull=True
    ).first()


def config_latest(*, profile: ConfigProfile) -> ConfigVersion:
    version = profile.versions.order_by("-number").first()
    assert version is not None, "a profile always has a version"
    return version


def config_list(*, workspace: Workspace) -> QuerySet[ConfigProfile]:
    return ConfigProfile.objects.filter(workspace=workspace, deleted_at__isnull=True).order_by(
        "-id"
    )


class LatestVersion(TypedDict):
    """What :func:`config_rows` annotates a profile with (all ``None`` without versions)."""

    latest_number: int | None
    latest_data: dict[str, Any] | None
    updated_at: datetime | None


if TYPE_CHECKING:
    ConfigRow = WithAnnotations[ConfigProfile, LatestVersion]
    """A live profile with its latest version's number, data and time."""


def config_rows(*, workspace: Workspace) -> QuerySet[ConfigRow]:
    """Live profiles, each with ``latest_number``, ``latest_data`` and ``updated_at``."""
    latest = ConfigVersion.objects.filter(profile=OuterRef("pk")).order_by("-number")
    return (
        ConfigProfile.objects.filter(workspace=workspace, deleted_at__isnull=True)
        .annotate(
            latest_number=Subquery(latest.values("number")[:1]),
            latest_data=Subquery(latest.values("data")[:1], output_field=JSONField()),
            updated_at=Subquery(latest.values("created_at")[:1]),
        )
        .order_by("name", "id")
    )


def config_profile(*, workspace: Workspace, profile_id: int) -> ConfigRow | None:
    """A live profile of the workspace, with its latest version annotated."""
    return config_rows(workspace=workspace).filter(pk=profile_id).first()


def config_versions(*, profile: ConfigProfile) -> list[ConfigVersion]:
    """Every version, newest first."""
    return list(ConfigVersion.objects.filter(profile=profile).order_by("-number"))


@dataclass(frozen=True)
class ConfigChoice:
    """One option of a config select: ``none``, ``defaults`` (the engine's, labelled
    :data:`BUILT_IN_DEFAULTS`) or a profile's id."""

    value: str
    label: str
    data: dict[str, Any]


BUILT_IN_DEFAULTS = "Eino defaults (built in)"
"""How a picker names the engine's own defaults (config ``{}``, value ``defaults`` in
URLs), apart from any stored config a workspace calls "Defaults"."""


def config_choices(*, workspace: Workspace) -> list[ConfigChoice]:
    """ "no reduction", the engine's defaults, then every live profile at its latest
    version."""
    out = [
        ConfigChoice("none", "no reduction", no_reduction()),
        ConfigChoice("defaults", BUILT_IN_DEFAULTS, {}),
    ]
    for profile in config_rows(workspace=workspace):
        label = f"{profile.name} v{profile.latest_number}"
        out.append(ConfigChoice(str(profile.pk), label, dict(profile.latest_data or {})))
    return out


def resolve_config_choices(
    choices: Sequence[ConfigChoice], values: Sequence[str]
) -> tuple[list[ConfigChoice], list[str]]:
    """The chosen configs in order (blank values skipped), and the values not found."""
    by_value = {c.value: c for c in choices}
    found, missing = [], []
    for value in values:
        if not value:
            continue
        if value in by_value:
            found.append(by_value[value])
        else:
            missing.append(value)
    return found, missing
