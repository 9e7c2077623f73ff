"""Path traversal on every path and query parameter of the REST API (enumerated from its
OpenAPI document, so a new parameter is tried too) and on the pages' file and
conversation addresses: a hostile value is a 404 or a 422 JSON error (or, for a list
filter, an empty list), never a file from outside the storage and never a 500."""

from __future__ import annotations

import json
from http import HTTPStatus
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

from reduction_app.api import api as ninja_api
from tests.app.pages_support import member_client
from tests.app.support import ApiClient, error

pytestmark = pytest.mark.django_db

SECRET = "TOP SECRET, outside the storage"


def hostile_values(outside: Path) -> list[tuple[str, bool]]:
    """``(value, encode)``: a value sent as is (``encode=False``) is already URL-encoded
    text, for the server to decode into its traversal."""
    return [
        ("../../etc/passwd", True),
        ("/etc/passwd", True),
        ("/tmp/trunc/../../../etc/passwd", True),
        ("..\\..\\etc\\passwd", True),
        ("C:\\Windows\\win.ini", True),
        ("....//....//etc/passwd", True),
        ("../" + outside.name, True),
        (str(outside), True),
        ("ws1/" + "ab/../../" + outside.name, True),
        ("%2e%2e%2f%2e%2e%2fetc%2fpasswd", False),
        ("%252e%252e%252fetc%252fpasswd", False),
        ("..%c0%af..%c0%afetc%c0%afpasswd", False),
        ("..%5c..%5cetc%5cpasswd", False),
        ("x" * 10_000, True),
    ]


NUL_VALUES = [("a\x00b", True), ("..%00/etc/passwd", False), ("%00", False)]


def parameters() -> list[tuple[str, str, str, str, list[str]]]:
    """``(method, path template, parameter, where, required query names)`` of every path or
    query parameter of the API."""
    out = []
    for path, operations in ninja_api.get_openapi_schema()["paths"].items():
        for method, operation in operations.items():
            params = operation.get("parameters", [])
            required = [p["name"] for p in params if p["in"] == "query" and p.get("required")]
            for param in params:
                out.append((method, path, param["name"], param["in"], required))
    return out


PARAMETERS = parameters()


def address(path: str, name: str, where: str, value: str, encode: bool, required: list[str]) -> str:
    text = (quote(value, safe="") if where == "path" else quote(value)) if encode else value
    if where == "path":
        path = path.replace("{" + name + "}", text)
    query = [f"{other}=x" for other in required if other != name]
    if where == "query":
        query.append(f"{name}={text}")
    return path + ("?" + "&".join(query) if query else "")


def test_path_traversal_every_parameter_is_tried() -> None:
    assert {(m, p, n) for m, p, n, _, _ in PARAMETERS} >= {
        ("get", "/api/v1/files/read", "path"),
        ("get", "/api/v1/files/raw", "path"),
        ("get", "/api/v1/conversations/{conversation_id}", "conversation_id"),
        ("delete", "/api/v1/conversations/{conversation_id}", "conversation_id"),
        ("get", "/api/v1/configs/{config_id}", "config_id"),
        ("get", "/api/v1/simulations/{simulation_id}", "simulation_id"),
    }
    assert {where for *_, where, _ in PARAMETERS} == {"path", "query"}


def recorded_file(api: ApiClient) -> str:
    body = {
        "config": {"max_length_for_trunc": 20},
        "tool_name": "grep",
        "tool_call_id": "call_1",
        "result": "0123456789abcdefghijKLMNO",
        "conversation_id": "run-1",
    }
    response = api.post("/truncate", body)
    assert response.status_code == HTTPStatus.OK
    path: str = response.json()["offload_path"]
    return path


@pytest.mark.parametrize(
    ("method", "path", "name", "where", "required"),
    PARAMETERS,
    ids=[f"{m}-{p}-{n}" for m, p, n, _, _ in PARAMETERS],
)
def test_path_traversal_on_api_parameter(
    api: ApiClient,
    offload_dir: Path,
    method: str,
    path: str,
    name: str,
    where: str,
    required: list[str],
) -> None:
    outside = offload_dir.parent / "secret.txt"
    outside.write_text(SECRET)
    recorded_file(api)
    for value, encode in hostile_values(outside) + NUL_VALUES:
        url = address(path, name, where, value, encode, required)
        body = b"{}" if method in ("post", "put") else b""
        response = api.client.generic(
            method.upper(), url, body, content_type="application/json", headers=api.headers
        )
        where_said = f"{method.upper()} {url[:200]}"
        assert response.status_code in (HTTPStatus.OK, HTTPStatus.NOT_FOUND, 422), where_said
        assert response["Content-Type"] == "application/json; charset=utf-8" or (
            response["Content-Type"] == "application/json"
        ), where_said
        text = response.content.decode()
        assert SECRET not in text and "root:x:0:0" not in text, where_said
        body = json.loads(text)
        if response.status_code == HTTPStatus.OK:
            # Only a list filter answers 200 to these values, and finds nothing.
            assert body["results"] == [], where_said
        else:
            assert set(body) == {"detail", "field"}, where_said


