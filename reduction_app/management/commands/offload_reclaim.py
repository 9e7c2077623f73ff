"""``manage.py offload_reclaim [--dry-run] [--workspace SLUG] [--older-than SECONDS]
[--deep]``: remove what requests that died left in the offload storage, and repair
damaged content from a good copy (``records.reclaim``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from reduction_app.management.workspaces import add_workspace_option, workspaces_chosen
from reduction_app.records.integrity import damage_lines
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
        "file row names, are left alone. Stored content no row names at all goes too, and so "
        "do the temporary files of writes older than that. Stored content whose size (with "
        "--deep, SHA-256) is not what its rows recorded is written again from a good copy, "
        "the same content stored for another workspace, checked by its SHA-256; damaged "
        "content with no good copy is reported, with the conversations and paths that point "
        "at it, and left as it is (exit status 1)."
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
        parser.add_argument(
            "--deep",
            action="store_true",
            help="Find damaged content by its SHA-256 too, reading every stored object the "
            "rows name (one download per object on S3).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        workspaces = workspaces_chosen(options["workspace"])
        seconds = options["older_than"]
        if seconds is None:
            seconds = settings.REDUCTION_STAGED_DEAD_SECONDS
        dead_before = timezone.now() - timedelta(seconds=seconds)
        failures = unrecoverable = 0
        for workspace in workspaces:
            report = offload_reclaim(
                workspace=workspace,
                dead_before=dead_before,
                dry_run=options["dry_run"],
                repair=True,
                deep=options["deep"],
            )
            self._report(report, dry_run=options["dry_run"])
            failures += report.failures
            unrecoverable += len(report.unrecoverable)
        if failures:
            raise CommandError(
                f"{failures} stored objects could not be removed or repaired (logged); run it "
                "again",
                returncode=1,
            )
        if unrecoverable:
            raise CommandError(
                f"{unrecoverable} damaged stored objects have no good copy: reading their "
                "files answers an error until a request offloads the same content again",
                returncode=1,
            )

    def _report(self, report: ReclaimReport, *, dry_run: bool) -> None:
        verb = "would remove" if dry_run else "removed"
        self.stdout.write(
            f"{report.workspace.slug}: {report.dead_rows} journal rows of requests that died, "
            f"{report.live_rows} of requests that may be running (left alone); {verb} "
            f"{len(report.removed)} stored objects ({report.removed_bytes:,} bytes)"
        )
        self._list(list(report.removed))
        slug = report.workspace.slug
        if report.unfinished:
            size = sum(report.unfinished.values())
            self.stdout.write(
                f"{slug}: {verb} {len(report.unfinished)} unfinished writes of workers that "
                f"died ({size:,} bytes)"
            )
            self._list(list(report.unfinished))
        if report.repaired:
            repaired = "would repair" if dry_run else "repaired"
            self.stdout.write(
                f"{slug}: {repaired} {len(report.repaired)} damaged stored objects from a good copy"
            )
            self._list([f"{name} from {source}" for name, source in report.repaired.items()])
        if report.unrecoverable:
            self.stdout.write(
                f"{slug}: {len(report.unrecoverable)} damaged stored objects have no good copy "
                "(left as they are; reading their files answers an error):"
            )
            for line in damage_lines(report.unrecoverable, SHOWN):
                self.stdout.write(line)

    def _list(self, lines: list[str]) -> None:
        for line in lines[:SHOWN]:
            self.stdout.write(f"  {line}")
        if len(lines) > SHOWN:
            self.stdout.write(f"  ... and {len(lines) - SHOWN} more")
