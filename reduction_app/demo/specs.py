"""What the demo workspace holds: its config profiles, the demo agent's conversations
(the tasks it is given over which tree, under which config, when), and which real
recordings are imported (from the recordings folder, ``settings.REDUCTION_RECORDINGS_DIR``).
Data only; ``reduction_app.demo`` does the seeding."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.corpus import TASKS, Task

__all__ = [
    "DEMO_NAME",
    "DEMO_SLUG",
    "GUESTBOOK",
    "JQUERY",
    "LIVE",
    "OPENHANDS",
    "OPENHANDS_DAYS_AGO",
    "PROFILES",
    "REPO",
    "REPO_MOUNT",
    "SYSTEM_PROMPT",
    "TAU_BENCH",
    "TAU_BENCH_RUNS",
    "TEXT_SUFFIXES",
    "LiveSpec",
    "ProfileSpec",
]

DEMO_NAME = "Demo"
DEMO_SLUG = "demo"
REPO = Path(__file__).resolve().parents[2]
REPO_MOUNT = "reduction-lab"
"""The name this repository's files are shown under (``reduction-lab/README.md``)."""
TEXT_SUFFIXES = (".py", ".html", ".md", ".toml", ".txt")
"""The files grep searches; read_file reads any file of the tree."""
JQUERY = "django/contrib/admin/static/admin/js/vendor/jquery/jquery.js"
GUESTBOOK = f"{REPO_MOUNT}/data/demo/guestbook-export.html"

SYSTEM_PROMPT = (
    "You are a coding agent working in a checkout of Reduction Lab (files under "
    f"{REPO_MOUNT}/) next to the installed Django package (files under django/). "
    "Use list_dir to see a folder, read_file to read a file and grep to search the tree "
    "with a Python regular expression. Cite files as path:line. Answer the user once you "
    "have read enough code to be sure."
)


@dataclass(frozen=True)
class ProfileSpec:
    name: str
    versions: tuple[dict[str, Any], ...]
    """The JSON fields of each version, in order (version 1 first)."""
    days_ago: tuple[float, ...]
    """When each version was made."""


PROFILES: tuple[ProfileSpec, ...] = (
    ProfileSpec("Defaults", ({},), (12.0,)),
    ProfileSpec(
        "Tight (clear at 8k)",
        (
            {
                "max_length_for_trunc": 4_000,
                "max_tokens_for_clear": 8_000,
                "clear_retention_suffix_limit": 1,
            },
        ),
        (11.9,),
    ),
    ProfileSpec(
        "Cache-friendly (clear_at_least 4k)",
        (
            {
                "max_length_for_trunc": 20_000,
                "max_tokens_for_clear": 24_000,
                "clear_retention_suffix_limit": 2,
                "clear_at_least_tokens": 4_000,
            },
            # v2: clear earlier, and keep directory listings (small, and re-read often).
            {
                "max_length_for_trunc": 20_000,
                "max_tokens_for_clear": 16_000,
                "clear_retention_suffix_limit": 2,
                "clear_at_least_tokens": 4_000,
                "clear_exclude_tools": ["list_dir"],
            },
        ),
        (11.8, 4.5),
    ),
)


@dataclass(frozen=True)
class LiveSpec:
    """One conversation the demo agent has, live through the engine."""

    client_id: str
    title: str
    profile: str | None
    """The config it runs under; ``None``: no engine, the raw transcript is recorded (no
    events), for replay and compare."""
    version: int
    days_ago: float
    """When it started, before the moment of seeding."""
    tasks: tuple[Task, ...]
    seed: int
    small: bool = False
    """Part of the ``--small`` seed too (tests)."""


def _task(index: int, rounds: tuple[int, int] = (8, 12)) -> Task:
    folder, question = TASKS[index]
    return Task(folder, question, rounds=rounds)


