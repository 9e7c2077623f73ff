"""``config/settings.py``: what changes when DEBUG is off, and what a deployment must set.

Each case imports the settings in a new interpreter, since they are read once, from the
environment, at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


SECURITY = (
    "import json, config.settings as s; print(json.dumps({name: getattr(s, name) for name in ("
    "'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SESSION_COOKIE_HTTPONLY', "
    "'CSRF_COOKIE_HTTPONLY', 'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', "
    "'SECURE_HSTS_INCLUDE_SUBDOMAINS', 'SECURE_HSTS_PRELOAD', 'SECURE_PROXY_SSL_HEADER', "
    "'SECURE_CONTENT_TYPE_NOSNIFF', 'X_FRAME_OPTIONS', 'SECURE_REFERRER_POLICY', "
    "'REDUCTION_QUOTA_OFFLOAD_BYTES', 'REDUCTION_RATE_LIMIT')}))"
)
PRODUCTION = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "a-long-random-production-key-" + "k" * 40,
    "DJANGO_ALLOWED_HOSTS": "lab.example.com",
    "DJANGO_SECURE_SSL_REDIRECT": "1",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_SECURE_HSTS_PRELOAD": "1",
    "DJANGO_SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto",
}
"""The environment of a server behind a TLS-terminating proxy, as README "Security"
gives it."""


def run_with(code: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "REDUCTION_"))
        and k not in ("DATABASE_URL", "TEST_DATABASE_URL")
    }
    command = [sys.executable, *(("-c", code) if code else ()), *args]
    return subprocess.run(
        command, cwd=REPO, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def security(**env: str) -> dict[str, object]:
    done = run_with(SECURITY, **env)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, object] = json.loads(done.stdout)
    return loaded


def test_settings_security_in_production() -> None:
    assert security(**PRODUCTION) == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "CSRF_COOKIE_HTTPONLY": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
        "X_FRAME_OPTIONS": "DENY",
        "SECURE_REFERRER_POLICY": "same-origin",
        "REDUCTION_QUOTA_OFFLOAD_BYTES": 1073741824,
        "REDUCTION_RATE_LIMIT": 0,
    }


def test_settings_security_defaults_with_debug_off() -> None:
    """Secure cookies by default; what locks a site into HTTPS or trusts a header is
    opt-in."""
    shown = security(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="k" * 50)
    assert (shown["SESSION_COOKIE_SECURE"], shown["CSRF_COOKIE_SECURE"]) == (True, True)
    assert shown["SECURE_SSL_REDIRECT"] is False
    assert shown["SECURE_HSTS_SECONDS"] == 0
    assert shown["SECURE_PROXY_SSL_HEADER"] is None
    plain_http = security(DJANGO_DEBUG="0", DJANGO_SECRET_KEY="k" * 50, DJANGO_SECURE_COOKIES="0")
    assert (plain_http["SESSION_COOKIE_SECURE"], plain_http["CSRF_COOKIE_SECURE"]) == (False, False)


def test_settings_security_in_development_never_insist_on_https() -> None:
    shown = security(DJANGO_SECURE_SSL_REDIRECT="1", DJANGO_SECURE_HSTS_SECONDS="60")
    assert (shown["SESSION_COOKIE_SECURE"], shown["SECURE_SSL_REDIRECT"]) == (False, False)
    assert shown["SECURE_HSTS_SECONDS"] == 0


def test_settings_quotas_from_the_environment() -> None:
    shown = security(REDUCTION_QUOTA_OFFLOAD_BYTES="0", REDUCTION_RATE_LIMIT="600")
    assert (shown["REDUCTION_QUOTA_OFFLOAD_BYTES"], shown["REDUCTION_RATE_LIMIT"]) == (0, 600)
    done = run_with(SECURITY, REDUCTION_RATE_LIMIT="lots")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: REDUCTION_RATE_LIMIT must be a whole "
        "number from 0, not 'lots'"
    )


BOUNDS = "import config.settings as s; print(s.REDUCTION_MAX_MESSAGES, s.REDUCTION_MAX_OFFLOADS)"


def test_settings_bounds_of_one_request_from_the_environment() -> None:
    for env, shown in (({}, "20000 1000\n"), ({"REDUCTION_MAX_MESSAGES": "0"}, "0 1000\n")):
        done = run_with(BOUNDS, **env)
        assert (done.returncode, done.stdout) == (0, shown), done.stderr
    done = run_with(BOUNDS, REDUCTION_MAX_OFFLOADS="-1")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: REDUCTION_MAX_OFFLOADS must be a whole "
        "number from 0, not '-1'"
    )


def test_settings_check_deploy_finds_nothing_in_production(tmp_path: Path) -> None:
    done = run_with(
        "",
        "manage.py",
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **PRODUCTION,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "System check identified no issues (0 silenced).\n"
