"""``manage.py purge [--older-than DAYS] [--workspace SLUG] [--dry-run]``: delete the
records older than a cutoff, with their offloaded content (``retention.services``)."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from reduction_app.models import Workspace
from reduction_app.retention.services import PurgeReport, purge, retention_purge


def days(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of days: {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"days cannot be negative: {value!r}")
    return number


class Command(BaseCommand):
    help = (
        "Delete conversations (with their transcripts, events, files and simulations), "
        "events and files of no conversation, and finished simulations older than a "
        "cutoff, and the offloaded content no remaining file uses. Without --older-than, "
        "each workspace's own retention_days (workspaces without one keep everything)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=days,
            metavar="DAYS",
            help="Delete what was last written more than DAYS days ago, in every workspace "
            "(or --workspace), whatever its retention_days.",
        )
        parser.add_argument("--workspace", metavar="SLUG", help="Only this workspace.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Say what would be deleted; delete nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = None
        if options["workspace"] is not None:
            workspace = Workspace.objects.filter(slug=options["workspace"]).first()
            if workspace is None:
                raise CommandError(f"workspace {options['workspace']!r} not found")
        now = timezone.now()
        dry_run: bool = options["dry_run"]
        verb = "Would delete" if dry_run else "Deleted"
        older_than: int | None = options["older_than"]
        if older_than is not None:
            try:
                cutoff = now - timedelta(days=older_than)
            except OverflowError:
                raise CommandError(f"--older-than {older_than} goes back too far") from None
            report = purge(cutoff=cutoff, workspace=workspace, dry_run=dry_run)
            where = f"workspace {workspace.slug}" if workspace else "all workspaces"
            self._report(f"{verb} in {where}", cutoff, report, dry_run=dry_run)
            return
        done = retention_purge(now=now, workspace=workspace, dry_run=dry_run)
        if workspace is not None and workspace.retention_days is None:
            self.stdout.write(
                f"Workspace {workspace.slug} has no retention_days: it keeps everything."
            )
        elif not done:
            self.stdout.write(
                "No workspace has retention_days set: nothing to delete "
                "(--older-than DAYS deletes by age)."
            )
        for each in done:
            where = f"workspace {each.workspace.slug} ({each.workspace.retention_days} days)"
            self._report(f"{verb} in {where}", each.cutoff, each.report, dry_run=dry_run)

    def _report(
        self, heading: str, cutoff: datetime, report: PurgeReport, *, dry_run: bool
    ) -> None:
        content = report.content
        self.stdout.write(f"{heading}, before {cutoff:%Y-%m-%d %H:%M:%S} UTC:")
        self.stdout.write(
            f"  conversations {report.conversations} ({report.messages} transcript messages), "
            f"events {report.events}, files {report.files}, simulations "
            f"{report.simulations} ({report.simulation_parts} sweep parts), trace records "
            f"{report.trace_records}"
        )
        self.stdout.write(
            f"  stored files {content.objects}, {content.bytes} bytes "
            f"{'to free' if dry_run else 'freed'}"
        )
        if content.failures:
            failed = "looked up" if dry_run else "removed (logged; their rows are deleted)"
            self.stderr.write(f"  {content.failures} stored files could not be {failed}")
