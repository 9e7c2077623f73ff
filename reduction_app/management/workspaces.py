"""The ``--workspace SLUG`` option the offload commands share."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser
from django.db.models import QuerySet

from reduction_app.models import Workspace


def add_workspace_option(parser: CommandParser) -> None:
    parser.add_argument("--workspace", metavar="SLUG", help="Only this workspace.")


def workspaces_chosen(slug: str | None) -> QuerySet[Workspace]:
    """Every workspace by slug, or the one ``slug`` names; ``CommandError`` if none does."""
    workspaces = Workspace.objects.order_by("slug")
    if slug:
        workspaces = workspaces.filter(slug=slug)
        if not workspaces.exists():
            raise CommandError(f"no workspace {slug!r}")
    return workspaces
