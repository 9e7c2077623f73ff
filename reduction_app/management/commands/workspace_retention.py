"""``manage.py workspace_retention SLUG [DAYS | forever]``: show or set how long a
workspace keeps its records (``manage.py purge`` deletes the older ones)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reduction_app.errors import ServiceError
from reduction_app.models import Workspace
from reduction_app.workspaces.services import workspace_retention_set


def _kept(workspace: Workspace) -> str:
    days = workspace.retention_days
    if days is None:
        return f"Workspace {workspace.slug} keeps its records forever."
    return f"Workspace {workspace.slug} keeps its records {days} day{'s' * (days != 1)}."


class Command(BaseCommand):
    help = "Show or set the days a workspace keeps its records after their last write."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("workspace", metavar="SLUG", help="The workspace.")
        parser.add_argument(
            "days", nargs="?", metavar="DAYS", help="A number of days, or 'forever'."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"workspace {options['workspace']!r} not found")
        value: str | None = options["days"]
        if value is not None:
            days = None
            if value != "forever":
                try:
                    days = int(value)
                except ValueError:
                    raise CommandError(
                        f"DAYS must be a whole number of days or 'forever', not {value!r}"
                    ) from None
            try:
                workspace = workspace_retention_set(workspace=workspace, days=days)
            except ServiceError as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(_kept(workspace))
