"""What the quotas cost a request, measured in-process with Django's test client on a
fresh SQLite database: the rate limit on and off, and the offload quota on and off in
workspaces holding up to 100,000 files (benchmarks/README.md, "What the quotas cost").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import load_average
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block

__all__ = ["README_BLOCKS", "main"]

PACKAGES = ("Django",)
README_BLOCKS = ("quotas",)
"""The block of benchmarks/README.md that ``--readme`` writes."""
FILES = (0, 10_000, 100_000)


def _setup(folder: Path) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DATABASE_URL=f"sqlite:///{folder / 'db.sqlite3'}",
        REDUCTION_MEDIA_ROOT=str(folder / "media"),
    )
    os.environ.pop("TEST_DATABASE_URL", None)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _median_ms(run: Callable[[int], Any], count: int) -> float:
    times = []
    for n in range(count):
        start = time.perf_counter()
        run(n)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    readme = readme_path(args, *README_BLOCKS)
    stamp = Stamp.take("benchmarks.quotas", argv, PACKAGES)
    rates: list[tuple[str, float]] = []
    offloads: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        _setup(Path(tmp))
        from django.conf import settings
        from django.test import Client

        from reduction_app.models import OffloadedFile
        from reduction_app.workspaces.quotas import offload_usage
        from reduction_app.workspaces.services import api_key_create, workspace_get_or_create

        settings.ALLOWED_HOSTS = ["testserver"]
        workspace = workspace_get_or_create(name="bench")
        _, raw = api_key_create(workspace=workspace, name="bench")
        client = Client(headers={"Authorization": f"Bearer {raw}"})
        print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")

        def tool(_: int) -> None:
            assert client.get("/api/v1/tools/read_file").status_code == 200

        for limit, label in ((0, "off"), (10**9, "on"), (0, "off"), (10**9, "on")):
            settings.REDUCTION_RATE_LIMIT = limit
            ms = _median_ms(tool, args.requests)
            rates.append((label, ms))
            print(f"rate limit {label}: GET /tools/read_file {ms:.3f} ms")
        from reduction_app.workspaces.rates import rate_limit_count

        def upsert(_: int) -> None:
            rate_limit_count(workspace=workspace)

        settings.REDUCTION_RATE_LIMIT = 10**9
        upsert_ms = _median_ms(upsert, args.requests * 10)
        print(f"rate limit: the upsert alone {upsert_ms:.3f} ms")
        settings.REDUCTION_RATE_LIMIT = 0

        from django.db import transaction

        from reduction_app.workspaces.quotas import offload_bytes_add

        def quota_step(n: int) -> None:
            # Rolled back: the step as a request runs it, with nothing left behind.
            with transaction.atomic():
                offload_bytes_add(
                    workspace=workspace, new_sizes={f"ws{workspace.pk}/zz/{n}.txt": 2048}
                )
                transaction.set_rollback(True)

        def empty(_: int) -> None:
            with transaction.atomic():
                transaction.set_rollback(True)

        empty_ms = _median_ms(empty, args.requests * 3)
        print(f"an empty transaction, rolled back {empty_ms:.3f} ms")
        counter = iter(range(10**9))

        def truncate(_: int) -> None:
            n = next(counter)
            body = {
                "config": {"max_length_for_trunc": 100},
                "tool_name": "grep",
                "tool_call_id": f"call_{n}",
                "result": f"{n:08d}" + "x" * 2040,
            }
            response = client.post("/api/v1/truncate", body, content_type="application/json")
            assert response.status_code == 200, response.content

        for files in FILES:
            have = OffloadedFile.objects.filter(workspace=workspace).count()
            OffloadedFile.objects.bulk_create(
                OffloadedFile(
                    workspace=workspace,
                    path=f"/seed/{n}",
                    storage_name=f"ws{workspace.pk}/aa/{n:064d}.txt",
                    size_chars=2048,
                    size_bytes=2048,
                    tokens=512,
                    sha256=f"{n:064d}",
                    phase="truncation",
                )
                for n in range(have, files)
            )
            row: dict[str, Any] = {"files": files}
            for quota, label in ((0, "off"), (10**15, "on")):
                settings.REDUCTION_QUOTA_OFFLOAD_BYTES = quota
                ms = _median_ms(truncate, args.requests)
                row[label] = ms
                print(f"{files:>7} files, quota {label}: POST /truncate {ms:.3f} ms")
            start = time.perf_counter()
            for _ in range(20):
                offload_usage(workspace=workspace)
            usage_ms = (time.perf_counter() - start) / 20 * 1000
            print(f"{files:>7} files: the usage counted from the rows {usage_ms:.3f} ms")
            settings.REDUCTION_QUOTA_OFFLOAD_BYTES = 10**15
            step_ms = _median_ms(quota_step, args.requests * 3)
            print(f"{files:>7} files: the quota step in its own transaction {step_ms:.3f} ms")
            offloads.append({**row, "usage": usage_ms, "step": step_ms})
        print(f"load average at the end {os.getloadavg()[0]:.2f}")
    if readme is not None:
        sections = markdown(args.requests, rates, upsert_ms, empty_ms, offloads)
        write_block(readme, README_BLOCKS[0], stamp.block(sections, load_average()))
        print(f"wrote its block of {readme}")
    return 0


def markdown(
    requests: int,
    rates: list[tuple[str, float]],
    upsert_ms: float,
    empty_ms: float,
    offloads: list[dict[str, Any]],
) -> list[str]:
    """The figures as the README shows them: the rate limit, the offload quota, and what
    each adds to a request."""
    rate_rows = [
        [f"`GET /api/v1/tools/read_file`, rate limit {label}", f"{ms:.3f}"] for label, ms in rates
    ]
    rate_rows += [
        ["the rate limit's upsert alone", f"{upsert_ms:.3f}"],
        ["an empty transaction, rolled back", f"{empty_ms:.3f}"],
    ]
    quota_rows = [
        [
            f"{r['files']:,}",
            f"{r['off']:.3f}",
            f"{r['on']:.3f}",
            f"{r['on'] - r['off']:+.3f}",
            f"{r['step']:.3f}",
            f"{r['usage']:.3f}",
        ]
        for r in offloads
    ]
    steps = [r["step"] for r in offloads]
    usage = ", ".join(f"{r['usage']:.2f}" for r in offloads)
    files = ", ".join(f"{r['files']:,}" for r in offloads)
    return [
        f"Medians of {requests} requests (of the upsert, {requests * 10}; of the quota step "
        f"and the empty transaction, {requests * 3}), ms:",
        md_table(["rate limit", "ms"], rate_rows),
        md_table(
            [
                "files in the workspace",
                "`POST /truncate`, quota off",
                "quota on",
                "on - off",
                "the quota step alone",
                "usage counted from the rows",
            ],
            quota_rows,
        ),
        f"The quota step costs **{min(steps):.2f} to {max(steps):.2f} ms** in a workspace "
        f"holding {files} files; counting the usage from the rows instead would cost "
        f"{usage} ms. The rate limit's upsert costs **{upsert_ms:.3f} ms**.",
    ]


if __name__ == "__main__":
    sys.exit(main())
