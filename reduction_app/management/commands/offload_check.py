"""``manage.py offload_check [--workspace SLUG] [--deep]``: whether every stored byte of
offloaded content is accounted for and whole (``records.integrity``); exit status 1 when
something is not."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reduction_app.management.workspaces import add_workspace_option, workspaces_chosen
from reduction_app.records.integrity import WorkspaceCheck, damage_lines, offload_check

SHOWN = 20
"""Names listed per kind of problem; the rest are counted."""


class Command(BaseCommand):
    help = (
        "Check that the offload storage, the file rows and the quota usage agree: report "
        "stored content no row names, rows whose content is not stored, damaged content (a "
        "stored size, or with --deep a SHA-256, other than its rows recorded: each named "
        "with the conversations and paths that point at it), and a recorded usage that "
        "differs from the bytes stored. Changes nothing; exits with 1 when anything is "
        "found. Content that only a request's journal names (a request storing at that "
        "moment, or one that died, until offload_reclaim removes it) and the temporary files "
        "of unfinished writes are counted apart, not as faults."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_workspace_option(parser)
        parser.add_argument(
            "--deep",
            action="store_true",
            help="Also read every stored object the rows name and check its SHA-256 (reads "
            "all the content: one download per object on S3).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspaces = workspaces_chosen(options["workspace"])
        deep = options["deep"]
        checks = [offload_check(workspace=workspace, deep=deep) for workspace in workspaces]
        for check in checks:
            self._report(check)
        if not all(check.consistent for check in checks):
            raise CommandError("offloaded content is not all accounted for", returncode=1)

    def _report(self, check: WorkspaceCheck) -> None:
        slug = check.workspace.slug
        self.stdout.write(
            f"{slug}: {check.stored} stored, {check.named} named by rows; usage recorded "
            f"{check.usage_recorded:,} bytes, stored {check.usage_stored:,} bytes"
            + ("; SHA-256 of each checked" if check.deep else "")
            + (": consistent" if check.consistent else "")
        )
        if check.unnamed:
            size = sum(check.unnamed.values())
            self._list(
                f"{slug}: {len(check.unnamed)} stored, named by no row ({size:,} bytes):",
                list(check.unnamed),
            )
        if check.staged:
            size = sum(check.staged.values())
            self.stdout.write(
                f"{slug}: {len(check.staged)} stored, named only by requests' journals "
                f"({size:,} bytes): being stored now, or left by requests that died until "
                "offload_reclaim removes them"
            )
        if check.unfinished:
            size = sum(check.unfinished.values())
            self.stdout.write(
                f"{slug}: {len(check.unfinished)} unfinished writes ({size:,} bytes): being "
                "written now, or left by workers killed while writing until offload_reclaim "
                "removes them"
            )
        if check.damaged:
            self.stdout.write(
                f"{slug}: {len(check.damaged)} damaged, their bytes not those their rows "
                "recorded (offload_reclaim repairs each from a good copy where one exists):"
            )
            for line in damage_lines(check.damaged, SHOWN):
                self.stdout.write(line)
        if check.missing:
            self._list(
                f"{slug}: {len(check.missing)} named by rows, not stored:",
                [f"{name} ({', '.join(paths)})" for name, paths in check.missing.items()],
            )
        if check.usage_recorded != check.usage_stored:
            self.stdout.write(
                f"{slug}: usage recorded {check.usage_recorded:,} bytes differs from the "
                f"{check.usage_stored:,} bytes stored for its rows"
            )

    def _list(self, heading: str, lines: list[str]) -> None:
        self.stdout.write(heading)
        for line in lines[:SHOWN]:
            self.stdout.write(f"  {line}")
        if len(lines) > SHOWN:
            self.stdout.write(f"  ... and {len(lines) - SHOWN} more")
