"""``manage.py offload_reclaim [--dry-run] [--workspace SLUG] [--older-than SECONDS]``:
remove what requests that died left in the offload storage (``records.reclaim``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from reduction_app.management.workspaces import add_workspace_option, workspaces_chosen
from reduction_app.records.reclaim import ReclaimReport, offload_reclaim

SHOWN = 20
"""Objects listed per workspace; the rest are counted."""


def _seconds(text: str) -> int:
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


class Command(BaseCommand):
    help = (
        "Remove offloaded content that requests which died (a killed or timed-out worker, a "
        "lost database connection) stored and never recorded, with their journal rows. A "
        "request's journal rows count as a dead request's once older than --older-than "
        "seconds (default REDUCTION_STAGED_DEAD_SECONDS); younger ones, and content any "
        "file row names, are left alone. Stored content no row names at all goes too."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        add_workspace_option(parser)
        parser.add_argument(
            "--older-than",
            metavar="SECONDS",
            type=_seconds,
            default=None,
            help="Journal rows older than this belong to requests that died (default: "
            f"REDUCTION_STAGED_DEAD_SECONDS, now {settings.REDUCTION_STAGED_DEAD_SECONDS}). "
            "0 treats every request as dead: only when no server is running.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would go; change nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspaces = workspaces_chosen(options["workspace"])
        seconds = options["older_than"]
        if seconds is None:
            seconds = settings.REDUCTION_STAGED_DEAD_SECONDS
        dead_before = timezone.now() - timedelta(seconds=seconds)
        failures = 0
        for workspace in workspaces:
            report = offload_reclaim(
                workspace=workspace, dead_before=dead_before, dry_run=options["dry_run"]
            )
            self._report(report, dry_run=options["dry_run"])
            failures += report.failures
        if failures:
            raise CommandError(
                f"{failures} stored objects could not be removed (logged); run it again",
                returncode=1,
            )

    def _report(self, report: ReclaimReport, *, dry_run: bool) -> None:
        verb = "would remove" if dry_run else "removed"
        self.stdout.write(
            f"{report.workspace.slug}: {report.dead_rows} journal rows of requests that died, "
            f"{report.live_rows} of requests that may be running (left alone); {verb} "
            f"{len(report.removed)} stored objects ({report.removed_bytes:,} bytes)"
        )
        names = list(report.removed)
        for name in names[:SHOWN]:
            self.stdout.write(f"  {name}")
        if len(names) > SHOWN:
            self.stdout.write(f"  ... and {len(names) - SHOWN} more")
