"""The Configs pages: list, create and edit through the engine's validation, versions,
delete, isolation, escaping and query counts."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.html import escape

from reduction_app import engine
from reduction_app.configs.forms import FIELD_HELP, ConfigForm
from reduction_app.configs.services import config_create, config_update
from reduction_app.models import ConfigProfile, ConfigVersion
from tests.app.pages_support import html, member_client

pytestmark = pytest.mark.django_db


def _form(**changes: Any) -> dict[str, Any]:
    """The form as the new-config page fills it (every default), with ``changes``."""
    data: dict[str, Any] = {
        "name": "tight",
        "read_file_tool_name": "read_file",
        "root_dir": "/tmp",
        "max_length_for_trunc": "50000",
        "trunc_exclude_tools": "",
        "token_counter": "approx",
        "max_tokens_for_clear": "160000",
        "clear_retention_suffix_limit": "1",
        "clear_at_least_tokens": "0",
        "clear_cache_read_percent": "10",
        "clear_cache_write_percent": "125",
        "clear_cache_ceiling_tokens": "0",
        "clear_exclude_tools": "",
        "clear_digest_tokens": "0",
        "language": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_field_help_covers_every_json_field() -> None:
    assert list(FIELD_HELP) == list(engine.JSON_FIELDS)
    assert all(text.endswith(".") and "\n" not in text for text in FIELD_HELP.values())
    assert [b.name for b in ConfigForm().config_fields()] == list(engine.JSON_FIELDS)


def test_config_list_empty_state() -> None:
    client, _ = member_client()
    page = html(client.get("/configs/"))
    assert "No configs yet." in page
    assert '<a class="button" href="/configs/new/">New config</a>' in page


def test_config_list_shows_latest_version_and_key_fields() -> None:
    client, ws = member_client()
    version = config_create(workspace=ws, name="tight", data={"max_tokens_for_clear": 8000})
    config_update(profile=version.profile, data={"max_tokens_for_clear": 6000})
    config_create(workspace=ws, name="no clear", data={"skip_clear": True})
    response = client.get("/configs/")
    assert response.status_code == HTTPStatus.OK
    page = html(response)
    assert "<html" in page
    pk = version.profile.pk
    assert f'<td><a href="/configs/{pk}/versions/">v2</a></td>' in page
    assert '<td class="num" data-field="max_tokens_for_clear">6,000</td>' in page
    assert '<td class="num" data-field="max_length_for_trunc">50,000</td>' in page
    assert "<td>truncation + clear</td>" in page and "<td>truncation</td>" in page
    # names sorted
    assert page.index(">no clear</a>") < page.index(">tight</a>")


def test_config_list_partial_for_htmx() -> None:
    client, ws = member_client()
    config_create(workspace=ws, name="tight", data={})
    page = html(client.get("/configs/", headers={"HX-Request": "true"}))
    assert "<html" not in page
    assert page.strip().startswith('<section id="config-table">')
    assert ">tight</a>" in page


def test_config_new_shows_every_field_with_default_and_help() -> None:
    client, _ = member_client()
    page = html(client.get("/configs/new/"))
    for name in engine.JSON_FIELDS:
        assert f'<tr class="field" id="row-{name}">' in page
        assert f'<td class="help">{escape(FIELD_HELP[name])}</td>' in page
    assert '<td class="default"><code>160,000</code></td>' in page
    assert '<td class="default"><code>read_file</code></td>' in page
    assert 'name="max_tokens_for_clear" value="160000"' in page
    assert '<option value="approx" selected>approx</option>' in page
    assert '<option value="zh">zh (Chinese)</option>' in page


def test_config_new_creates_version_one() -> None:
    client, ws = member_client()
    response = client.post(
        "/configs/new/",
        _form(max_tokens_for_clear="8000", skip_truncation="on", clear_exclude_tools="grep, ls"),
    )
    profile = ConfigProfile.objects.get(workspace=ws, name="tight")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == f"/configs/{profile.pk}/versions/"
    assert "Saved config “tight”, version 1." in html(client.get(response["Location"]))
    (version,) = profile.versions.all()
    assert version.number == 1
    assert version.data == {
        "skip_truncation": True,
        "skip_clear": False,
        "read_file_tool_name": "read_file",
        "root_dir": "/tmp",
        "max_length_for_trunc": 50000,
        "trunc_tool_limits": {},
        "trunc_command_limits": {},
        "trunc_exclude_tools": [],
        "trunc_only_when_shorter": False,
        "trunc_stream_text_raw": False,
        "token_counter": "approx",
        "max_tokens_for_clear": 8000,
        "clear_retention_suffix_limit": 1,
        "clear_at_least_tokens": 0,
        "clear_cache_aware": False,
        "clear_cache_read_percent": 10,
        "clear_cache_write_percent": 125,
        "clear_cache_ceiling_tokens": 0,
        "clear_exclude_tools": ["grep", "ls"],
        "clear_digest_tokens": 0,
        "clear_superseded": False,
        "clear_offload_manifest": False,
        "language": None,
    }


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"max_tokens_for_clear": "-1"},
            "max_tokens_for_clear",
            "max_tokens_for_clear must be at least 0, got -1",
        ),
        (
            {"root_dir": "has space"},
            "root_dir",
            "root_dir must be a non-empty string without whitespace, got &#x27;has space&#x27;",
        ),
        (
            {"read_file_tool_name": ""},
            "read_file_tool_name",
            "read_file_tool_name must be a non-empty string without whitespace, got &#x27;&#x27;",
        ),
        (
            {"clear_at_least_tokens": "-5"},
            "clear_at_least_tokens",
            "clear_at_least_tokens must be at least 0, got -5",
        ),
    ],
)
def test_config_new_invalid_shows_the_engine_error_next_to_the_field(
    changes: dict[str, str], field: str, message: str
) -> None:
    client, _ = member_client()
    response = client.post("/configs/new/", _form(**changes))
    assert response.status_code == HTTPStatus.OK
    page = html(response)
    assert f'<tr class="field invalid" id="row-{field}">' in page
    assert f'<p class="error" id="error-{field}">{message}</p>' in page
    assert ConfigProfile.objects.count() == 0


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        (
            {"trunc_command_limits": "reading = 2000\nbogus = 5"},
            "trunc_command_limits",
            "trunc_command_limits.bogus is not a command kind: expected one of "
            "[&#x27;running&#x27;, &#x27;reading&#x27;, &#x27;searching&#x27;, "
            "&#x27;editing&#x27;, &#x27;other&#x27;]",
        ),
        (
            {"trunc_tool_limits": "Read = 4k"},
            "trunc_tool_limits",
            "trunc_tool_limits.Read must be an integer, got &#x27;4k&#x27;",
        ),
        (
            {"trunc_tool_limits": "Read = -1"},
            "trunc_tool_limits",
            "trunc_tool_limits.Read must be at least 1, got -1",
        ),
        (
            {"trunc_tool_limits": "Read 4000"},
            "trunc_tool_limits",
            "line 1: expected name = limit, got &#x27;Read 4000&#x27;",
        ),
    ],
)
def test_config_new_limits_errors_show_next_to_the_field(
    changes: dict[str, str], field: str, message: str
) -> None:
    client, _ = member_client()
    page = html(client.post("/configs/new/", _form(**changes)))
    assert f'<tr class="field invalid" id="row-{field}">' in page
    assert f'<p class="error" id="error-{field}">{message}</p>' in page
    assert ConfigProfile.objects.count() == 0


def test_config_limits_created_edited_and_shown() -> None:
    client, ws = member_client()
    response = client.post(
        "/configs/new/",
        _form(
            trunc_tool_limits="Read = 40,000\n\nBash=2000 ",
            trunc_command_limits="running = 4000",
        ),
    )
    assert response.status_code == HTTPStatus.FOUND
    profile = ConfigProfile.objects.get(workspace=ws, name="tight")
    data = profile.versions.get().data
    assert data["trunc_tool_limits"] == {"Read": 40000, "Bash": 2000}
    assert data["trunc_command_limits"] == {"running": 4000}
    page = html(client.get(f"/configs/{profile.pk}/edit/"))
    assert ">\nBash = 2000\nRead = 40000</textarea>" in page
    assert ">\nrunning = 4000</textarea>" in page
    response = client.post(
        f"/configs/{profile.pk}/edit/",
        _form(trunc_tool_limits="Read = 30000", trunc_command_limits=""),
    )
    assert response.status_code == HTTPStatus.FOUND
    latest = profile.versions.get(number=2).data
    assert (latest["trunc_tool_limits"], latest["trunc_command_limits"]) == ({"Read": 30000}, {})
    page = html(client.get(f"/configs/{profile.pk}/versions/"))
    v2 = page[page.index('id="v2"') : page.index('id="v1"')]
    assert (
        "<li><code>trunc_tool_limits</code>: <del>Bash = 2,000, Read = 40,000</del> → "
        '<mark class="changed">Read = 30,000</mark></li>'
    ) in v2
    assert (
        "<li><code>trunc_command_limits</code>: <del>running = 4,000</del> → "
        '<mark class="changed">none</mark></li>'
    ) in v2


def test_config_new_not_a_number_and_duplicate_name() -> None:
    client, ws = member_client()
    page = html(client.post("/configs/new/", _form(max_length_for_trunc="lots")))
    assert '<p class="error" id="error-max_length_for_trunc">Enter a whole number.</p>' in page
    config_create(workspace=ws, name="tight", data={})
    page = html(client.post("/configs/new/", _form()))
    assert (
        '<p class="error" id="error-name">a config named &#x27;tight&#x27; already exists</p>'
        in page
    )
    assert ConfigProfile.objects.count() == 1


def test_config_edit_makes_version_two_and_versions_page_shows_the_change() -> None:
    client, ws = member_client()
    profile = config_create(workspace=ws, name="tight", data={"max_tokens_for_clear": 8000}).profile
    page = html(client.get(f"/configs/{profile.pk}/edit/"))
    assert 'name="max_tokens_for_clear" value="8000"' in page
    assert "saving makes v2" in page
    response = client.post(
        f"/configs/{profile.pk}/edit/", _form(max_tokens_for_clear="6000", language="zh")
    )
    assert response.status_code == HTTPStatus.FOUND
    assert list(profile.versions.values_list("number", flat=True)) == [2, 1]
    assert profile.versions.get(number=2).data["max_tokens_for_clear"] == 6000
    page = html(client.get(f"/configs/{profile.pk}/versions/"))
    assert (
        '<ul class="flash" role="status"><li class="success">Saved “tight”, version 2.</li></ul>'
        in page
    )
    assert "· 2 versions" in page
    v2 = page[page.index('id="v2"') : page.index('id="v1"')]
    assert (
        "<li><code>max_tokens_for_clear</code>: <del>8,000</del> → "
        '<mark class="changed">6,000</mark></li>'
    ) in v2
    assert (
        '<li><code>language</code>: <del>default</del> → <mark class="changed">zh</mark></li>' in v2
    )
    assert '<td data-field="max_tokens_for_clear"><mark class="changed">6,000</mark></td>' in v2
    v1 = page[page.index('id="v1"') :]
    assert "The first version." in v1
    assert '<td data-field="max_tokens_for_clear">8,000</td>' in v1


def test_config_edit_without_changes_adds_no_version() -> None:
    client, ws = member_client()
    profile = config_create(workspace=ws, name="tight", data={}).profile
    response = client.post(f"/configs/{profile.pk}/edit/", _form())
    assert response.status_code == HTTPStatus.FOUND
    assert profile.versions.count() == 1
    page = html(client.get(response["Location"]))
    assert '<li class="info">Nothing changed, so no version was added.</li>' in page


def test_config_edit_invalid_keeps_one_version() -> None:
    client, ws = member_client()
    profile = config_create(workspace=ws, name="tight", data={}).profile
    page = html(client.post(f"/configs/{profile.pk}/edit/", _form(max_length_for_trunc="-3")))
    assert "max_length_for_trunc must be at least 0, got -3" in page
    assert profile.versions.count() == 1


def test_config_delete_confirms_then_hides() -> None:
    client, ws = member_client()
    profile = config_create(workspace=ws, name="tight", data={}).profile
    page = html(client.get(f"/configs/{profile.pk}/delete/"))
    assert "<h1>Delete tight?</h1>" in page
    assert f'<form method="post" action="/configs/{profile.pk}/delete/">' in page
    response = client.post(f"/configs/{profile.pk}/delete/")
    assert response.status_code == HTTPStatus.FOUND and response["Location"] == "/configs/"
    assert ">tight</a>" not in html(client.get("/configs/"))
    assert client.get(f"/configs/{profile.pk}/edit/").status_code == HTTPStatus.NOT_FOUND
    assert ConfigVersion.objects.filter(profile=profile).count() == 1


def test_configs_of_another_workspace_answer_404() -> None:
    client, _ = member_client()
    _, other = member_client("bob", "Other")
    profile = config_create(workspace=other, name="theirs", data={}).profile
    for suffix in ("edit/", "versions/", "delete/"):
        assert client.get(f"/configs/{profile.pk}/{suffix}").status_code == HTTPStatus.NOT_FOUND
    assert client.post(f"/configs/{profile.pk}/delete/").status_code == HTTPStatus.NOT_FOUND
    assert ConfigProfile.objects.get(pk=profile.pk).deleted_at is None
    assert "theirs" not in html(client.get("/configs/"))


def test_config_name_is_escaped() -> None:
    client, ws = member_client()
    profile = config_create(workspace=ws, name="<script>alert(1)</script>", data={}).profile
    for url in ("/configs/", f"/configs/{profile.pk}/versions/", f"/configs/{profile.pk}/edit/"):
        page = html(client.get(url))
        assert "<script>alert(1)</script>" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_config_list_queries_constant(django_assert_num_queries: Any) -> None:
    client, ws = member_client()
    config_create(workspace=ws, name="c0", data={})
    client.get("/configs/")
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/configs/").status_code == HTTPStatus.OK
    for i in range(1, 8):
        version = config_create(workspace=ws, name=f"c{i}", data={})
        config_update(profile=version.profile, data={"max_tokens_for_clear": 1000 * i})
    with django_assert_num_queries(len(queries)):
        client.get("/configs/")


def test_config_pages_need_sign_in(client: Client) -> None:
    response = client.get("/configs/")
    assert response.status_code == HTTPStatus.FOUND
    assert response["Location"] == "/accounts/login/?next=/configs/"


def test_config_list_sorts_by_its_columns_and_filters_by_name() -> None:
    client, workspace = member_client()
    beta = config_create(workspace=workspace, name="beta", data={})
    config_create(workspace=workspace, name="alpha", data={})
    gamma = config_create(workspace=workspace, name="gamma", data={})
    for number in range(2, 4):
        config_update(profile=beta.profile, data={"max_length_for_trunc": number * 100})
    config_update(profile=gamma.profile, data={"max_length_for_trunc": 50})

    def names(**params: str) -> list[str]:
        response = client.get("/configs/", params)
        assert response.status_code == HTTPStatus.OK
        return re.findall(
            r'<td><a href="/configs/\d+/edit/">([^<]+)</a></td>', response.content.decode()
        )

    assert names() == ["alpha", "beta", "gamma"]
    assert names(sort="-name") == ["gamma", "beta", "alpha"]
    assert names(sort="-version") == ["beta", "gamma", "alpha"]  # v3, v2, v1
    assert names(sort="-updated") == ["gamma", "beta", "alpha"]
    assert names(sort="latest_data") == names(sort="-deleted_at") == names()
    assert names(q="MM", sort="-name") == ["gamma"]
    assert "No configs match." in client.get("/configs/", {"q": "zeta"}).content.decode()
