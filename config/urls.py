"""URL routes of the Reduction Lab site."""

from __future__ import annotations

from django.contrib import admin
from django.urls import path

from reduction_app import views

urlpatterns = [
    path("", views.overview, name="overview"),
    path("admin/", admin.site.urls),
]
