"""reduction_app.static_files: a server with DEBUG off refuses to start, saying what to
run, when the static files its pages name are not collected."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from benchmarks.server import GUNICORN_ARGS, ROOT, server_env
from reduction_app.static_files import static_files_problem

RUN = "run `python manage.py collectstatic` (`make serve` does) before starting the server"


@pytest.fixture
def production_static(settings: Any, tmp_path: Path) -> Path:
    """DEBUG off, with the manifest storage (without whitenoise's compression, which only
    makes collecting slower) writing to an empty folder."""
    settings.DEBUG = False
    settings.STATIC_ROOT = tmp_path / "static"
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
    }
    return Path(settings.STATIC_ROOT)


def test_static_files_problem_without_collectstatic(production_static: Path) -> None:
    assert static_files_problem() == (
        f"DEBUG is off and the static files are not collected: {production_static} holds no "
        f"staticfiles.json; {RUN}"
    )


def test_static_files_problem_none_once_collected(production_static: Path) -> None:
    call_command("collectstatic", interactive=False, verbosity=0)
    assert static_files_problem() is None


def test_static_files_problem_names_a_file_collected_before_it_existed(
    production_static: Path,
) -> None:
    call_command("collectstatic", interactive=False, verbosity=0)
    manifest = production_static / "staticfiles.json"
    stored = json.loads(manifest.read_text())
    del stored["paths"]["admin/css/base.css"]
    manifest.write_text(json.dumps(stored))
    assert static_files_problem() == (
        f"DEBUG is off and 1 static files are missing from those collected in "
        f"{production_static} (the first: admin/css/base.css); {RUN}"
    )


def test_static_files_problem_none_with_debug_on(settings: Any) -> None:
    settings.DEBUG = True
    assert static_files_problem() is None


@pytest.mark.slow
def test_gunicorn_refuses_to_start_without_collectstatic(tmp_path: Path) -> None:
    """The production server started as ``make serve`` starts it, minus collectstatic:
    gunicorn exits (its worker fails to boot) with the message in its log."""
    env = server_env(tmp_path, workers=1)
    done = subprocess.run(
        [sys.executable, "-m", "gunicorn", *GUNICORN_ARGS],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    expected = (
        "django.core.exceptions.ImproperlyConfigured: DEBUG is off and the static files are "
        f"not collected: {tmp_path / 'static'} holds no staticfiles.json; {RUN}"
    )
    assert expected in done.stderr.splitlines(), done.stderr
