"""The dashboard's addresses, gathered from each page module."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from reduction_app.configs import views as configs
from reduction_app.conversations import import_views
from reduction_app.conversations import views as conversations
from reduction_app.dashboard import workspace_switch
from reduction_app.prices import views as prices
from reduction_app.records.views import events, files, overview
from reduction_app.simulations.views import compare, points, simulations, sweep, tune
from reduction_app.telemetry import views as traces
from reduction_app.workspaces import views as keys

urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("workspace/switch/", workspace_switch, name="workspace_switch"),
    *overview.urlpatterns,
    *conversations.urlpatterns,
    *import_views.urlpatterns,
    *events.urlpatterns,
    *files.urlpatterns,
    *configs.urlpatterns,
    *prices.urlpatterns,
    *compare.urlpatterns,
    *tune.urlpatterns,
    *simulations.urlpatterns,
    *points.urlpatterns,
    *sweep.urlpatterns,
    *traces.urlpatterns,
    *keys.urlpatterns,
]
