"""The demo workspace: realistic data for a fresh install, made live through the engine.

:func:`demo_seed` fills workspace ``demo`` with config profiles, conversations of a
scripted coding agent whose every tool result and model call went through the engine as
the REST API records them, and the recordings folder's runs when it is there. It is
idempotent; ``manage.py seed_demo`` runs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from reduction_app.configs.services import config_create, config_update
from reduction_app.conversations.services import conversation_delete
from reduction_app.demo.recording import import_recordings, record_live, record_plain
from reduction_app.demo.specs import (
    DEMO_NAME,
    DEMO_SLUG,
    LIVE,
    PROFILES,
    REPO,
    REPO_MOUNT,
    TEXT_SUFFIXES,
)
from reduction_app.models import (
    ConfigProfile,
    ConfigVersion,
    Conversation,
    EventRecord,
    OffloadedFile,
    RecordingImport,
    Simulation,
    Workspace,
)
from reduction_app.records.storage import offload_storage
from reduction_app.workspaces.services import workspace_get_or_create
from simulator.corpus import CHECKOUT_SKIP_DIRS, SourceTree, django_root

__all__ = [
    "DEMO_NAME",
    "DEMO_SLUG",
    "LIVE",
    "PROFILES",
    "SeedReport",
    "demo_member_set",
    "demo_reset",
    "demo_seed",
    "demo_tree",
]


@dataclass
class SeedReport:
    """What one ``demo_seed`` did, and what the workspace holds now."""

    workspace: Workspace
    created: list[str] = field(default_factory=list)
    """Client ids of the conversations this run added, in order."""
    kept: list[str] = field(default_factory=list)
    """Client ids that were there already."""
    profiles_created: int = 0
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    recordings: Path = field(default_factory=Path)
    """The folder the real recordings were imported from, or looked for in."""
    recordings_found: bool = False
    """Whether that folder was there (when not, no recording was imported)."""
    imported: dict[str, int] = field(default_factory=dict)
    """Real recordings this run imported, by source (``OpenHands``, ``tau-bench``)."""
    imported_before: int = 0
    """Real recordings that were there already."""

    @property
    def already_seeded(self) -> bool:
        return not self.created and not self.profiles_created


def _quiet(line: str) -> None:
    del line


# Members ---------------------------------------------------------------------------------


def demo_member_set(
    *, workspace: Workspace, username: str, password: str | None
) -> tuple[AbstractBaseUser, bool]:
    """Create the user (a normal user, not staff) or, when it exists, set its password
    if one is given (its flags stay: an admin stays an admin), and make it a member of
    ``workspace``. Returns the user and whether it was created."""
    user_model = get_user_model()
    user = user_model.objects.filter(username=username).first()
    created = user is None
    if user is None:
        if not password:
            raise ValueError(f"user {username!r} does not exist; give a password to create it")
        user = user_model.objects.create_user(username=username, password=password)
    elif password:
        user.set_password(password)
        user.save(update_fields=["password"])
    workspace.members.add(user)
    return user, created


# Reset -----------------------------------------------------------------------------------


@transaction.atomic
def demo_reset(*, workspace: Workspace) -> None:
    """Remove everything recorded in ``workspace`` (conversations, events, files and their
    content, simulations, configs, imports); its members and API keys stay."""
    for conversation in workspace.conversations.all():
        conversation_delete(conversation=conversation)
    names = list(OffloadedFile.objects.filter(workspace=workspace).values_list("storage_name"))
    OffloadedFile.objects.filter(workspace=workspace).delete()
    Workspace.objects.filter(pk=workspace.pk).update(offload_bytes=0)
    EventRecord.objects.filter(workspace=workspace).delete()
    Simulation.objects.filter(workspace=workspace).delete()
    RecordingImport.objects.filter(workspace=workspace).delete()
    ConfigProfile.objects.filter(workspace=workspace).delete()
    storage = offload_storage()

    def remove() -> None:
        for (name,) in names:
            storage.delete(name)

    transaction.on_commit(remove)


# Seeding ---------------------------------------------------------------------------------


def demo_tree() -> SourceTree:
    """The tree the demo agent works in: this repository and the installed Django."""
    return SourceTree.load_mounts(
        {REPO_MOUNT: REPO, "django": django_root()},
        suffixes=TEXT_SUFFIXES,
        skip=CHECKOUT_SKIP_DIRS | {"conversations"},
    )


def demo_seed(
    *,
    small: bool = False,
    reset: bool = False,
    say: Callable[[str], None] = _quiet,
    now: datetime | None = None,
    recordings: Path | None = None,
) -> SeedReport:
    """Seed the demo workspace (see the module docstring); ``small`` seeds only the live
    conversations marked ``small`` and one recording of each kind. The recordings are
    imported from ``recordings`` (by default ``settings.REDUCTION_RECORDINGS_DIR``) when
    that folder is there, and left out when it is not.

    Raises ``FileNotFoundError`` outside a checkout of this repository (the demo agent
    reads its files).
    """
    started = time.perf_counter()
    if not (REPO / "data" / "demo").is_dir():
        raise FileNotFoundError(
            f"the demo needs a checkout of Reduction Lab; {REPO / 'data' / 'demo'} is missing"
        )
    folder = Path(settings.REDUCTION_RECORDINGS_DIR) if recordings is None else recordings
    workspace = workspace_get_or_create(name=DEMO_NAME)
    if reset:
        demo_reset(workspace=workspace)
        say(f"Emptied workspace {workspace.slug!r}.")
    anchor = (now or timezone.now()).replace(second=0, microsecond=0)
    report = SeedReport(workspace=workspace, recordings=folder, recordings_found=folder.is_dir())
    versions = _profiles(workspace, anchor, report)
    live = [spec for spec in LIVE if spec.small or not small]
    existing = set(
        Conversation.objects.filter(workspace=workspace).values_list("client_id", flat=True)
    )
    todo = [spec for spec in live if spec.client_id not in existing]
    tree = demo_tree() if todo else None
    for number, spec in enumerate(live, start=1):
        prefix = f"[{number}/{len(live)}] {spec.client_id}"
        if spec.client_id in existing or tree is None:
            report.kept.append(spec.client_id)
            say(f"{prefix}: already there")
            continue
        if spec.profile is None:
            line = record_plain(workspace, spec, tree, anchor)
            say(f"{prefix} (no reduction, no events): {line}")
        else:
            version = versions[(spec.profile, spec.version)]
            line = record_live(workspace, spec, version, tree, anchor)
            say(f"{prefix} ({spec.profile} v{spec.version}): {line}")
        report.created.append(spec.client_id)
    recorded: list[tuple[str, str, str | None]] = []
    if report.recordings_found:
        recorded = import_recordings(workspace, folder, anchor, existing, small)
    for source, client_id, imported in recorded:
        report.imported.setdefault(source, 0)
        if imported is None:
            report.kept.append(client_id)
            report.imported_before += 1
        else:
            report.created.append(client_id)
            report.imported[source] += 1
            say(f"imported {client_id}: {imported}")
    report.counts = _counts(workspace)
    report.seconds = time.perf_counter() - started
    return report


def _profiles(
    workspace: Workspace, anchor: datetime, report: SeedReport
) -> dict[tuple[str, int], ConfigVersion]:
    out: dict[tuple[str, int], ConfigVersion] = {}
    for spec in PROFILES:
        profile = ConfigProfile.objects.filter(
            workspace=workspace, name=spec.name, deleted_at__isnull=True
        ).first()
        if profile is None:
            with transaction.atomic():
                version = config_create(workspace=workspace, name=spec.name, data=spec.versions[0])
                profile = version.profile
                for data in spec.versions[1:]:
                    config_update(profile=profile, data=data)
                first = anchor - timedelta(days=spec.days_ago[0])
                ConfigProfile.objects.filter(pk=profile.pk).update(created_at=first)
                for number, days in enumerate(spec.days_ago, start=1):
                    ConfigVersion.objects.filter(profile=profile, number=number).update(
                        created_at=anchor - timedelta(days=days)
                    )
            report.profiles_created += 1
        for version in profile.versions.all():
            out[(spec.name, version.number)] = version
    return out


def _counts(workspace: Workspace) -> dict[str, int]:
    events = EventRecord.objects.filter(workspace=workspace)
    return {
        "conversations": Conversation.objects.filter(workspace=workspace).count(),
        "configs": ConfigProfile.objects.filter(
            workspace=workspace, deleted_at__isnull=True
        ).count(),
        "config_versions": ConfigVersion.objects.filter(profile__workspace=workspace).count(),
        "events": events.count(),
        "truncation_events": events.filter(phase="truncation").count(),
        "clear_events": events.filter(phase="clear").count(),
        "files": OffloadedFile.objects.filter(workspace=workspace).count(),
        "members": workspace.members.count(),
    }
