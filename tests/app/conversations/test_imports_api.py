"""Importing recordings over HTTP: ``POST /api/v1/conversations/import`` (a raw body or
multipart parts; inline, or on the task workers) and ``GET /api/v1/imports/{id}``."""

from __future__ import annotations

import json
from http import HTTPStatus
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from reduction_app.engine import formats
from reduction_app.models import Conversation, RecordingImport, RecordingUpload
from simulator.importers import FORMATS, load_conversations
from tests.app.conversations.recordings import ALL_FORMATS, SWE_AGENT, sample
from tests.app.support import API, ApiClient, documented, error
from tests.conftest import CONVERSATIONS, needs_recordings

pytestmark = pytest.mark.django_db

IMPORT = "/conversations/import"


def _chat(*contents: str) -> bytes:
    roles = ("user", "assistant")
    return json.dumps(
        {"messages": [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]}
    ).encode()


def _raw(api: ApiClient, data: bytes, **params: str) -> Any:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return api.post_raw(f"{IMPORT}?{query}", data, content_type="application/octet-stream")


def _multipart(api: ApiClient, paths: list[Path], **fields: str) -> Any:
    handles = [p.open("rb") for p in paths]
    try:
        return api.client.post(API + IMPORT, {"file": handles, **fields}, headers=api.headers)
    finally:
        for handle in handles:
            handle.close()


def _without_times(body: dict[str, Any]) -> dict[str, Any]:
    created, finished = body.pop("created_at"), body.pop("finished_at")
    assert created and (finished or body["status"] in ("queued", "running"))
    return body


@needs_recordings
def test_import_a_raw_body_inline(api: ApiClient) -> None:
    raw = (CONVERSATIONS / SWE_AGENT).read_bytes()
    response = _raw(api, raw, filename="gpt-4o-test-repo-1c2844.traj")
    assert response.status_code == HTTPStatus.CREATED, response.json()
    body = response.json()
    job = RecordingImport.objects.get()
    assert _without_times(dict(body)) == {
        "id": job.pk,
        "status": "done",
        "format": "",
        "replace": False,
        "progress": {"done": 1, "total": 1},
        "files": [
            {
                "filename": "gpt-4o-test-repo-1c2844.traj",
                "format": "swe_agent",
                "conversations": [
                    {
                        "conversation_id": "swe-agent--gpt-4o-test-repo-1c2844--gpt-4o",
                        "title": "gpt-4o-test-repo-1c2844 · SWE-agent · gpt-4o",
                        "message_count": 11,
                        "omits": ["the tool schemas"],
                        "omitted_tokens": None,
                    }
                ],
            }
        ],
        "error": "",
    }
    assert api.get(f"/imports/{job.pk}").json() == body
    stored = api.get("/conversations/swe-agent--gpt-4o-test-repo-1c2844--gpt-4o").json()
    assert (stored["format"], stored["message_count"]) == ("openai_chat", 11)
    assert (stored["source"], stored["imported_from"], stored["omits"]) == (
        "swe_agent",
        "gpt-4o-test-repo-1c2844.traj",
        ["the tool schemas"],
    )


@needs_recordings
def test_import_one_small_file_of_every_format_as_multipart_parts(
    api: ApiClient, tmp_path: Path, settings: Any
) -> None:
    settings.REDUCTION_IMPORT_INLINE_BYTES = settings.REDUCTION_MAX_REQUEST_BYTES
    paths = [sample(fmt, tmp_path) for fmt in ALL_FORMATS]
    response = _multipart(api, paths)
    assert response.status_code == HTTPStatus.CREATED, response.json()
    files = response.json()["files"]
    assert [(f["filename"], f["format"]) for f in files] == [
        (p.name, fmt) for p, fmt in zip(paths, ALL_FORMATS, strict=True)
    ]
    for path, result in zip(paths, files, strict=True):
        # The messages as the simulator reads them, in the wire format they are stored in.
        expected = [len(formats.dump(r.format, r.messages)[1]) for r in load_conversations(path)]
        assert [c["message_count"] for c in result["conversations"]] == expected
    assert Conversation.objects.filter(workspace=api.workspace).count() == sum(
        len(f["conversations"]) for f in files
    )


