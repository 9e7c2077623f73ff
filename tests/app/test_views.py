"""The dashboard's pages (only the placeholder overview exists so far)."""

from __future__ import annotations

from http import HTTPStatus

from django.test import Client


def test_overview_shows_placeholder_and_engine_defaults(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == HTTPStatus.OK
    body = response.content.decode()
    assert "The dashboard is still a placeholder" in body
    assert "<code>max_tokens_for_clear</code></td><td><code>160000</code>" in body
    assert 'src="/static/django_htmx/htmx-2.min.js"' in body


def test_overview_refuses_post(client: Client) -> None:
    assert client.post("/").status_code == HTTPStatus.METHOD_NOT_ALLOWED


def test_unknown_api_address_answers_json_404(client: Client) -> None:
    response = client.get("/api/v1/nope")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == {"detail": "no such endpoint: /api/v1/nope", "field": None}
