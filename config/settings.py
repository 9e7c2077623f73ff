"""Django settings for Reduction Lab, driven by the environment.

Every setting a deployment changes is read from an environment variable, with a
default that runs on a laptop with nothing installed (SQLite, a local media folder).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from simulator.recordings_folder import recordings_dir

BASE_DIR = Path(__file__).resolve().parent.parent


def _env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_name(environ: Mapping[str, str], name: str, *, former: str = "") -> str:
    """The variable that sets ``name``: ``name`` itself, unless only ``former`` (the name
    it had before, still read for the deployments that set it) is set."""
    return former if former and name not in environ and former in environ else name


def _env_int(name: str, default: int, *, former: str = "") -> int:
    name = _env_name(os.environ, name, former=former)
    text = os.environ.get(name, str(default)).strip()
    if not text.isdigit():
        raise ImproperlyConfigured(f"{name} must be a whole number from 0, not {text!r}")
    return int(text)


DEBUG = _env_bool("DJANGO_DEBUG", True)
# The development default is only for 127.0.0.1; any real deployment sets its own.
DEVELOPMENT_SECRET_KEY = "insecure-development-key-set-DJANGO_SECRET_KEY-in-production"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or DEVELOPMENT_SECRET_KEY
# With DEBUG off the app is taken to be serving for real: sessions, CSRF tokens and password
# reset links signed with a key printed in this file could be forged by anyone. Starting on
# the development key takes an explicit opt-in, for a production-like server on one's own
# machine.
if (
    not DEBUG
    and SECRET_KEY == DEVELOPMENT_SECRET_KEY
    and not _env_bool("DJANGO_ALLOW_INSECURE_KEY", False)
):
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set and DEBUG is off (DJANGO_DEBUG=0). Set DJANGO_SECRET_KEY "
        "to a long random value and keep it (sessions are signed with it), for example "
        "DJANGO_SECRET_KEY=\"$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')\"; "
        "or, for a server only you reach on this machine, set DJANGO_ALLOW_INSECURE_KEY=1 to "
        "run on the development key."
    )
ALLOWED_HOSTS = [
    host.strip()
    for host in os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")
    if host.strip()
]
# Behind a proxy that terminates TLS, the browser's Origin (https://...) differs from what
# Django sees (http://...): list the public origins here, e.g. https://lab.example.com.
CSRF_TRUSTED_ORIGINS = [
    origin.strip()
    for origin in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",")
    if origin.strip()
]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    # django-ninja's own static Swagger UI for /api/v1/docs (without it, a CDN and an
    # inline script, which the Content-Security-Policy refuses).
    "ninja",
    "django_htmx",
    "template_partials",
    "chartkick.django",
    "django_tasks",
    "django_tasks_db",
    "reduction_app",
]

# Background work (imports, simulations, sweep parts, reclaims: reduction_app/jobs/) goes
# through django-tasks' database backend; `make run` starts a worker (`manage.py
# db_worker`) next to the web server. Each task is declared beside the service it runs;
# a worker imports it by the path stored with it, so none needs listing here.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

MIDDLEWARE = [
    "reduction_app.limits.ApiRequestSizeMiddleware",
    "reduction_app.error_pages.ApiMethodNotAllowedMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "reduction_app.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"

# Headers and cookies for a browser's safety. docs/deploying.md, "Security". Django's defaults for
# the first three, set here so that they are seen.
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
# No script reads the CSRF cookie: pages send the token from the template (hx-headers).
CSRF_COOKIE_HTTPONLY = True
# Every response (reduction_app/csp.py): scripts, styles, images and requests only from
# this site, no plugins, no framing, forms posting only here.
REDUCTION_CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
# With DEBUG off the site is taken to be served over HTTPS: the session and CSRF cookies
# are sent only over it (DJANGO_SECURE_COOKIES=0 for a server reached over plain HTTP).
# What would lock a site into HTTPS, or trust a header, is the deployer's choice: the
# redirect to HTTPS, HSTS, and which header a TLS-terminating proxy sets (an opt-in:
# trusting a header that the proxy does not overwrite lets any client claim HTTPS).
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = not DEBUG and _env_bool("DJANGO_SECURE_COOKIES", True)
SECURE_SSL_REDIRECT = not DEBUG and _env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = 0 if DEBUG else _env_int("DJANGO_SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = _env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
# e.g. X-Forwarded-Proto: the request is HTTPS when that header says "https".
_PROXY_SSL_HEADER = os.environ.get("DJANGO_SECURE_PROXY_SSL_HEADER", "").strip()
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https") if _PROXY_SSL_HEADER else None
)

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "reduction_app.context_processors.dashboard",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"
# In development whitenoise serves static files straight from the apps; with DEBUG off it
# serves what collectstatic put in STATIC_ROOT (`make serve` runs it first).
WHITENOISE_USE_FINDERS = DEBUG
ASGI_APPLICATION = "config.asgi.application"


def _database_from_url(url: str) -> dict[str, object]:
    """Parse a ``postgres://user:pass@host:port/name`` URL into a Django database dict."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    engines = {
        "postgres": "django.db.backends.postgresql",
        "postgresql": "django.db.backends.postgresql",
        "sqlite": "django.db.backends.sqlite3",
    }
    if parts.scheme not in engines:
        raise ValueError(f"DATABASE_URL scheme {parts.scheme!r} is not supported")
    if parts.scheme == "sqlite":
        # sqlite:///relative.db and sqlite:////absolute/path.db, as dj-database-url reads them.
        name = unquote(parts.path[1:] if parts.path.startswith("/") else parts.path)
        return {"ENGINE": engines["sqlite"], "NAME": name or ":memory:"}
    return {
        "ENGINE": engines[parts.scheme],
        "NAME": unquote(parts.path.lstrip("/")),
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


DATABASES = {
    "default": (
        _database_from_url(os.environ["DATABASE_URL"])
        if os.environ.get("DATABASE_URL")
        else {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}
    )
}

# Test runs only: `make test` sets TEST_DATABASE_URL for its PostgreSQL pass, and it wins
# over DATABASE_URL so a deployment's database is never the one tests touch. The test
# runner creates and drops `test_<NAME>` (postgres://postgres@127.0.0.1:5432/test gives
# `test_test`), so the URL's user needs CREATEDB; it connects to the `postgres` database
# to do that.
if os.environ.get("TEST_DATABASE_URL"):
    DATABASES["default"] = _database_from_url(os.environ["TEST_DATABASE_URL"])

# SQLite under several web workers and the task worker: write-ahead logging lets readers
# run beside the one writer, and synchronous=NORMAL syncs the log at checkpoints rather
# than at every commit (a commit stays atomic; a power cut may lose the last few). BEGIN
# IMMEDIATE takes the write lock when a transaction starts, so two transactions that read
# and then write wait for each other (up to `timeout` seconds) instead of one failing
# with "database is locked".
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
    }
