"""The Content-Security-Policy header (reduction_app/csp.py), and templates it lets work:
no inline script, event handler or style anywhere."""

from __future__ import annotations

import re
from http import HTTPStatus

import pytest
from django.conf import settings
from django.http import HttpRequest, HttpResponse

from reduction_app.csp import ContentSecurityPolicyMiddleware
from tests.app.pages_support import member_client
from tests.app.support import ApiClient
from tests.conftest import REPO

POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def test_csp_policy_is_strict() -> None:
    assert settings.REDUCTION_CONTENT_SECURITY_POLICY == POLICY
    assert "unsafe" not in POLICY


@pytest.mark.django_db
def test_csp_on_pages_the_api_and_the_sign_in(api: ApiClient) -> None:
    client, _ = member_client()
    for response in (
        client.get("/"),
        client.get("/files/view/?path=nothing"),
        client.get("/accounts/login/"),
        api.get("/events"),
        api.client.get("/api/v1/events"),
    ):
        assert response["Content-Security-Policy"] == POLICY
    assert client.get("/").status_code == HTTPStatus.OK


def test_csp_a_view_setting_its_own_header_keeps_it() -> None:
    def view(request: HttpRequest) -> HttpResponse:
        response = HttpResponse()
        response["Content-Security-Policy"] = "default-src 'none'"
        return response

    response = ContentSecurityPolicyMiddleware(view)(HttpRequest())
    assert response["Content-Security-Policy"] == "default-src 'none'"


INLINE = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)|\son[a-z]+=|\sstyle=|<style")


def test_csp_templates_have_no_inline_script_handler_or_style() -> None:
    found = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted((REPO / "templates").rglob("*.html"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if INLINE.search(line)
    ]
    assert found == []
