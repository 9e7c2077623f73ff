"""Django app configuration; the engine under ``reduction_app.engine`` never imports Django."""

from __future__ import annotations

from django.apps import AppConfig


class ReductionAppConfig(AppConfig):
    name = "reduction_app"
    verbose_name = "Reduction Lab"
    default_auto_field = "django.db.models.BigAutoField"