def test_import_multipart_with_a_format_field_and_replace(api: ApiClient, tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_bytes(_chat("q", "a"))
    assert _multipart(api, [path], format="openai_chat").status_code == HTTPStatus.CREATED
    path.write_bytes(_chat("q", "a", "q2", "a2"))
    taken = _multipart(api, [path])
    assert taken.status_code == HTTPStatus.CONFLICT
    assert taken.json() == error(
        "run.json: conversation 'run' already exists in this workspace "
        "(import with replace to overwrite it)"
    )
    replaced = _multipart(api, [path], replace="true")
    assert replaced.status_code == HTTPStatus.CREATED, replaced.json()
    assert replaced.json()["files"][0]["conversations"] == [
        {
            "conversation_id": "run",
            "title": "run.json",
            "message_count": 4,
            "omits": [],
            "omitted_tokens": None,
        }
    ]
    assert replaced.json()["replace"] is True


def _drain_worker() -> None:
    call_command("db_worker", "--batch", "--no-startup-delay", "--no-reload", stdout=StringIO())


@needs_recordings
@pytest.mark.django_db(transaction=True)
def test_import_over_the_inline_limit_runs_on_the_task_worker(
    api: ApiClient, settings: Any
) -> None:
    raw = (CONVERSATIONS / SWE_AGENT).read_bytes()
    settings.REDUCTION_IMPORT_INLINE_BYTES = len(raw) - 1
    response = _raw(api, raw, filename="run.traj", format="swe_agent")
    assert response.status_code == HTTPStatus.ACCEPTED, response.json()
    queued = _without_times(response.json())
    assert (queued["status"], queued["progress"], queued["files"], queued["format"]) == (
        "queued",
        {"done": 0, "total": 1},
        None,
        "swe_agent",
    )
    assert not Conversation.objects.exists()
    assert RecordingUpload.objects.get().content == raw
    _drain_worker()
    done = api.get(f"/imports/{queued['id']}").json()
    assert (done["status"], done["progress"], done["error"]) == (
        "done",
        {"done": 1, "total": 1},
        "",
    )
    assert done["files"] == [
        {
            "filename": "run.traj",
            "format": "swe_agent",
            "conversations": [
                {
                    "conversation_id": "swe-agent--run--gpt-4o",
                    "title": "run · SWE-agent · gpt-4o",
                    "message_count": 11,
                    "omits": ["the tool schemas"],
                    "omitted_tokens": None,
                }
            ],
        }
    ]
    assert not RecordingUpload.objects.exists()  # the upload goes once imported
    assert Conversation.objects.get(client_id="swe-agent--run--gpt-4o").source == "swe_agent"


@pytest.mark.django_db(transaction=True)
def test_import_failing_on_the_task_worker_records_why_and_imports_nothing(
    api: ApiClient, tmp_path: Path, settings: Any
) -> None:
    settings.REDUCTION_IMPORT_INLINE_BYTES = 10
    good, bad = tmp_path / "good.json", tmp_path / "bad.jsonl"
    good.write_bytes(_chat("q", "a"))
    bad.write_bytes(_chat("q", "a") + b"\n{oops\n")
    queued = _multipart(api, [good, bad]).json()
    _drain_worker()
    failed = api.get(f"/imports/{queued['id']}").json()
    assert (failed["status"], failed["files"], failed["error"]) == (
        "failed",
        None,
        "bad.jsonl:2: not JSON: Expecting property name enclosed in double quotes at column 2",
    )
    assert not Conversation.objects.exists()
    assert not RecordingUpload.objects.exists()


def test_import_errors_name_the_file_line_and_field(api: ApiClient) -> None:
    broken = b'{"messages": [{"role": "user", "content": "hi"}, {"role": "robot"}]}'
    response = _raw(api, broken, filename="broken.json")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error("broken.json: messages[1].role: unknown role 'robot'", "file")
    lines = _raw(api, _chat("q", "a") + b"\n" + _chat("q", "a") + b"\nnope\n", filename="r.jsonl")
    assert lines.json() == error("r.jsonl:3: not JSON: Expecting value at column 1", "file")
    assert not Conversation.objects.exists()
    assert not RecordingImport.objects.exists()


def test_import_refuses_an_unknown_format_naming_the_allowed_ones(api: ApiClient) -> None:
    response = _raw(api, _chat("q", "a"), format="csv")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        f"format: unknown format 'csv'; expected one of {list(FORMATS)}", "format"
    )


def test_import_refuses_an_empty_body_and_multipart_without_files(api: ApiClient) -> None:
    empty = _raw(api, b"")
    assert (empty.status_code, empty.json()) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        error("request body: empty; send a recording as the body", "file"),
    )
    no_parts = api.client.post(API + IMPORT, {"format": "tau2"}, headers=api.headers)
    assert (no_parts.status_code, no_parts.json()) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        error("file: send at least one file part named 'file'", "file"),
    )


