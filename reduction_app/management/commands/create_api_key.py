"""``manage.py create_api_key NAME [--workspace W]``: a new REST API key, printed once."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reduction_app.errors import ServiceError
from reduction_app.workspaces.services import api_key_create, workspace_get_or_create


class Command(BaseCommand):
    help = "Create an API key for a workspace (created if needed) and print it as the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="A name for the key, to recognise it later.")
        parser.add_argument(
            "--workspace", default="default", help="The workspace (default: 'default')."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = workspace_get_or_create(name=options["workspace"])
        try:
            key, raw = api_key_create(workspace=workspace, name=options["name"])
        except ServiceError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"Created key {key.name!r} ({key.prefix}…) for workspace {workspace.slug!r}."
        )
        self.stdout.write("Store it now: it is shown only once.")
        self.stdout.write(raw)
