"""``config/settings.py``: what changes when DEBUG is off, and what a deployment must set.

Each case imports the settings in a new interpreter, since they are read once, from the
environment, at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO

SHOW = (
    "import json, config.settings as s; print(json.dumps({"
    "'development_key': s.SECRET_KEY == s.DEVELOPMENT_SECRET_KEY, "
    "'static': s.STORAGES['staticfiles']['BACKEND'], "
    "'finders': s.WHITENOISE_USE_FINDERS, "
    "'conn_max_age': s.DATABASES['default']['CONN_MAX_AGE'], "
    "'sqlite': s.DATABASES['default'].get('OPTIONS'), "
    "'csrf_origins': s.CSRF_TRUSTED_ORIGINS}))"
)


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DJANGO_") and k not in ("DATABASE_URL", "TEST_DATABASE_URL")
    }
    return subprocess.run(
        [sys.executable, "-c", SHOW],
        cwd=REPO,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def shown(**env: str) -> dict[str, object]:
    done = settings_with(**env)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, object] = json.loads(done.stdout)
    return loaded


def test_settings_refuse_the_development_key_with_debug_off() -> None:
    done = settings_with(DJANGO_DEBUG="0")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: DJANGO_SECRET_KEY is not set and DEBUG "
        "is off (DJANGO_DEBUG=0). Set DJANGO_SECRET_KEY to a long random value and keep it "
        "(sessions are signed with it), for example "
        "DJANGO_SECRET_KEY=\"$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')\"; "
        "or, for a server only you reach on this machine, set DJANGO_ALLOW_INSECURE_KEY=1 to "
        "run on the development key."
    )


def test_settings_take_the_development_key_with_debug_off_on_request() -> None:
    assert shown(DJANGO_DEBUG="0", DJANGO_ALLOW_INSECURE_KEY="1")["development_key"] is True


def test_settings_with_debug_off_serve_collected_hashed_static_files() -> None:
    settings = shown(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="k" * 50)
    assert settings["development_key"] is False
    assert settings["static"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert settings["finders"] is False
    assert settings["conn_max_age"] == 60


def test_settings_in_development_serve_static_files_from_the_apps() -> None:
    settings = shown()
    assert settings["development_key"] is True
    assert settings["static"] == "whitenoise.storage.CompressedStaticFilesStorage"
    assert settings["finders"] is True
    assert settings["conn_max_age"] == 0


def test_settings_sqlite_takes_the_write_lock_up_front_in_wal_mode() -> None:
    for env in ({}, {"DATABASE_URL": "sqlite:////tmp/elsewhere.sqlite3"}):
        assert shown(**env)["sqlite"] == {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        }
    assert shown(DATABASE_URL="postgres://u:p@db.example:5432/lab")["sqlite"] is None


def test_settings_csrf_trusted_origins_from_the_environment() -> None:
    origins = "https://lab.example.com, https://lab2.example.com"
    assert shown(DJANGO_CSRF_TRUSTED_ORIGINS=origins)["csrf_origins"] == [
        "https://lab.example.com",
        "https://lab2.example.com",
    ]
