"""Reads of the Configs, Compare and Tune pages, scoped to one workspace.

Kept apart from ``selectors`` (which the other pages own). Every function answers in a
fixed number of queries however many configs or conversations there are: a profile's
latest version comes in the same query, through a subquery, and conversation lists
never load transcripts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, TypeGuard

from django.db.models import JSONField, OuterRef, QuerySet, Subquery

from reduction_app.models import ConfigProfile, ConfigVersion, Conversation, Simulation, Workspace

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

__all__ = [
    "CONVERSATION_CHOICES_LIMIT",
    "ConfigChoice",
    "config_choices",
    "config_profile",
    "config_rows",
    "config_versions",
    "conversation_choices",
    "conversation_for",
    "resolve_config_choices",
    "simulation_for",
    "simulation_matching",
]

CONVERSATION_CHOICES_LIMIT = 200
"""The most recent conversations offered in a page's select (the chosen one is added)."""

NO_REDUCTION = {"skip_truncation": True, "skip_clear": True}


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


def conversation_choices(
    *, workspace: Workspace, chosen: Conversation | None = None
) -> list[Conversation]:
    """The latest conversations for a select, without their transcripts."""
    rows = list(
        Conversation.objects.filter(workspace=workspace)
        .only("id", "client_id", "title", "message_count")
        .order_by("-updated_at", "-id")[:CONVERSATION_CHOICES_LIMIT]
    )
    if chosen is not None and all(c.pk != chosen.pk for c in rows):
        rows.append(chosen)
    return rows


def digits(value: str | None) -> TypeGuard[str]:
    """Whether ``value`` is a plain number (``"²".isdigit()`` is true, but ``int`` refuses it)."""
    return value is not None and value.isascii() and value.isdigit()


def conversation_for(*, workspace: Workspace, value: str | None) -> Conversation | None:
    """The workspace's conversation whose id is ``value`` (a number), or ``None``."""
    if not digits(value):
        return None
    return Conversation.objects.filter(workspace=workspace, pk=int(value)).first()


@dataclass(frozen=True)
class ConfigChoice:
    """One option of a config select: ``none``, ``defaults`` or a profile's id."""

    value: str
    label: str
    data: dict[str, Any]


def config_choices(*, workspace: Workspace) -> list[ConfigChoice]:
    """ "no reduction", "defaults", then every live profile at its latest version."""
    out = [
        ConfigChoice("none", "no reduction", dict(NO_REDUCTION)),
        ConfigChoice("defaults", "defaults", {}),
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


def simulation_for(*, workspace: Workspace, value: str | None) -> Simulation | None:
    if not digits(value):
        return None
    return Simulation.objects.filter(workspace=workspace, pk=int(value)).first()


def simulation_matching(
    *, conversation: Conversation, configs: list[dict[str, Any]], options: dict[str, Any]
) -> Simulation | None:
    """A replay of the same configs on the conversation as it is now, not failed: asking
    again for a comparison already queued or done finds it instead of queueing another."""
    recent = (
        Simulation.objects.filter(
            conversation=conversation,
            kind="replay",
            created_at__gte=conversation.updated_at,
        )
        .exclude(status="failed")
        .defer("results")
        .order_by("-id")[:20]
    )
    for simulation in recent:
        if simulation.configs == configs and simulation.options == options:
            return simulation
    return None
