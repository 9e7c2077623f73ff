"""``manage.py import_recordings PATH... [--workspace SLUG] [--format F] [--replace]``:
import recorded agent runs as conversations to replay and compare, all or nothing."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reduction_app.conversations.imports import (
    DuplicateConversation,
    RecordingImportError,
    recordings_import,
)
from reduction_app.errors import ServiceError
from reduction_app.models import Workspace
from simulator.importers import FORMATS, in_words

RECORDING_PATTERNS = ("*.json", "*.jsonl", "*.traj", "*.traj.json", "*.eval")
"""The files of a folder that are read (``*.traj.json`` is one of ``*.json``)."""


def _in_folder(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and any(p.match(pattern) for pattern in RECORDING_PATTERNS)
    )


def recording_paths(arguments: list[str]) -> list[Path]:
    """The files named: files as they are, folders' recordings (recursively), and glob
    patterns' matches, in order, each once; ``CommandError`` for one that names none."""
    out: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_file():
            found = [path]
        elif path.is_dir():
            found = _in_folder(path)
            if not found:
                raise CommandError(f"{argument}: no recordings in this folder", returncode=2)
        else:
            matches = sorted(Path(m) for m in glob.glob(argument, recursive=True))
            found = [f for m in matches for f in ([m] if m.is_file() else _in_folder(m))]
            if not found:
                raise CommandError(f"{argument}: no such file", returncode=2)
        out += [f for f in found if f not in out]
    return out


def _workspace(slug: str | None) -> Workspace:
    if slug:
        workspace = Workspace.objects.filter(slug=slug).first()
        if workspace is None:
            raise CommandError(f"no workspace {slug!r}", returncode=2)
        return workspace
    slugs = list(Workspace.objects.order_by("slug").values_list("slug", flat=True)[:2])
    if len(slugs) != 1:
        there = "there is none" if not slugs else "there are several"
        raise CommandError(f"name the workspace with --workspace SLUG ({there})", returncode=2)
    return Workspace.objects.get(slug=slugs[0])


class Command(BaseCommand):
    help = (
        "Import recorded agent runs (files, folders or glob patterns) as conversations to "
        "replay and compare: all of them, or on any error none."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths",
            nargs="+",
            metavar="PATH",
            help="A recording, a folder of them (its *.json, *.jsonl, *.traj, "
            "*.traj.json and *.eval files, recursively) or a glob pattern.",
        )
        parser.add_argument(
            "--workspace",
            metavar="SLUG",
            help="The workspace to import into; may be left out when there is only one.",
        )
        parser.add_argument(
            "--format",
            choices=FORMATS,
            help="Read every file in this format (detected per file otherwise).",
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="Replace conversations with the same ids (refused otherwise).",
        )
        parser.add_argument("--quiet", action="store_true", help="No progress bar.")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = _workspace(options["workspace"])
        paths = recording_paths(options["paths"])
        files = []
        for path in paths:
            try:
                files.append((path.name, path.read_bytes()))
            except OSError as exc:
                problem = f"{path}: cannot read: {exc.strerror or exc}"
                raise CommandError(problem, returncode=2) from exc
        try:
            results = recordings_import(
                workspace=workspace,
                files=files,
                fmt=options["format"],
                replace=options["replace"],
                progress=None if options["quiet"] else self._progress,
            )
        except (RecordingImportError, DuplicateConversation, ServiceError) as exc:
            raise CommandError(f"{exc}; nothing was imported", returncode=2) from exc
        count = 0
        for path, result in zip(paths, results, strict=True):
            conversations = result["conversations"]
            count += len(conversations)
            self.stdout.write(
                f"{path}: {result['format']}, {len(conversations)} "
                f"conversation{'s' if len(conversations) != 1 else ''}"
            )
            for c in conversations:
                self.stdout.write(f"  {c['conversation_id']} ({c['message_count']:,} messages)")
                if c["omits"]:
                    self.stdout.write(f"    {_omits_line(c['omits'], c['omitted_tokens'])}")
        self.stdout.write(
            f"Imported {count} conversation{'s' if count != 1 else ''} from {len(paths)} "
            f"file{'s' if len(paths) != 1 else ''} into workspace {workspace.slug!r}."
        )

    def _progress(self, done: int, total: int) -> None:
        width = 30
        filled = width * done // total
        self.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files read", ending=""
        )
        if done == total:
            self.stderr.write("")
        self.stderr.flush()


def _omits_line(omits: list[str], tokens: int | None) -> str:
    """What a recording left out of what the model was sent, as the Import page says it."""
    size = f": about {tokens:,} tokens a request, by the provider's counts" if tokens else ""
    return f"leaves out {in_words(omits)}{size}"
