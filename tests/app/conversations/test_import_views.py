"""The Import page (``/imports/``) and an import's page: uploads imported at once or on
the task workers, errors shown escaped; and what an imported conversation shows in the
list and on its page."""

from __future__ import annotations

import json
import re
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.html import parse_html

from reduction_app.conversations.imports import recording_import_run, recordings_import
from reduction_app.models import Conversation, RecordingImport
from simulator.importers import FORMATS, load_conversations
from tests.app.conversations.recordings import ALL_FORMATS, SWE_AGENT, sample
from tests.app.dashboard_data import HX, member_client
from tests.app.records.test_views_overview import chart_config
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = pytest.mark.django_db


def _chat(*contents: str) -> bytes:
    roles = ("user", "assistant")
    return json.dumps(
        {"messages": [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]}
    ).encode()


def _upload(client: Client, files: dict[str, bytes], **fields: str) -> Any:
    parts = [SimpleUploadedFile(name, raw) for name, raw in files.items()]
    return client.post("/imports/", {"file": parts, **fields})


def _has(page: str, html: str) -> bool:
    return parse_html(html) in parse_html(page)


def test_import_page_offers_every_format_and_is_in_the_nav() -> None:
    client, _ = member_client()
    page = client.get("/imports/").content.decode()
    options = re.findall(r'<option value="([^"]*)"', page)
    assert options == ["", *FORMATS]
    assert _has(page, '<input type="file" name="file" id="id_file" multiple required>')
    assert _has(page, '<a href="/imports/" aria-current="page">Import</a>')
    assert _has(page, '<p class="empty">No imports yet.</p>')


@needs_recordings
def test_import_page_imports_a_real_file_and_links_its_conversation() -> None:
    client, ws = member_client()
    raw = (CONVERSATIONS / SWE_AGENT).read_bytes()
    response = _upload(client, {"gpt-4o-test-repo-1c2844.traj": raw})
    assert response.status_code == HTTPStatus.OK
    page = response.content.decode()
    assert _has(page, '<h2 id="import-result-title">Imported</h2>')
    assert _has(
        page,
        "<tr><td><code>gpt-4o-test-repo-1c2844.traj</code></td>"
        '<td><span class="badge recording">swe_agent</span></td>'
        '<td><ul class="plain"><li>'
        '<a href="/conversations/swe-agent--gpt-4o-test-repo-1c2844--gpt-4o/">'
        "swe-agent--gpt-4o-test-repo-1c2844--gpt-4o</a> "
        '<span class="muted">(11 messages)</span><br>gpt-4o-test-repo-1c2844 · SWE-agent · gpt-4o'
        '<br><span class="omits">Leaves out the tool schemas.</span></li></ul></td>'
        "</tr>",
    )
    row = Conversation.objects.get(workspace=ws)
    assert (row.client_id, row.source) == (
        "swe-agent--gpt-4o-test-repo-1c2844--gpt-4o",
        "swe_agent",
    )
    job = RecordingImport.objects.get()
    assert _has(page, f'<td><a href="/imports/{job.pk}/">{job.pk}</a></td>')


@pytest.mark.parametrize("fmt", ALL_FORMATS)
def test_import_page_imports_every_format(fmt: str, tmp_path: Path) -> None:
    """One upload of each format the simulator reads, detected: each conversation the
    file holds is imported, with the format as its badge."""
    client, ws = member_client()
    path = sample(fmt, tmp_path)
    response = _upload(client, {path.name: path.read_bytes()})
    assert response.status_code == HTTPStatus.OK
    page = response.content.decode()
    assert _has(page, '<h2 id="import-result-title">Imported</h2>')
    assert _has(page, f'<span class="badge recording">{fmt}</span>')
    expected = len(load_conversations(path))
    assert Conversation.objects.filter(workspace=ws, source=fmt).count() == expected


def test_import_page_shows_the_error_escaped_and_imports_nothing() -> None:
    client, _ = member_client()
    broken = b'{"messages": [{"role": "<script>alert(1)</script>"}]}'
    response = _upload(
        client, {"good.json": _chat("q", "a"), "<img src=x onerror=alert(1)>.json": broken}
    )
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    page = response.content.decode()
    assert "<script>alert(1)</script>" not in page
    assert "<img src=x" not in page
    assert _has(
        page,
        '<p class="error" role="alert">&lt;img src=x onerror=alert(1)&gt;.json: messages[0].role: '
        "unknown role &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27;</p>",
    )
    assert _has(page, '<h2 id="import-result-title">Nothing was imported</h2>')
    assert not Conversation.objects.exists()


def test_import_page_keeps_the_format_chosen_and_refuses_no_file() -> None:
    client, _ = member_client()
    response = client.post("/imports/", {"format": "tau2"})
    assert response.status_code == HTTPStatus.BAD_REQUEST
    page = response.content.decode()
    assert _has(page, '<p class="error" role="alert">Choose one or more files.</p>')
    assert _has(page, '<option value="tau2" selected>tau2</option>')