# Sync gunicorn workers serve one request at a time, so a worker keeps its connection
# between requests (checked before reuse) rather than opening one per request. The
# development server opens a thread per request, where this would gain nothing.
DATABASES["default"]["CONN_MAX_AGE"] = int(
    os.environ.get("DJANGO_CONN_MAX_AGE", "0" if DEBUG else "60")
)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles"))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("REDUCTION_MEDIA_ROOT", BASE_DIR / "media"))


# Offloaded tool output goes through the "offload" storage (reduction_app/records/storage.py):
# a folder under MEDIA_ROOT by default, written to a temporary name and renamed into place
# (reduction_app/records/folder.py); OFFLOAD_STORAGE=s3 puts it in an S3 bucket, or on
# any S3-compatible server (MinIO, Ceph, R2), through django-storages. The AWS_* names are
# django-storages' own; credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, a profile,
# an instance role) are found by boto3 as usual. docs/deploying.md, "On S3".
def _offload_storage(environ: Mapping[str, str]) -> dict[str, Any]:
    """The ``offload`` entry of STORAGES that ``environ`` asks for."""
    kind = environ.get("OFFLOAD_STORAGE", "").strip().lower() or "local"
    if kind == "local":
        return {
            "BACKEND": "reduction_app.records.folder.OffloadFolderStorage",
            "OPTIONS": {"location": MEDIA_ROOT / "offload"},
        }
    if kind != "s3":
        raise ImproperlyConfigured(f"OFFLOAD_STORAGE must be 'local' or 's3', not {kind!r}")
    bucket = environ.get("AWS_STORAGE_BUCKET_NAME", "").strip()
    if not bucket:
        raise ImproperlyConfigured(
            "OFFLOAD_STORAGE=s3 needs AWS_STORAGE_BUCKET_NAME, the bucket offloaded files go to"
        )
    options: dict[str, Any] = {
        "bucket_name": bucket,
        # Keys are <location>/ws<id>/<ab>/<sha256>.txt; S3 keys take no leading slash.
        "location": environ.get("AWS_LOCATION", "offload").strip("/"),
        # A stored file is downloaded whole when opened: above 1 MB into a temporary
        # file rather than memory.
        "max_memory_size": 1024 * 1024,
    }
    for option, variable in (
        ("endpoint_url", "AWS_S3_ENDPOINT_URL"),
        ("region_name", "AWS_S3_REGION_NAME"),
        ("addressing_style", "AWS_S3_ADDRESSING_STYLE"),
    ):
        if environ.get(variable, "").strip():
            options[option] = environ[variable].strip()
    return {"BACKEND": "reduction_app.records.s3.OffloadS3Storage", "OPTIONS": options}


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # whitenoise serves collected static files (htmx from django-htmx, Chart.js from
    # chartkick); in DEBUG it serves them straight from the apps. With DEBUG off, names
    # carry a hash of the content, so browsers may cache them for good (whitenoise says
    # so, "immutable"), and a page never gets a stale script after an upgrade.
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
    "offload": _offload_storage(os.environ),
}

