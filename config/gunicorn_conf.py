"""How gunicorn serves the app: ``make serve``, the production-server test and the API
load benchmark all start ``gunicorn --config config/gunicorn_conf.py config.wsgi``, and a
deployment does the same.

Two settings come from the environment; any other gunicorn flag goes in
``GUNICORN_CMD_ARGS`` (``"--access-logfile - --timeout 120"``), which wins over this file.
"""

from __future__ import annotations

import os

# Loopback unless told otherwise: a reverse proxy (nginx, a load balancer) in front
# terminates TLS and buffers slow clients, which sync workers must not wait for.
bind = [os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")]

# Sync workers, one request each at a time. The API's work is CPU-bound (JSON, parsing,
# counting, clearing), so workers beyond the number of cores only queue for the same
# cores; two at least, so one slow request never stalls the site.
workers = int(os.environ.get("WEB_CONCURRENCY") or max(2, os.cpu_count() or 1))

# gunicorn's sync worker, but the errors gunicorn answers itself (a bad request line, a
# header over its limits) are JSON like the API's own, not an HTML page.
worker_class = "config.gunicorn_worker.JSONSyncWorker"

# The access log (off unless ``--access-logfile`` is given) names a request by method,
# path and protocol: gunicorn's default logs the request line, query string included,
# which carries offloaded files' paths and any key a client wrongly sends as ``?api_key=``.
# The referer, a page of this site with its own query string, is left out for the same
# reason.
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'

# gunicorn 25 and later open a control socket at one path per user (for `gunicornc`),
# which two servers on one machine would fight over; nothing here uses it. Older gunicorn
# ignores the name.
control_socket_disable = True


def post_worker_init(worker: object) -> None:
    """Load the URL patterns, and with them every view and the API, before the worker
    takes its first request: Django would load them during it (two seconds and more on
    two cores, which the first client of each worker would wait). Then move what the
    loaded app holds (modules, settings, URL patterns) out of the garbage collector's
    reach: a request that parses a 500 KB conversation allocates enough objects to set
    off full collections, and each would walk all of it again. Measured on
    ``/api/v1/clear``: 3.6 ms of collection per request before, 0.3 ms after."""
    import gc

    from django.apps import apps

    if apps.ready:
        from django.urls import get_resolver

        get_resolver().url_patterns  # noqa: B018  (loads the URLconf and its views)
    gc.collect()
    gc.freeze()
