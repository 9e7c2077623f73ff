"""URL routes of the Reduction Lab site."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from reduction_app import views
from reduction_app.api import api

urlpatterns = [
    path("", views.overview, name="overview"),
    path("api/v1/", api.urls),
    path("admin/", admin.site.urls),
]
