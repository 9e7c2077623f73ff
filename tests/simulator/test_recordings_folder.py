"""simulator.recordings_folder: where the recordings are, and the error when they are not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from simulator.recordings_folder import (
    DEFAULT_RECORDINGS_DIR,
    RecordingsNotFound,
    recordings_dir,
    require_recordings,
)
from tests.conftest import REPO


def test_recordings_dir_default_is_shared_beside_the_checkout() -> None:
    assert recordings_dir({}) == REPO.parent / "shared" / "data" / "conversations"
    assert recordings_dir({}) == DEFAULT_RECORDINGS_DIR


def test_recordings_dir_from_the_variable() -> None:
    assert recordings_dir({"REDUCTION_RECORDINGS_DIR": "/srv/runs"}) == Path("/srv/runs")


def test_recordings_dir_relative_variable_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert recordings_dir({"REDUCTION_RECORDINGS_DIR": "runs"}) == tmp_path / "runs"


def test_recordings_dir_blank_variable_is_unset() -> None:
    assert recordings_dir({"REDUCTION_RECORDINGS_DIR": "  "}) == DEFAULT_RECORDINGS_DIR


def test_recordings_dir_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDUCTION_RECORDINGS_DIR", "/srv/runs")
    assert recordings_dir() == Path("/srv/runs")


def test_require_recordings_gives_back_a_folder(tmp_path: Path) -> None:
    assert require_recordings(tmp_path) == tmp_path


def test_require_recordings_names_the_missing_folder(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    with pytest.raises(RecordingsNotFound) as info:
        require_recordings(missing)
    assert str(info.value) == (
        f"no recordings at {missing}: set REDUCTION_RECORDINGS_DIR to the folder of recorded "
        "agent runs (a copy of shared/data/conversations)"
    )
    assert info.value.folder == missing


def test_require_recordings_names_the_option_too(tmp_path: Path) -> None:
    file = tmp_path / "a-file"
    file.write_text("", encoding="utf-8")
    with pytest.raises(RecordingsNotFound) as info:
        require_recordings(file, option="--recordings")
    assert str(info.value) == (
        f"no recordings at {file}: pass --recordings DIR or set REDUCTION_RECORDINGS_DIR to "
        "the folder of recorded agent runs (a copy of shared/data/conversations)"
    )


def test_require_recordings_defaults_to_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDUCTION_RECORDINGS_DIR", "/nonexistent")
    with pytest.raises(RecordingsNotFound) as info:
        require_recordings()
    assert info.value.folder == Path("/nonexistent")


def test_recordings_folder_imports_neither_the_engine_nor_django() -> None:
    """The settings import it; so may a script that has nothing else installed."""
    code = (
        "import sys\n"
        "import simulator.recordings_folder\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'django', 'reduction_app'}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
