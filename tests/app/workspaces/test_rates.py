"""The request rate limit: counted per workspace in the database, 429 with Retry-After."""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reduction_app.errors import QuotaExceeded
from reduction_app.models import RateWindow, Workspace
from reduction_app.workspaces.rates import rate_limit_count
from tests.app.support import ApiClient, error

pytestmark = pytest.mark.django_db


def limited(limit: int, retry_after: int) -> dict[str, Any]:
    return error(
        f"rate limit exceeded: {limit} requests a minute for this workspace; "
        f"try again in {retry_after} s"
    )


@pytest.fixture
def fresh_minute() -> None:
    """Start the test early in a minute of the clock, so its requests share one window."""
    left = 60 - time.time() % 60
    if left < 10:
        time.sleep(left + 0.05)


@pytest.mark.usefixtures("fresh_minute")
def test_rate_limit_answers_429_with_retry_after(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_RATE_LIMIT = 3
    for _ in range(3):
        assert api.get("/tools/read_file").status_code == HTTPStatus.OK
    response = api.get("/events")
    assert response.status_code == HTTPStatus.TOO_MANY_REQUESTS
    retry_after = int(response["Retry-After"])
    assert 1 <= retry_after <= 60
    assert response.json() == limited(3, retry_after)
    assert RateWindow.objects.get(workspace=api.workspace).count == 4


@pytest.mark.usefixtures("fresh_minute")
def test_rate_limit_is_per_workspace(api: ApiClient, other_api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_RATE_LIMIT = 1
    assert api.get("/events").status_code == HTTPStatus.OK
    assert api.get("/events").status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert other_api.get("/events").status_code == HTTPStatus.OK


@pytest.mark.usefixtures("fresh_minute")
def test_rate_limit_of_the_workspace_overrides_the_setting(
    api: ApiClient, other_api: ApiClient, settings: Any
) -> None:
    settings.REDUCTION_RATE_LIMIT = 1
    Workspace.objects.filter(pk=api.workspace.pk).update(rate_limit_per_minute=0)
    for _ in range(3):
        assert api.get("/events").status_code == HTTPStatus.OK
    assert not RateWindow.objects.filter(workspace=api.workspace).exists()
    settings.REDUCTION_RATE_LIMIT = 0
    Workspace.objects.filter(pk=other_api.workspace.pk).update(rate_limit_per_minute=2)
    assert [other_api.get("/events").status_code for _ in range(3)] == [
        HTTPStatus.OK,
        HTTPStatus.OK,
        HTTPStatus.TOO_MANY_REQUESTS,
    ]


def test_rate_limit_does_not_count_requests_without_a_valid_key(
    api: ApiClient, settings: Any
) -> None:
    settings.REDUCTION_RATE_LIMIT = 1
    for _ in range(3):
        response = api.client.get("/api/v1/events", headers={"Authorization": "Bearer rl_bad"})
        assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert not RateWindow.objects.exists()


def test_rate_limit_costs_one_statement_and_none_when_off(api: ApiClient, settings: Any) -> None:
    api.get("/tools/read_file")  # the key's last use is written once a minute
    settings.REDUCTION_RATE_LIMIT = 0
    with CaptureQueriesContext(connection) as off:
        api.get("/tools/read_file")
    settings.REDUCTION_RATE_LIMIT = 1000
    with CaptureQueriesContext(connection) as on:
        api.get("/tools/read_file")
    assert len(on) == len(off) + 1
    assert on.captured_queries[-1]["sql"].startswith('INSERT INTO "reduction_app_ratewindow"')


def test_rate_limit_count_starts_again_each_minute(workspace: Workspace, settings: Any) -> None:
    settings.REDUCTION_RATE_LIMIT = 2
    rate_limit_count(workspace=workspace, now=120.0)
    rate_limit_count(workspace=workspace, now=150.0)
    with pytest.raises(QuotaExceeded) as refused:
        rate_limit_count(workspace=workspace, now=150.5)
    assert refused.value.retry_after == 30
    assert str(refused.value) == (
        "rate limit exceeded: 2 requests a minute for this workspace; try again in 30 s"
    )
    rate_limit_count(workspace=workspace, now=180.0)
    rate_limit_count(workspace=workspace, now=239.9)
    assert RateWindow.objects.get(workspace=workspace).count == 2
    with pytest.raises(QuotaExceeded) as refused:
        rate_limit_count(workspace=workspace, now=239.9)
    assert refused.value.retry_after == 1
