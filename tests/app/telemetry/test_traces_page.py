"""The Live traces page: the endpoint to point an exporter at, and the sessions read,
those that could not be read with why (escaped), one workspace's only."""

from __future__ import annotations

import pytest

from reduction_app.models import TelemetryGroup
from reduction_app.workspaces.services import workspace_get_or_create
from tests.app.pages_support import elements, html, member_client, parsed, text

pytestmark = pytest.mark.django_db


def test_the_page_lists_sessions_and_says_why_one_failed() -> None:
    client, workspace = member_client()
    other = workspace_get_or_create(name="Other")
    TelemetryGroup.objects.create(workspace=workspace, key="session:run-1", conversations=["run-1"])
    TelemetryGroup.objects.create(
        workspace=workspace, key="trace:ab", error="span <script>x</script>: dropped"
    )
    TelemetryGroup.objects.create(workspace=other, key="session:secret", conversations=["s"])
    response = client.get("/traces/")
    assert response.status_code == 200
    page = parsed(response)
    [setup] = elements(page, "pre", id="otlp-setup")
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=http://testserver/api/v1/otel" in text(setup)
    rows = elements(page, "tr", class_="failed")
    assert len(rows) == 1
    assert "span <script>x</script>: dropped" in text(rows[0])
    assert "<script>x</script>" not in html(response)
    assert "session:secret" not in html(response)
    [link] = elements(page, "a", id="show-failed")
    assert text(link) == "1 could not be read"
    failed = parsed(client.get("/traces/?failed=1"))
    assert [text(c) for c in elements(failed, "code") if "session:" in text(c)] == []


def test_the_import_page_links_to_it() -> None:
    client, _ = member_client()
    [link] = elements(parsed(client.get("/imports/")), "a", id="live-traces-link")
    assert dict(link.attributes)["href"] == "/traces/"


def test_the_pager_swaps_the_table_only() -> None:
    client, workspace = member_client()
    for n in range(30):
        TelemetryGroup.objects.create(workspace=workspace, key=f"session:run-{n}")
    whole = html(client.get("/traces/"))
    assert 'hx-target="#session-table"' in whole
    swapped = html(client.get("/traces/?page=2", headers={"HX-Request": "true"}))
    assert swapped.lstrip().startswith('<div id="session-table">')
    assert 'aria-label="Main"' not in swapped  # not the whole page again
    assert swapped.count("<tr") == 1 + 5  # the heading row, then the 26th to 30th
