"""How long ``manage.py purge`` takes on a large database, and that it keeps what it should.

A fresh SQLite file and offload folder are filled with old conversations beside newer
ones, both purge commands run as cron runs them, and exactly the newer records and
their content must be left (``benchmarks/README.md`` says what is filled and run).

    python -m benchmarks.purge [--conversations 2000] [--kept 500] [--readme]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

from benchmarks.common import load_average, machine, table
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block

__all__ = ["README_BLOCKS", "main"]

MESSAGES = 20
FILES = 5
OUTPUT_CHARS = 2_000
SHARED_EVERY = 10
"""Every tenth old conversation repeats an output of a kept one (stored once, kept)."""
PACKAGES = ("Django",)
README_BLOCKS = ("purge",)
"""The block of benchmarks/README.md that ``--readme`` writes."""


def _setup(folder: Path) -> None:
    for name in ("TEST_DATABASE_URL", "OFFLOAD_STORAGE"):
        os.environ.pop(name, None)
    os.environ["DATABASE_URL"] = f"sqlite:///{folder / 'db.sqlite3'}"
    os.environ["REDUCTION_MEDIA_ROOT"] = str(folder / "media")
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)


def _fill(conversations: int, kept: int) -> None:
    """Rows written in bulk, content through the offload storage, times moved back."""
    from datetime import timedelta

    from django.core.files.base import ContentFile
    from django.utils import timezone

    from reduction_app.models import (
        Conversation,
        EventRecord,
        OffloadedFile,
        TranscriptMessage,
    )
    from reduction_app.records.storage import offload_storage, storage_name_for
    from reduction_app.workspaces.services import workspace_get_or_create

    workspace = workspace_get_or_create(name="bench")
    storage = offload_storage()
    now = timezone.now()
    for n in range(conversations + kept):
        old = n < conversations
        when = now - timedelta(days=60 if old else 1)
        row = Conversation.objects.create(
            workspace=workspace, client_id=f"run-{n}", message_count=MESSAGES
        )
        TranscriptMessage.objects.bulk_create(
            TranscriptMessage(
                conversation=row,
                position=i,
                digest=f"{n}-{i}",
                data={"role": "user", "content": f"message {i} of run {n} " * 20},
            )
            for i in range(MESSAGES)
        )
        files, events = [], []
        for i in range(FILES):
            shared = old and i == 0 and n % SHARED_EVERY == 0
            source = conversations + (n % max(kept, 1)) if shared else n
            text = f"output {i} of run {source} ".ljust(OUTPUT_CHARS, "x")
            digest = hashlib.sha256(text.encode()).hexdigest()
            name = storage_name_for(workspace.pk, digest)
            if not storage.exists(name):
                storage.save(name, ContentFile(text.encode()))
            path = f"/tmp/trunc/run-{n}-{i}"
            files.append(
                OffloadedFile(
                    workspace=workspace,
                    conversation=row,
                    path=path,
                    storage_name=name,
                    size_chars=len(text),
                    tokens=len(text) // 4,
                    sha256=digest,
                    phase="truncation",
                )
            )
            events.append(
                EventRecord(
                    workspace=workspace,
                    conversation=row,
                    phase="truncation",
                    kind="tool",
                    offload_path=path,
                    tokens_before=len(text) // 4,
                )
            )
        OffloadedFile.objects.bulk_create(files)
        EventRecord.objects.bulk_create(events)
        Conversation.objects.filter(pk=row.pk).update(updated_at=when, created_at=when)
        OffloadedFile.objects.filter(conversation=row).update(created_at=when)
        EventRecord.objects.filter(conversation=row).update(created_at=when)


def _purge(*args: str) -> tuple[float, list[str]]:
    """``purge --older-than 30`` (and ``args``: ``--dry-run``) through ``call_command``, as
    cron runs it: each batch commits and its content goes at once. Seconds, and its lines."""
    from django.core.management import call_command

    out = io.StringIO()
    start = time.perf_counter()
    with redirect_stdout(out):
        call_command("purge", "--older-than", "30", *args, stdout=out)
    return time.perf_counter() - start, out.getvalue().splitlines()


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=2_000, help="old ones, purged")
    parser.add_argument("--kept", type=int, default=500, help="newer ones, kept")
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.purge", argv, PACKAGES)
    print(machine())
    with tempfile.TemporaryDirectory(prefix="purge-bench-") as scratch:
        folder = Path(scratch)
        _setup(folder)
        start = time.perf_counter()
        _fill(args.conversations, args.kept)
        fill_seconds = time.perf_counter() - start
        print(f"filled in {fill_seconds:.1f} s")
        offload = folder / "media" / "offload"
        stored_before = sum(1 for p in offload.rglob("*") if p.is_file())
        dry_seconds, dry_lines = _purge("--dry-run")
        seconds, lines = _purge()
        stored_after = sum(1 for p in offload.rglob("*") if p.is_file())

        from reduction_app.models import Conversation, OffloadedFile

        kept_files = OffloadedFile.objects.count()
        left = {
            "conversations": Conversation.objects.count(),
            "files": kept_files,
            "stored files": stored_after,
        }
        expected = {
            "conversations": args.kept,
            "files": args.kept * FILES,
            "stored files": args.kept * FILES,
        }
        if left != expected:
            raise SystemExit(f"left {left}, expected {expected}")
    print(*dry_lines, sep="\n")
    print(*lines, sep="\n")
    rows = [
        ["purge --dry-run", f"{dry_seconds:.2f} s"],
        ["purge", f"{seconds:.2f} s"],
    ]
    print(
        f"{args.conversations} old conversations of {MESSAGES} messages and {FILES} files "
        f"each, beside {args.kept} newer ones; {stored_before} stored files before, "
        f"{stored_after} after"
    )
    print(table(["SQLite", "time"], rows))
    end = load_average()
    print(f"load average at the end: {end}")
    if readme is not None:
        what = (
            f"{args.conversations:,} old conversations of {MESSAGES} messages and {FILES} files "
            f"each, beside {args.kept:,} newer ones, on SQLite and the local offload folder; "
            f"{stored_before:,} stored files before the purge, {stored_after:,} after; filled "
            f"in {fill_seconds:.1f} s. What the purge printed:"
        )
        sections = [
            what,
            "```\n" + "\n".join(lines) + "\n```",
            md_table(["`manage.py purge --older-than 30`", "time"], rows),
            f"Left afterwards, as expected: {left['conversations']:,} conversations, "
            f"{left['files']:,} file rows, {left['stored files']:,} stored files.",
        ]
        write_block(readme, README_BLOCKS[0], stamp.block(sections, end))
        print(f"wrote its block of {readme}")
    return {"dry_run_seconds": dry_seconds, "seconds": seconds, "left": left}


if __name__ == "__main__":
    main()
