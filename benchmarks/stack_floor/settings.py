"""The production settings, with no middleware and the floor's URLs in front.

Its view answers anyone, unauthenticated, and keeps every offload in memory: it loads
only in a server :mod:`benchmarks.server` starts for a benchmark, never as a site's."""

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings import *  # noqa: F403

if os.environ.get("REDUCTION_BENCHMARK_SERVER") != "1":
    raise ImproperlyConfigured(
        "benchmarks.stack_floor.settings serve an unauthenticated benchmark endpoint; "
        "only benchmarks.server starts them (python -m benchmarks.api_load)"
    )

MIDDLEWARE: list[str] = []
ROOT_URLCONF = "benchmarks.stack_floor.urls"
# The admin wants the session, auth and messages middleware; the floor serves no admin.
SILENCED_SYSTEM_CHECKS = ["admin.E408", "admin.E409", "admin.E410"]