# The REST API refuses request bodies larger than this (bytes); 32 MB by default.
REDUCTION_MAX_REQUEST_BYTES = int(os.environ.get("REDUCTION_MAX_REQUEST_BYTES", 32 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = REDUCTION_MAX_REQUEST_BYTES + 1024
# A body over that limit is still read, up to this many bytes, and thrown away before the
# 413 is sent: a client that writes its whole body before reading the answer (Python's
# http.client, most HTTP libraries) would otherwise see its connection reset, never the
# 413. Past it the 413 is sent unread and the connection closed. 8 times the limit.
REDUCTION_MAX_DISCARD_BYTES = _env_int(
    "REDUCTION_MAX_DISCARD_BYTES", 8 * REDUCTION_MAX_REQUEST_BYTES
)
# The work one request may ask for, below the body limit (0 is no limit): a request over
# either is answered 422 and records nothing. Chosen so that the largest request both let
# through answers in well under half of gunicorn's 30 s worker timeout on 2 cores
# (benchmarks/README.md, "The work one request may ask for"). The messages of a
# conversation sent to /clear or recorded with POST /conversations:
REDUCTION_MAX_MESSAGES = _env_int("REDUCTION_MAX_MESSAGES", 20_000)
# The tool results one request may offload (each one a stored file):
REDUCTION_MAX_OFFLOADS = _env_int("REDUCTION_MAX_OFFLOADS", 1_000)
# The conversations whose context each web process keeps warm for the /clear calls that
# continue it (previous_revision): the least recently used beyond this are rebuilt from
# the database when next continued.
REDUCTION_WARM_CONTEXTS = _env_int("REDUCTION_WARM_CONTEXTS", 64)
# Recordings imported through the API or the dashboard's Import page: uploads of up to
# this many bytes in all are imported inside the request; bigger ones by the task workers
# (`manage.py db_worker`), whose progress the page and `GET /api/v1/imports/{id}` show.
REDUCTION_IMPORT_INLINE_BYTES = _env_int("REDUCTION_IMPORT_INLINE_BYTES", 2 * 1024 * 1024)
# The OTLP endpoint (/api/v1/otel): the spans, or log records, one export request may
# carry (the SDK's batch processor sends 512 at most), and the longest text one attribute
# (a span's messages, a tool result) may hold; a span over it is refused on its own.
REDUCTION_OTLP_MAX_RECORDS = _env_int("REDUCTION_OTLP_MAX_RECORDS", 10_000)
REDUCTION_OTLP_MAX_VALUE_CHARS = _env_int("REDUCTION_OTLP_MAX_VALUE_CHARS", 8 * 1024 * 1024)
# How long an export waits for a database lock another transaction holds before it is
# answered 503 with Retry-After (the exporter sends the batch again), rather than keep the
# exporter waiting past its own timeout (OTEL_EXPORTER_OTLP_TIMEOUT).
REDUCTION_OTLP_LOCK_WAIT_SECONDS = _env_int("REDUCTION_OTLP_LOCK_WAIT_SECONDS", 2)


# Quotas per workspace (a workspace's own fields override both; 0 is no limit).
# docs/deploying.md, "Security". The bytes of offloaded content a workspace holds, 1 GiB
# by default: a request that would go over it answers 429 and records nothing.
REDUCTION_QUOTA_OFFLOAD_BYTES = _env_int("REDUCTION_QUOTA_OFFLOAD_BYTES", 1024 * 1024 * 1024)
# Content a request journals before storing it (reduction_app.models.StagedOffload) and
# still journals this many seconds later belongs to a request that died: the task worker
# and `manage.py offload_reclaim` remove it. Longer than any request may run (gunicorn's
# worker timeout, 30 s by default): an hour.
REDUCTION_STAGED_DEAD_SECONDS = _env_int("REDUCTION_STAGED_DEAD_SECONDS", 3600)
# REST API requests a minute per workspace, counted in the database; off by default.
REDUCTION_RATE_LIMIT = _env_int("REDUCTION_RATE_LIMIT", 0)


# Every job on the task workers (an import, a simulation, a part of a sweep, a reclaim) is
# leased (reduction_app/jobs/): the worker running it writes a heartbeat every sixth of the
# lease, and a job whose heartbeat is older than the lease has lost its worker, which is
# presumed dead: the watcher fails it, or queues a sweep part again, up to
# REDUCTION_SWEEP_MAX_RUNS runs in all. docs/deploying.md, "The task workers".
def _job_lease(environ: Mapping[str, str]) -> tuple[float, int]:
    """The lease of a job in seconds, and the most runs a sweep part gets."""
    lease_name = _env_name(
        environ, "REDUCTION_JOB_LEASE_SECONDS", former="REDUCTION_SWEEP_LEASE_SECONDS"
    )
    lease_text = environ.get(lease_name, "60")
    runs_text = environ.get("REDUCTION_SWEEP_MAX_RUNS", "3")
    try:
        lease = float(lease_text)
    except ValueError:
        lease = float("nan")
    if not 0 < lease < float("inf"):
        raise ImproperlyConfigured(
            f"{lease_name} must be a number of seconds above 0, not {lease_text!r}"
        )
    if not runs_text.strip().isdigit() or int(runs_text) < 1:
        raise ImproperlyConfigured(
            f"REDUCTION_SWEEP_MAX_RUNS must be a whole number from 1, not {runs_text!r}"
        )
    return lease, int(runs_text)


REDUCTION_JOB_LEASE_SECONDS, REDUCTION_SWEEP_MAX_RUNS = _job_lease(os.environ)
# A job that waits in the queue (an import, a simulation run as one task) still queued
# this long after it was made is failed: no worker took it (none runs); 0 waits forever.
REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS = _env_int(
    "REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS",
    6 * 3600,
    former="REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS",
)

# The recorded agent runs (OpenHands, tau-bench, ...) that `manage.py seed_demo` imports
# for replay. They are not part of the repository: the folder is REDUCTION_RECORDINGS_DIR,
# else shared/data/conversations beside the checkout (simulator/recordings_folder.py
# reads the variable, for the simulator's commands too). Without the folder the demo
# holds only its own conversations.
REDUCTION_RECORDINGS_DIR = recordings_dir()

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Django logs unhandled errors (and 4xx answers, as warnings) to the "django" logger; its
# default handler prints only in DEBUG. This one prints to stderr always, so a server's
# 500s land in gunicorn's (or the service manager's) log.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {
        "django": {"handlers": ["stderr"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
        # With DEBUG on, every SQL statement is logged at DEBUG level with its values, and
        # those are tool output and transcripts: never logged, whatever DJANGO_LOG_LEVEL
        # says (connection.queries still holds them in development).
        "django.db.backends": {"level": "INFO"},
    },
}