LIVE: tuple[LiveSpec, ...] = (
    LiveSpec(
        "demo-queryset-sql",
        "How a QuerySet becomes SQL",
        "Tight (clear at 8k)",
        1,
        9.4,
        (
            Task(
                "django/db/models/sql",
                TASKS[0][1],
                script=((("read_file", {"path": "django/db/models/sql/compiler.py"}),),),
                rounds=(10, 14),
            ),
            _task(13, (8, 12)),
        ),
        seed=101,
    ),
    LiveSpec(
        "demo-admin-jquery",
        "The jQuery the admin ships, and the changelist",
        "Defaults",
        1,
        8.1,
        (
            Task(
                "django/contrib/admin",
                "Which jQuery does the admin ship, and which of its scripts rely on it?",
                script=(
                    (("list_dir", {"path": "django/contrib/admin/static/admin/js/vendor/jquery"}),),
                    (("read_file", {"path": JQUERY}),),
                    (
                        ("grep", {"pattern": r"jquery(\.min)?\.js", "path": "django"}),
                        ("read_file", {"path": "django/contrib/admin/widgets.py"}),
                    ),
                ),
                rounds=(4, 6),
            ),
            _task(10, (6, 9)),
        ),
        seed=202,
        small=True,
    ),
    LiveSpec(
        "demo-engine-tour",
        "How this repository's clear phase picks what to clear",
        "Cache-friendly (clear_at_least 4k)",
        1,
        6.7,
        (
            Task(
                f"{REPO_MOUNT}/reduction_app/engine",
                "How does this repository's clear phase decide which tool results to clear?",
                script=(
                    (
                        (
                            "read_file",
                            {"path": f"{REPO_MOUNT}/reduction_app/engine/_clear/_phase.py"},
                        ),
                    ),
                ),
                rounds=(12, 16),
            ),
            Task(
                f"{REPO_MOUNT}/simulator",
                "And how does the simulator replay a conversation under a config?",
                rounds=(8, 12),
            ),
        ),
        seed=303,
    ),
    LiveSpec(
        "demo-guestbook-xss",
        "A guestbook comment that ran JavaScript (bug #4127)",
        "Tight (clear at 8k)",
        1,
        5.2,
        (
            Task(
                f"{REPO_MOUNT}/data/demo",
                "Support saved the page from bug #4127 (data/demo/guestbook-export.html): a "
                "visitor says a comment ran JavaScript. Find the payload, then check how "
                "Django's templates escape what they render.",
                script=(
                    (("read_file", {"path": GUESTBOOK}),),
                    (
                        ("grep", {"pattern": r"<script", "path": f"{REPO_MOUNT}/data/demo"}),
                        ("grep", {"pattern": r"<script", "path": "django/contrib/admin/templates"}),
                    ),
                    (("read_file", {"path": "django/utils/html.py"}),),
                    (
                        (
                            "grep",
                            {
                                "pattern": r"def (escape|conditional_escape|mark_safe)\b",
                                "path": "django",
                            },
                        ),
                    ),
                ),
                rounds=(0, 0),
            ),
            Task(
                "django/template",
                "Where exactly does autoescaping happen when a template renders a variable?",
                rounds=(6, 9),
            ),
        ),
        seed=404,
        small=True,
    ),
    LiveSpec(
        "demo-http-headers",
        "Request and response headers, and what middleware does to them",
        "Cache-friendly (clear_at_least 4k)",
        2,
        3.3,
        (_task(1, (10, 14)), _task(7, (8, 12))),
        seed=505,
    ),
    LiveSpec(
        "demo-orm-long-session",
        "A long session through the ORM, migrations, templates and forms",
        "Defaults",
        1,
        2.2,
        (
            Task(
                "django/db/models",
                "What happens between Model.save() and the INSERT statement?",
                script=(
                    (("read_file", {"path": "django/db/models/base.py"}),),
                    (("read_file", {"path": "django/db/models/query.py"}),),
                ),
                rounds=(14, 18),
            ),
            _task(8, (14, 18)),
            _task(2, (14, 18)),
            _task(3, (14, 18)),
        ),
        seed=606,
    ),
    LiveSpec(
        "demo-auth-hashers",
        "How passwords are hashed and checked",
        "Cache-friendly (clear_at_least 4k)",
        2,
        1.6,
        (_task(4, (12, 16)),),
        seed=707,
    ),
    LiveSpec(
        "demo-recorded-request-cycle",
        "Unreduced recording: a request's way through Django (for replay and compare)",
        None,
        0,
        0.9,
        (_task(5, (14, 18)), _task(6, (12, 16)), _task(7, (12, 16)), _task(9, (12, 16))),
        seed=909,
    ),
    LiveSpec(
        "demo-url-resolving",
        "URL resolving and path converters",
        "Tight (clear at 8k)",
        1,
        0.4,
        (_task(6, (10, 14)),),
        seed=808,
    ),
)

# (file, task id, trial, days ago): tau-bench airline runs of one to sixty messages.
TAU_BENCH = "tau-bench-airline-gpt-4o.json"
TAU_BENCH_RUNS: tuple[tuple[int, int, float], ...] = (
    (3, 0, 9.0),
    (6, 0, 6.0),
    (7, 0, 3.9),
    (9, 0, 2.5),
    (10, 0, 1.0),
)
OPENHANDS = "openhands-multi-swe-bench-llama4.jsonl"
OPENHANDS_DAYS_AGO = (9.8, 7.5, 4.1)
