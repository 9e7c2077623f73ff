"""Django app configuration; the engine under ``reduction_app.engine`` never imports Django."""

from __future__ import annotations

from importlib import import_module

from django.apps import AppConfig

JOB_MODULES = (
    "reduction_app.conversations.imports",
    "reduction_app.records.reclaim",
    "reduction_app.simulations.sweeps",
    "reduction_app.simulations.watch",
)
"""The modules that declare a kind of job (its model, its task, what the watcher does
with it): imported once Django is ready, so that every process, a task worker running
only the watch among them, knows every kind (``reduction_app.jobs.watch.kinds``)."""


class ReductionAppConfig(AppConfig):
    name = "reduction_app"
    verbose_name = "Reduction Lab"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        for module in JOB_MODULES:
            import_module(module)
