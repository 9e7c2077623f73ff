"""``scripts/screenshots.py`` and docs/dashboard.md agree: every page it shoots is shown
there under its caption, and every picture is in docs/img/."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "docs" / "dashboard.md"


def screenshots_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "screenshots", REPO / "scripts" / "screenshots.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up by name.
    sys.modules.setdefault("screenshots", module)
    spec.loader.exec_module(module)
    return module


def test_every_shot_is_shown_in_the_dashboard_docs_under_its_caption() -> None:
    text = DASHBOARD.read_text()
    shown = re.findall(r"!\[([^\]]+)\]\(img/([\w-]+)\.png\)", text)
    shots = screenshots_module().SHOTS
    assert shown == [(shot.caption, shot.name) for shot in shots]
    for shot in shots:
        assert f"**{shot.caption}**" in text
        assert (REPO / "docs" / "img" / f"{shot.name}.png").is_file(), shot.name


def test_the_readme_picture_is_one_the_command_takes() -> None:
    names = {shot.name for shot in screenshots_module().SHOTS}
    pictures = re.findall(r"\]\(docs/img/([\w-]+)\.png\)", (REPO / "README.md").read_text())
    assert pictures and set(pictures) <= names
