"""Screenshots of the dashboard's pages for docs/dashboard.md: ``make screenshots``
(``python scripts/screenshots.py [--out DIR] [--page NAME ...] [--small]``).

A temporary SQLite database is migrated and filled by ``seed_demo``, the development
server runs on a free port, and Debian's Chromium (``REDUCTION_CHROMIUM``) shoots each
page as a 1,280 x 800 window first shows it. Only the PNG files are kept (``docs/img/``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("REDUCTION_CHROMIUM", "/usr/bin/chromium")
USER, PASSWORD = "screenshots", "a screenshot password"
START_SECONDS = 60.0


@dataclass(frozen=True)
class Shot:
    """One picture: its file name (without ``.png``), what it shows, and how to reach it
    from what the seeded database holds (``ids``: the first seeded conversation's id, a
    saved config's id, an offloaded file's path)."""

    name: str
    caption: str
    address: Callable[[Mapping[str, str]], str]
    ready: str = "main"
    """A selector that is on the page once it is drawn (charts and htmx parts included)."""


SHOTS: tuple[Shot, ...] = (
    Shot("overview", "The overview", lambda ids: "/", "main canvas, main"),
    Shot("conversations", "The conversation list", lambda ids: "/conversations/"),
    Shot(
        "conversation",
        "A conversation: the context-window chart and the timeline",
        lambda ids: f"/conversations/{ids['conversation']}/",
        "main canvas, main",
    ),
    Shot("events", "The events", lambda ids: "/events/"),
    Shot("files", "The offloaded files", lambda ids: "/files/"),
    Shot("configs", "The configs", lambda ids: "/configs/"),
    Shot(
        "compare",
        "Compare: one conversation under no reduction and a saved config",
        lambda ids: (
            f"/compare/?conversation={ids['conversation_pk']}&config=none"
            f"&config={ids['config']}&baseline=first"
        ),
        "main canvas, main",
    ),
    Shot(
        "tune",
        "Tune: sliders for the knobs, the chart and the totals",
        lambda ids: f"/tune/?conversation={ids['conversation_pk']}",
        "main canvas, main",
    ),
    Shot("sweep", "Sweep: a grid over several recorded conversations", lambda ids: "/sweep/"),
    Shot("imports", "Importing recordings", lambda ids: "/imports/"),
    Shot("prices", "Prices", lambda ids: "/prices/"),
    Shot("keys", "API keys", lambda ids: "/keys/"),
)
BY_NAME = {shot.name: shot for shot in SHOTS}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _manage(env: Mapping[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=dict(env), check=True)


def _ids(env: Mapping[str, str]) -> dict[str, str]:
    """The ids the addresses need, read from the seeded database by a child process (this
    one never loads Django, so the database it reads is the temporary one)."""
    code = (
        "import django, json; django.setup()\n"
        "from reduction_app.models import ConfigProfile, Conversation\n"
        "c = Conversation.objects.filter(workspace__slug='demo', source='')"
        ".exclude(events=None).order_by('id').first()\n"
        "p = ConfigProfile.objects.filter(workspace__slug='demo').order_by('id').first()\n"
        "print(json.dumps({'conversation': c.client_id, 'conversation_pk': str(c.pk),"
        " 'config': str(p.pk)}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return dict(json.loads(out.strip().splitlines()[-1]))


@contextmanager
def _server(env: Mapping[str, str]) -> Iterator[str]:
    """The development server on a free port, until the block ends."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                urllib.request.urlopen(f"{base}/accounts/login/", timeout=5).close()
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"the development server did not answer on {base}") from None
                time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


def shoot(
    base: str, ids: Mapping[str, str], shots: Sequence[Shot], out: Path, size: tuple[int, int]
) -> list[Path]:
    """Sign in, then one PNG per shot in ``out``; returns their paths."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium is not installed at {CHROMIUM} (apt-get install chromium)")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page: Any = browser.new_page(viewport={"width": size[0], "height": size[1]})
        page.set_default_timeout(60_000)
        page.goto(f"{base}/accounts/login/")
        page.fill("#id_username", USER)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")
        for shot in shots:
            page.goto(base + shot.address(ids))
            page.wait_for_load_state("networkidle")
            page.wait_for_selector(shot.ready)
            # Chart.js animates its first drawing.
            page.wait_for_timeout(800)
            path = out / f"{shot.name}.png"
            page.screenshot(path=str(path))
            written.append(path)
            print(
                f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {shot.caption}"
            )
        browser.close()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    parser.add_argument(
        "--page", action="append", choices=list(BY_NAME), help="Only this page (repeatable)."
    )
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument(
        "--small", action="store_true", help="Seed only a few conversations (quicker)."
    )
    args = parser.parse_args(argv)
    shots = [BY_NAME[name] for name in args.page] if args.page else list(SHOTS)
    with tempfile.TemporaryDirectory(prefix="reduction-screenshots-") as tmp:
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
            "REDUCTION_MEDIA_ROOT": f"{tmp}/media",
            "DJANGO_DEBUG": "1",
        }
        env.pop("TEST_DATABASE_URL", None)
        print("Migrating and seeding a temporary database ...", flush=True)
        _manage(env, "migrate", "--noinput", "--verbosity", "0")
        seed = ["seed_demo", "--user", USER, "--password", PASSWORD, "--verbosity", "0"]
        _manage(env, *seed, *(["--small"] if args.small else []))
        ids = _ids(env)
        with _server(env) as base:
            shoot(base, ids, shots, args.out.resolve(), (args.width, args.height))
    return 0


if __name__ == "__main__":
    sys.exit(main())
