"""``manage.py seed_demo [--user NAME --password PW] [--site URL] [--reset] [--small]
[--recordings DIR]``: fill the demo workspace with realistic data made through the engine
(``reduction_app/demo/``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import reverse

from reduction_app.demo import SeedReport, demo_member_set, demo_seed
from simulator.recordings_folder import RecordingsNotFound, require_recordings

COUNTS = (
    ("conversations", "conversations"),
    ("configs", "configs"),
    ("config_versions", "config versions"),
    ("events", "events"),
    ("truncation_events", "truncation events"),
    ("clear_events", "clear events"),
    ("files", "offloaded files"),
    ("members", "members"),
)


class Command(BaseCommand):
    help = (
        "Fill the demo workspace with conversations of a scripted agent running real tools "
        "over real source trees through the engine, plus real recordings to replay when "
        "their folder is there. Idempotent: what is there already is kept."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--user", help="Make this user a member of the demo workspace (created if new)."
        )
        parser.add_argument("--password", help="The user's password (set when given).")
        parser.add_argument(
            "--site",
            default="",
            help="The address the site is served on (http://127.0.0.1:8000), for the sign-in "
            "link printed at the end.",
        )
        parser.add_argument(
            "--reset",
            action="store_true",
            help="Empty the demo workspace first (its members and API keys stay).",
        )
        parser.add_argument(
            "--small", action="store_true", help="Seed only a few conversations (for tests)."
        )
        parser.add_argument(
            "--recordings",
            type=Path,
            metavar="DIR",
            help="The folder of recorded agent runs to import (default: the "
            "REDUCTION_RECORDINGS_DIR setting; without that folder, none are imported).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        username, password = options["user"], options["password"]
        if password and not username:
            raise CommandError("--password needs --user")
        if username and password:
            try:
                validate_password(password)
            except ValidationError as exc:
                self.stderr.write(
                    f"Warning: a weak password for {username!r}: {' '.join(exc.messages)}"
                )
        recordings = options["recordings"]
        try:
            if recordings is not None:
                require_recordings(recordings, option="--recordings")
            report = demo_seed(
                small=options["small"],
                reset=options["reset"],
                say=self.stdout.write,
                recordings=recordings,
            )
        except (FileNotFoundError, RecordingsNotFound) as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(_recordings_line(report))
        counts = report.counts
        if username:
            try:
                _, created = demo_member_set(
                    workspace=report.workspace, username=username, password=password
                )
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            counts["members"] = report.workspace.members.count()
        summary = ", ".join(f"{counts[key]:,} {label}" for key, label in COUNTS)
        if report.already_seeded:
            self.stdout.write(
                f"Workspace {report.workspace.slug!r} is already seeded ({summary}); "
                "nothing added. Use --reset to seed it again."
            )
        else:
            self.stdout.write(
                f"Seeded workspace {report.workspace.slug!r} in {report.seconds:.1f} s: "
                f"added {len(report.created)} conversations and {report.profiles_created} "
                f"configs; it holds {summary}."
            )
        if username:
            verb = "Created" if created else "Updated"
            self.stdout.write(f"{verb} user {username!r}, a member of {report.workspace.slug!r}.")
            if password:
                login = options["site"].rstrip("/") + reverse("login")
                self.stdout.write(f"Sign in at {login} as {username} / {password}")


def _recordings_line(report: SeedReport) -> str:
    """Which real recordings this run imported, and from where; or why none."""
    if not report.recordings_found:
        missing = RecordingsNotFound(report.recordings, option="--recordings")
        return f"recordings: none imported; {missing}"
    counts = " and ".join(f"{n} {source}" for source, n in report.imported.items())
    line = f"recordings: {counts} runs imported from {report.recordings}"
    if report.imported_before:
        line += f" ({report.imported_before} were there already)"
    return line