def test_import_over_the_message_limit_is_422(api: ApiClient, settings: Any) -> None:
    settings.REDUCTION_MAX_MESSAGES = 1
    response = _raw(api, _chat("q", "a"), filename="run.json")
    assert (response.status_code, response.json()) == (
        HTTPStatus.UNPROCESSABLE_ENTITY,
        error(
            "run.json: run.json: 2 messages is over the limit of 1 messages per request "
            "(REDUCTION_MAX_MESSAGES)",
            "file",
        ),
    )


def test_import_over_the_body_limit_is_413(api: ApiClient, settings: Any) -> None:
    body = _chat("q", "a")
    settings.REDUCTION_MAX_REQUEST_BYTES = len(body) - 1
    response = _raw(api, body)
    assert (response.status_code, response.json()) == (
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        error(f"request body of {len(body)} bytes is over the limit of {len(body) - 1} bytes"),
    )


def test_another_workspaces_import_is_404(api: ApiClient, other_api: ApiClient) -> None:
    job = _raw(api, _chat("q", "a"), filename="run.json").json()
    response = other_api.get(f"/imports/{job['id']}")
    assert (response.status_code, response.json()) == (
        HTTPStatus.NOT_FOUND,
        error(f"import {job['id']} not found", "import_id"),
    )
    assert other_api.get("/conversations/run").status_code == HTTPStatus.NOT_FOUND


def test_import_needs_a_key(client: Client) -> None:
    post = client.post(API + IMPORT, _chat("q", "a"), content_type="application/json")
    get = client.get(API + "/imports/1")
    assert [r.status_code for r in (post, get)] == [HTTPStatus.UNAUTHORIZED] * 2
    assert post.json() == error("missing or invalid API key")
    assert not Conversation.objects.exists()


def test_import_operations_document_their_errors(api: ApiClient) -> None:
    assert documented(api, "post", IMPORT) == {
        HTTPStatus.CREATED,
        HTTPStatus.ACCEPTED,
        HTTPStatus.BAD_REQUEST,
        HTTPStatus.UNAUTHORIZED,
        HTTPStatus.CONFLICT,
        HTTPStatus.LENGTH_REQUIRED,
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        HTTPStatus.UNPROCESSABLE_ENTITY,
    }
    assert documented(api, "get", "/imports/{import_id}") == {
        HTTPStatus.OK,
        HTTPStatus.UNAUTHORIZED,
        HTTPStatus.NOT_FOUND,
        HTTPStatus.UNPROCESSABLE_ENTITY,
    }


def test_import_an_inspect_eval_log_as_a_binary_body(api: ApiClient, tmp_path: Path) -> None:
    """A ``.eval`` log is a ZIP archive: read from the raw bytes, one conversation an epoch."""
    path = sample("inspect", tmp_path)
    response = _raw(api, path.read_bytes(), filename="run.eval")
    assert response.status_code == HTTPStatus.CREATED, response.json()
    [result] = response.json()["files"]
    assert (result["filename"], result["format"]) == ("run.eval", "inspect")
    # Each epoch: the prompt, then three calls of which two read a file (6 messages).
    assert result["conversations"] == [
        {
            "conversation_id": f"inspect-ai--read_files-sample-fix-1-epoch-{n}--mockllm-model",
            "title": f"read_files sample fix-1, epoch {n} · Inspect AI · mockllm/model",
            "message_count": 6,
            "omits": [],
            "omitted_tokens": None,
        }
        for n in (1, 2)
    ]


@pytest.mark.django_db(transaction=True)
def test_import_an_inspect_eval_log_on_the_task_worker(
    api: ApiClient, tmp_path: Path, settings: Any
) -> None:
    """The upload is stored as bytes and read by the worker as the request would."""
    raw = sample("inspect", tmp_path).read_bytes()
    settings.REDUCTION_IMPORT_INLINE_BYTES = len(raw) - 1
    response = _raw(api, raw, filename="run.eval")
    assert response.status_code == HTTPStatus.ACCEPTED, response.json()
    assert RecordingUpload.objects.get().content == raw
    _drain_worker()
    done = api.get(f"/imports/{response.json()['id']}").json()
    assert (done["status"], done["error"]) == ("done", "")
    assert Conversation.objects.filter(source="inspect").count() == 2


def test_import_a_truncated_eval_log_names_the_file(api: ApiClient, tmp_path: Path) -> None:
    raw = sample("inspect", tmp_path).read_bytes()
    response = _raw(api, raw[: len(raw) // 2], filename="cut.eval")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "cut.eval: not a readable .eval log (a ZIP archive): File is not a zip file", "file"
    )
