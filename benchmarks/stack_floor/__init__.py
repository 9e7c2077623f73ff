"""The least any API on this stack can cost: Django behind the same gunicorn, serving
one view that does the in-process work of :func:`benchmarks.api_load.in_process` and
nothing else (no middleware, authentication, validation or database).

:mod:`benchmarks.api_load` measures it beside the real API, so its overhead ratio has a
floor to be read against. For benchmarks only: the view answers anyone, unauthenticated.
"""

FLOOR_PATH = "/floor/clear"
BODY_PATH = "/floor/body"
"""Reads the request's body and answers ``{}``: what getting the body in costs."""
READY_PATH = "/floor/"
"""Answers 200 once a worker serves (what the server helper waits for)."""
SETTINGS = "benchmarks.stack_floor.settings"
