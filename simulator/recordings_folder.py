"""Where the recorded agent runs are kept: the folder of recordings from public
repositories (not part of this one) that ``python -m simulator calibrate``,
``manage.py seed_demo`` and the tests read.

This module only says where the folder is and whether it is there; it reads no
recording and imports neither the engine nor Django (the settings import it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "DEFAULT_RECORDINGS_DIR",
    "RECORDINGS_VARIABLE",
    "RecordingsNotFound",
    "recordings_dir",
    "require_recordings",
]

RECORDINGS_VARIABLE = "REDUCTION_RECORDINGS_DIR"
"""The environment variable that names the recordings folder."""
DEFAULT_RECORDINGS_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "conversations"
"""The folder used when the variable is not set: ``shared/data/conversations`` beside
the checkout."""


class RecordingsNotFound(Exception):
    """The recordings folder is not there. The message names the folder and how to point
    at another one (``option``: the command-line option that also can)."""

    def __init__(self, folder: Path, *, option: str | None = None) -> None:
        how = f"set {RECORDINGS_VARIABLE}"
        if option:
            how = f"pass {option} DIR or {how}"
        message = (
            f"no recordings at {folder}: {how} to the folder of recorded agent runs "
            "(a copy of shared/data/conversations)"
        )
        super().__init__(message)
        self.folder = folder


def recordings_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """The recordings folder: ``$REDUCTION_RECORDINGS_DIR`` (made absolute) when it is set
    and not blank, else :data:`DEFAULT_RECORDINGS_DIR`. The folder may not exist."""
    value = environ.get(RECORDINGS_VARIABLE, "").strip()
    return Path(value).expanduser().absolute() if value else DEFAULT_RECORDINGS_DIR


def require_recordings(folder: Path | None = None, *, option: str | None = None) -> Path:
    """``folder`` (by default :func:`recordings_dir`) when it is a folder; else raise
    :class:`RecordingsNotFound` naming it (and ``option``, where a command has one)."""
    folder = recordings_dir() if folder is None else folder
    if not folder.is_dir():
        raise RecordingsNotFound(folder, option=option)
    return folder
