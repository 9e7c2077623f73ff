"""``manage.py api_keys [--workspace W]`` lists keys; ``--revoke PREFIX`` revokes one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reduction_app.models import ApiKey
from reduction_app.workspaces.services import api_key_revoke


class Command(BaseCommand):
    help = "List API keys (never the keys themselves), or revoke one by its prefix."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--workspace", help="Only this workspace's keys (its slug).")
        parser.add_argument("--revoke", metavar="PREFIX", help="Revoke the key with this prefix.")

    def handle(self, *args: Any, **options: Any) -> None:
        keys = ApiKey.objects.select_related("workspace").order_by("workspace__slug", "created_at")
        if options["workspace"]:
            keys = keys.filter(workspace__slug=options["workspace"])
        if options["revoke"]:
            prefix = options["revoke"].rstrip("…")
            matches = list(keys.filter(prefix=prefix))
            if not matches:
                raise CommandError(f"no key with prefix {prefix!r}")
            if len(matches) > 1:
                raise CommandError(f"{len(matches)} keys have prefix {prefix!r}; add --workspace")
            key = api_key_revoke(key=matches[0])
            self.stdout.write(
                f"Revoked key {key.name!r} ({key.prefix}…) of workspace {key.workspace.slug!r}."
            )
            return
        for key in keys:
            used = key.last_used_at.isoformat(timespec="seconds") if key.last_used_at else "never"
            state = "revoked" if key.revoked_at else "live"
            self.stdout.write(
                f"{key.workspace.slug}\t{key.prefix}…\t{key.name}\t{state}\tlast used {used}"
            )
