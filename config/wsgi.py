"""WSGI entry point. A server with DEBUG off whose static files are not collected refuses
to start (gunicorn runs no system checks, and every page would be a 500)."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()

from reduction_app.static_files import static_files_problem  # noqa: E402  (needs Django set up)

_problem = static_files_problem()
if _problem is not None:
    raise ImproperlyConfigured(_problem)
