"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CONVERSATIONS = REPO / "data" / "conversations"
"""The real recorded agent conversations shipped with the project (see its README)."""


@pytest.fixture(scope="session")
def conversations_dir() -> Path:
    return CONVERSATIONS
