"""``scripts/screenshots.py`` end to end: a temporary database seeded, the development
server, Chromium, and a PNG the size of the window for each page asked for."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.scripts.test_screenshots import REPO

pytestmark = pytest.mark.slow


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


def test_the_command_shoots_the_pages_it_is_asked_for(tmp_path: Path) -> None:
    out = tmp_path / "img"
    done = subprocess.run(
        [
            sys.executable,
            "scripts/screenshots.py",
            "--small",
            "--out",
            str(out),
            "--page",
            "overview",
            "--page",
            "compare",
            "--width",
            "1000",
            "--height",
            "700",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(p.name for p in out.iterdir()) == ["compare.png", "overview.png"]
    for picture in out.iterdir():
        assert png_size(picture) == (1000, 700)
    assert "compare.png: Compare" in done.stdout