@pytest.mark.parametrize("endpoint", ["/files/read", "/files/raw"])
def test_path_traversal_file_path_is_a_404_naming_it(
    api: ApiClient, offload_dir: Path, endpoint: str
) -> None:
    outside = offload_dir.parent / "secret.txt"
    outside.write_text(SECRET)
    recorded_file(api)
    for value, _ in hostile_values(outside):
        response = api.get(endpoint, {"path": value})  # sent as typed, "%2e" and all
        assert response.status_code == HTTPStatus.NOT_FOUND
        assert response.json() == error(f"file not found: {value}", "path")


def test_path_traversal_conversation_id_is_a_404_naming_it(api: ApiClient) -> None:
    recorded_file(api)
    for value in ("..", "..%2f..%2fetc", "x" * 10_000, "..\\..\\etc\\passwd", "%2e%2e"):
        response = api.get("/conversations/" + quote(value, safe=""))
        assert response.status_code == HTTPStatus.NOT_FOUND
        assert response.json() == error(f"conversation {value!r} not found", "conversation_id")
    # Ids may hold "/" (as the dashboard's addresses do): a path of them is one more id
    # that is not there.
    response = api.get("/conversations/../../etc/passwd")
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json() == error("conversation '../../etc/passwd' not found", "conversation_id")


def test_path_traversal_nul_in_the_address_is_a_422(api: ApiClient) -> None:
    response = api.client.get("/api/v1/files/read?path=a%00b", headers=api.headers)
    assert response.status_code == 422
    assert response.json() == error("path: must not contain NUL characters", "path")
    response = api.client.get("/api/v1/conversations/a%00b", headers=api.headers)
    assert response.status_code == 422
    assert response.json() == error("the address must not contain NUL characters")


def test_path_traversal_config_ids_must_be_numbers(api: ApiClient) -> None:
    response = api.get("/configs/" + quote("..\\..", safe=""))
    assert response.status_code == 422
    assert response.json()["field"] == "config_id"


def test_path_traversal_offload_folder_in_a_config_stays_in_the_storage(
    api: ApiClient, offload_dir: Path
) -> None:
    """``root_dir`` names where the model is told the file is; the stored content goes
    under the storage, named by its digest, wherever that says."""
    for root in ("../../../../tmp/escape", "/etc", "..\\..\\x"):
        body = {
            "config": {"max_length_for_trunc": 20, "root_dir": root},
            "tool_name": "grep",
            "tool_call_id": "../../../etc/passwd",
            "result": "0123456789abcdefghijKLMNO" + root,
        }
        response = api.post("/truncate", body)
        assert response.status_code in (HTTPStatus.OK, 422), response.json()
    stored = [p for p in offload_dir.rglob("*") if p.is_file()]
    assert stored and all(
        p.relative_to(offload_dir).parts[0] == f"ws{api.workspace.pk}" for p in stored
    )
    assert not Path("/tmp/escape").exists()


def test_path_traversal_on_the_pages(offload_dir: Path) -> None:
    client, _ = member_client()
    outside = offload_dir.parent / "secret.txt"
    outside.write_text(SECRET)
    for value, encode in hostile_values(outside):
        query = urlencode({"path": value}) if encode else f"path={value}"
        for page in ("/files/view/", "/files/raw/"):
            response = client.get(f"{page}?{query}")
            assert response.status_code == HTTPStatus.NOT_FOUND, (page, value[:80])
        conversation = quote(value, safe="/") if encode else value
        response = client.get(f"/conversations/{conversation}/")
        assert response.status_code == HTTPStatus.NOT_FOUND, value[:80]
        assert SECRET not in response.content.decode()
    for page in ("/files/view/?path=a%00b", "/files/raw/?path=a%00b", "/conversations/a%00b/"):
        assert client.get(page).status_code == HTTPStatus.BAD_REQUEST, page
