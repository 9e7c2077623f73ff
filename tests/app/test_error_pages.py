"""reduction_app.error_pages through the real URLs: what Django answers by itself is the
API's JSON error under ``/api/`` (a 404, a 405, a refused Host) and stays HTML elsewhere.
The production server's test checks the same under gunicorn with DEBUG off."""

from __future__ import annotations

from http import HTTPStatus

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

from config import urls as project_urls
from tests.app.support import ApiClient, error

pytestmark = pytest.mark.django_db

HOST_DETAIL = "the request's Host header names a host this server does not serve"


@pytest.mark.parametrize("address", ["/api/v1/nope", "/api/nope", "/api/"])
def test_unknown_api_address_is_a_json_404(client: Client, address: str) -> None:
    response = client.post(address, b"{}", content_type="application/json")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response["Content-Type"] == "application/json"
    assert response.json() == error(f"no such endpoint: {address}")


@pytest.mark.parametrize(
    ("method", "address", "allowed"),
    [
        ("get", "/clear", "POST"),
        ("delete", "/truncate", "POST"),
        ("patch", "/configs", "GET, POST"),
        ("post", "/configs/1", "DELETE, GET, PUT"),
    ],
)
def test_wrong_method_on_an_api_address_is_a_json_405(
    api: ApiClient, method: str, address: str, allowed: str
) -> None:
    response = getattr(api.client, method)("/api/v1" + address, headers=api.headers)
    assert response.status_code == HTTPStatus.METHOD_NOT_ALLOWED
    assert response["Content-Type"] == "application/json"
    assert response["Allow"] == allowed
    assert response.json() == error(
        f"method {method.upper()} is not allowed here; allowed: {allowed}"
    )


def test_wrong_method_on_a_page_is_not_json(client: Client) -> None:
    response = client.delete("/accounts/login/")
    assert response.status_code == HTTPStatus.METHOD_NOT_ALLOWED
    assert not response["Content-Type"].startswith("application/json")


def test_disallowed_host_on_an_api_address_is_a_json_400(api: ApiClient) -> None:
    response = api.client.get("/api/v1/events", headers={**api.headers, "Host": "evil.example"})
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response["Content-Type"] == "application/json"
    assert response.json() == error(HOST_DETAIL)


def test_disallowed_host_on_a_page_is_the_html_page(client: Client) -> None:
    response = client.get("/accounts/login/", headers={"Host": "evil.example"})
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response["Content-Type"].startswith("text/html")
    assert "<h1>Bad Request (400)</h1>" in response.content.decode()


def test_unknown_page_is_the_html_404(client: Client) -> None:
    response = client.get("/no-such-page/")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response["Content-Type"].startswith("text/html")
    assert "<h1>Not Found</h1>" in response.content.decode()


def _fails(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


urlpatterns = [path("api/v1/fails", _fails), path("fails", _fails)]
handler500 = project_urls.handler500


@pytest.mark.urls(__name__)
def test_server_error_on_an_api_address_is_a_json_500() -> None:
    """Django takes its handlers from the root URLconf: this module's, with a view that
    fails, and the project's handler."""
    client = Client(raise_request_exception=False)
    response = client.get("/api/v1/fails")
    assert response.status_code == HTTPStatus.INTERNAL_SERVER_ERROR
    assert response["Content-Type"] == "application/json"
    assert response.json() == error("internal server error")
    page = client.get("/fails")
    assert page.status_code == HTTPStatus.INTERNAL_SERVER_ERROR
    assert "<h1>Server Error (500)</h1>" in page.content.decode()
