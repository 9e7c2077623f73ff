"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
CONVERSATIONS = REPO / "data" / "conversations"
"""The real recorded agent conversations shipped with the project (see its README)."""


@pytest.fixture(scope="session")
def conversations_dir() -> Path:
    return CONVERSATIONS


def temporary_offload_storage(settings: Any, tmp_path: Path) -> Path:
    """Point the ``offload`` storage at a fresh folder under ``tmp_path``; return it."""
    folder = tmp_path / "offload"
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": folder},
        },
    }
    return folder
