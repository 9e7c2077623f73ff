"""Measured times live in ``benchmarks/README.md`` only, written there by the command that
measured them; the README and the pages of ``docs/`` link to them instead of copying them.

A duration on those pages (a number and a unit of time: ``2.6 s``, ``158 ms``, ``3
minutes``) is a measurement unless it is a setting, a default or a limit the product
keeps, listed below with the words around it.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

DURATION = re.compile(
    r"(?<![\w.$])\d[\d,]*(?:\.\d+)?\s+"
    r"(?:ms|µs|s|sec|seconds?|min|minutes?|h|hours?|days?|weeks?)(?![\w-])"
)
"""A number, a space and a unit of time (``500s``, a plural of status codes, is none)."""

SETTINGS = {
    "dashboard.md": (
        "(all time, 24 h, 7 days)",  # the periods the overview shows
    ),
    "deploying.md": (
        "worker timeout (30 s)",  # gunicorn's --timeout
        "gunicorn's 30 s timeout",
        "30 seconds by default",
        "`21600` (6 h)",  # REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS
    ),
    "simulator.md": (
        "no heartbeat for 60 s",  # an error at the default REDUCTION_JOB_LEASE_SECONDS
        "no worker took it in 6 h",  # the same, of REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS
    ),
}
"""Per page, the durations that are settings: each snippet holds one, with its context."""


def durations(page: Path, *, root: Path = ROOT) -> list[str]:
    """``page:line: duration`` for each duration of ``page`` that is not a setting."""
    allowed = SETTINGS.get(page.name, ()) if page.parent.name == "docs" else ()
    found = []
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for match in DURATION.finditer(line):
            if not any(match[0] in snippet and snippet in line for snippet in allowed):
                found.append(f"{page.relative_to(root)}:{number}: {match[0]}")
    return found


def test_pages_carry_no_measured_times() -> None:
    """Prose, tables and command output alike: a time a run took goes to
    benchmarks/README.md, and the page links there."""
    found = [problem for page in PAGES for problem in durations(page)]
    assert found == [], "measured times outside benchmarks/README.md:\n" + "\n".join(found)


def test_every_allowed_setting_is_still_on_its_page() -> None:
    """The allow-list holds no snippet its page has dropped."""
    stale = [
        f"{name}: {snippet}"
        for name, snippets in SETTINGS.items()
        for snippet in snippets
        if snippet not in (ROOT / "docs" / name).read_text(encoding="utf-8")
    ]
    assert stale == []


def test_duration_check_finds_a_measured_time(tmp_path: Path) -> None:
    """The check itself: times in prose and in output are found; codes and settings not."""
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "simulator.md"
    page.write_text(
        "It took 2.6 s, then 158 ms and 3 minutes.\n"
        "searched 12 configs in 2 rounds in 1.5 s\n"
        "500s and 429s; no heartbeat for 60 s; `timeout 5s`\n",
        encoding="utf-8",
    )
    found = [problem.split(": ", 1)[1] for problem in durations(page, root=tmp_path)]
    assert found == ["2.6 s", "158 ms", "3 minutes", "1.5 s"]
