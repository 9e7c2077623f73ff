"""Traces and eval logs through the three import doors: each OpenTelemetry attribute
style (current GenAI conventions, the older indexed attributes, OpenInference) and both
Inspect AI log formats (``.eval`` and ``.json``), by the service, the REST API, the
Import page and ``manage.py import_recordings``, each detected without being named."""

from __future__ import annotations

import shutil
from http import HTTPStatus
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from reduction_app.conversations.imports import recording_id, recordings_import
from reduction_app.models import Conversation, Workspace
from simulator.importers import load_conversations
from tests.app.conversations.recordings import OTEL
from tests.app.dashboard_data import member_client
from tests.app.pages_support import elements, parsed, text
from tests.app.support import ApiClient
from tests.openai_server import OpenAIServer
from tests.simulator.inspect_logs import write_log
from tests.simulator.test_otel_instrumentations import (
    ROUNDS,
    Recorder,
    agent_loop,
    instrumented,
    replies,
)

pytestmark = pytest.mark.django_db

STYLES = ["genai-current.jsonl", "genai-indexed.jsonl", "openinference.jsonl", "eval", "json"]


def _file(style: str, tmp_path: Path) -> tuple[Path, str]:
    """The file of ``style`` and the format it is read as."""
    if style in ("eval", "json"):
        return write_log(tmp_path / style, style), "inspect"
    return OTEL.parent / style, "otel"


def _expected_ids(path: Path) -> list[str]:
    return [recording_id(c, path.name) for c in load_conversations(path)]


@pytest.mark.parametrize("style", STYLES)
def test_the_service_imports_each_style(style: str, workspace: Workspace, tmp_path: Path) -> None:
    path, fmt = _file(style, tmp_path)
    [result] = recordings_import(workspace=workspace, files=[(path.name, path.read_bytes())])
    assert result["format"] == fmt
    assert [c["conversation_id"] for c in result["conversations"]] == _expected_ids(path)


@pytest.mark.parametrize("style", STYLES)
def test_the_api_imports_each_style_as_a_raw_body(
    style: str, api: ApiClient, tmp_path: Path
) -> None:
    path, fmt = _file(style, tmp_path)
    response = api.post_raw(
        f"/conversations/import?filename={path.name}",
        path.read_bytes(),
        content_type="application/octet-stream",
    )
    assert response.status_code == HTTPStatus.CREATED, response.json()
    [made] = response.json()["files"]
    assert made["format"] == fmt
    assert [c["conversation_id"] for c in made["conversations"]] == _expected_ids(path)
    for conversation_id in _expected_ids(path):
        stored = api.get(f"/conversations/{conversation_id}").json()
        assert (stored["source"], stored["imported_from"]) == (fmt, path.name)


@pytest.mark.parametrize("style", STYLES)
def test_the_import_page_imports_each_style(style: str, tmp_path: Path) -> None:
    client, ws = member_client()
    path, fmt = _file(style, tmp_path)
    response = client.post(
        "/imports/", {"file": [SimpleUploadedFile(path.name, path.read_bytes())]}
    )
    assert response.status_code == HTTPStatus.OK
    rows = Conversation.objects.filter(workspace=ws).order_by("client_id")
    assert [(c.client_id, c.source) for c in rows] == sorted((i, fmt) for i in _expected_ids(path))


def test_import_recordings_imports_a_folder_of_every_style(
    workspace: Workspace, tmp_path: Path
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    expected = []
    for style in STYLES:
        path, fmt = _file(style, tmp_path / "made")
        copy = folder / f"{style.split('.')[0]}{''.join(path.suffixes)}"
        shutil.copyfile(path, copy)
        expected += [(i, fmt) for i in _expected_ids(copy)]
    out = StringIO()
    call_command(
        "import_recordings", str(folder), "--workspace", workspace.slug, "--quiet", stdout=out
    )
    assert out.getvalue().splitlines()[-1] == (
        f"Imported {len(expected)} conversations from 5 files into workspace '{workspace.slug}'."
    )
    rows = Conversation.objects.filter(workspace=workspace)
    # The .eval and .json logs are one run: the second import of a sample gets "-2".
    assert sorted(c.source for c in rows) == sorted(fmt for _, fmt in expected)
    ids = {c.client_id for c in rows}
    assert {i for i, _ in expected} <= ids
    assert {f"{i}-2" for i, fmt in expected if fmt == "inspect"} <= ids


@pytest.mark.slow
def test_imported_trace_keeps_and_shows_per_call_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A loop traced by OpenInference, imported through the Import page: the provider's
    figures of every call are stored and shown on the conversation page, one row each."""
    client, ws = member_client()
    recorder = Recorder()
    with (
        OpenAIServer(replies(ROUNDS)) as server,
        instrumented("openinference", recorder, monkeypatch),
        recorder.tracer.start_as_current_span("invoke_agent"),
    ):
        agent_loop(server.url, ROUNDS)
    path = recorder.write(tmp_path / "<i>run.jsonl")
    response = client.post(
        "/imports/", {"file": [SimpleUploadedFile(path.name, path.read_bytes())]}
    )
    assert response.status_code == HTTPStatus.OK
    [conversation] = Conversation.objects.filter(workspace=ws)
    # Call K (from 1) produced message 2K (from 0): 100 + K prompt tokens, K cached, K out.
    calls = [(k, 2 * k) for k in range(1, 5)]
    assert conversation.provider_usage is not None
    assert conversation.provider_usage["prompt_tokens"] == {str(i): 100 + k for k, i in calls}
    assert conversation.provider_usage["cached_prompt_tokens"] == {str(i): k for k, i in calls}
    assert conversation.provider_usage["completion_tokens"] == {str(i): k for k, i in calls}
    page = client.get(f"/conversations/{conversation.client_id}/")
    assert "<i>run" not in page.content.decode()
    [table] = elements(parsed(page), "table", class_="usage")
    rows = [[text(td) for td in elements(tr, "td")] for tr in elements(table, "tr")[1:]]
    *per_call, total = rows
    assert [row[:5] for row in per_call] == [
        [str(k), str(i + 1), str(100 + k), str(k), str(k)] for k, i in calls
    ]
    # Then each call's input cost, and their sum.
    assert all(row[5].startswith("$") for row in per_call) and total[-1].startswith("$")
    links = [dict(a.attributes)["href"] for a in elements(table, "a")]
    assert links == [f"/conversations/{conversation.client_id}/messages/{i + 1}/" for _, i in calls]