def test_import_page_sends_a_big_upload_to_the_workers_and_polls(settings: Any) -> None:
    settings.REDUCTION_IMPORT_INLINE_BYTES = 10
    client, ws = member_client()
    response = _upload(client, {"run.json": _chat("q", "a")}, replace="on")
    job = RecordingImport.objects.get()
    assert (response.status_code, response["Location"]) == (HTTPStatus.FOUND, f"/imports/{job.pk}/")
    assert job.replace is True
    page = client.get(f"/imports/{job.pk}/").content.decode()
    url = f"/imports/{job.pk}/"
    assert _has(
        page,
        '<p class="progress-note" data-status="queued">Queued: 0 of 1 file read.</p>',
    )
    assert f'<section id="import-status" hx-get="{url}" hx-trigger="every 1s"' in page
    assert _has(
        page,
        f'<a href="{url}" hx-get="{url}" hx-target="#import-status" hx-swap="outerHTML">'
        "Refresh</a>",
    )
    recording_import_run(import_id=job.pk)  # what the task worker does
    partial = client.get(url, headers=HX).content.decode()
    assert partial.lstrip().startswith('<section id="import-status">')  # done: no more polling
    assert _has(partial, '<p class="progress-note" data-status="done">Done: 1 of 1 file read.</p>')
    assert _has(partial, '<a href="/conversations/run/">run</a>')
    assert Conversation.objects.get(workspace=ws).client_id == "run"


def test_import_page_of_another_workspace_is_404() -> None:
    _, theirs = member_client("bob", "Theirs")
    job = RecordingImport.objects.create(workspace=theirs, progress_total=1)
    client, _ = member_client()
    assert client.get(f"/imports/{job.pk}/").status_code == HTTPStatus.NOT_FOUND


def test_import_page_needs_a_member() -> None:
    anonymous = Client().post("/imports/", {})
    assert (anonymous.status_code, anonymous["Location"]) == (
        HTTPStatus.FOUND,
        "/accounts/login/?next=/imports/",
    )
    from django.contrib.auth.models import User

    loner = Client()
    loner.force_login(User.objects.create_user("loner"))
    assert _upload(loner, {"run.json": _chat("q", "a")}).status_code == (HTTPStatus.FORBIDDEN)
    assert not Conversation.objects.exists()


def test_import_page_upload_over_the_body_limit_is_413(settings: Any) -> None:
    settings.REDUCTION_MAX_REQUEST_BYTES = 100
    client, _ = member_client()
    response = _upload(client, {"run.json": _chat("q" * 200, "a")})
    assert response.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert re.fullmatch(
        r"request body of \d+ bytes is over the limit of 100 bytes", response.content.decode()
    )


# Imported conversations in the list and on their page ---------------------------------------


def _imported(workspace: Any) -> None:
    # Two tool calls with long results, so the engine's defaults have something to
    # truncate: 60,000 characters is over its 50,000 (max_length_for_trunc).
    messages: list[dict[str, Any]] = [{"role": "user", "content": "look"}]
    for n in range(2):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "grep", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "x" * 60_000},
        ]
    messages.append({"role": "assistant", "content": "done"})
    raw = json.dumps({"messages": messages}).encode()
    recordings_import(workspace=workspace, files=[("run.json", raw)])


def test_imported_conversation_carries_a_recording_badge_in_the_list() -> None:
    client, ws = member_client()
    _imported(ws)
    page = client.get("/conversations/").content.decode()
    assert _has(
        page,
        '<span class="badge recording" title="imported from run.json">recording: openai_chat'
        "</span>",
    )


def test_imported_conversation_first_compares_no_reduction_with_the_defaults() -> None:
    client, ws = member_client()
    _imported(ws)
    page = client.get("/conversations/run/").content.decode()
    assert _has(page, '<span class="badge recording">recording: openai_chat</span>')
    assert "no reduction</strong> against <strong>the engine's defaults" in page
    chart = chart_config(page, "context-chart")
    lines = [d["label"] for d in chart["data"]["datasets"] if not d["label"].startswith("thr")]
    assert lines == ["no reduction", "engine defaults"]
    none, defaults = (d["data"] for d in chart["data"]["datasets"][:2])
    # Three model calls; the defaults truncate both 60,000-character results, so from the
    # second call on they send less than no reduction does.
    assert len(none) == len(defaults) == 3
    assert none[0] == defaults[0]
    assert all(d < n for n, d in zip(none[1:], defaults[1:], strict=True))
    assert 'class="hint unchanged"' not in page


def test_import_list_sorts_by_its_columns_and_swaps_in_place() -> None:
    client, workspace = member_client()
    made = [
        RecordingImport.objects.create(
            workspace=workspace, status=status, progress_done=done, progress_total=5
        )
        for status, done in (("done", 5), ("running", 2), ("failed", 0))
    ]
    ids = [job.pk for job in made]

    def listed(**params: str) -> list[int]:
        response = client.get("/imports/", params)
        assert response.status_code == HTTPStatus.OK
        return [
            int(i) for i in re.findall(r'<td><a href="/imports/(\d+)/">', response.content.decode())
        ]

    assert listed() == ids[::-1]
    assert listed(sort="-done") == ids
    assert listed(sort="status") == [ids[0], ids[2], ids[1]]  # done, failed, running
    assert listed(sort="error") == listed(sort="-nonsense") == ids[::-1]
    swapped = client.get("/imports/", {"sort": "done"}, headers=HX).content.decode()
    assert swapped.lstrip().startswith('<div id="import-table">')
    assert 'href="/imports/?sort=-done"' in swapped
