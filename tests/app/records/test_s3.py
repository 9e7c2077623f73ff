"""The offload storage on S3 (moto's server on loopback): object keys, and S3 failures
turned into the ``OSError`` the rest of the app handles (503 from the API, 404 from the
file pages, a delete that is done all the same), and writes that are whole or not there."""

from __future__ import annotations

import io
import socket
import uuid
from http import HTTPStatus
from typing import Any

import pytest
from botocore.exceptions import ClientError
from django.core.files.base import ContentFile, File
from storages.backends.s3 import S3Storage

from reduction_app.engine import WriteRequest
from reduction_app.models import Conversation, EventRecord, OffloadedFile, Workspace
from reduction_app.records.s3 import OffloadS3Storage, S3StorageError
from reduction_app.records.storage import DjangoStorageBackend, offload_storage
from tests.app.dashboard_data import member_client, stored_file
from tests.app.support import ApiClient, error, offload
from tests.offload_stores import BucketStore, S3Server, s3_storage_entry, use_store

pytestmark = pytest.mark.django_db


@pytest.fixture
def bucket(settings: Any, s3_server: S3Server) -> BucketStore:
    """The offload storage on the loopback S3 server, under a fresh key prefix."""
    store = BucketStore(s3_server, f"offload-{uuid.uuid4().hex[:12]}")
    use_store(settings, store)
    return store


def unreachable(settings: Any, store: BucketStore) -> None:
    """Point the offload storage at the same bucket and prefix, on a port nobody listens
    on (connections are refused at once, and the test client config retries once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    entry = s3_storage_entry(f"http://127.0.0.1:{port}", store.server.bucket, store.location)
    settings.STORAGES = {**settings.STORAGES, "offload": entry}


def test_s3_objects_are_keyed_under_the_location(workspace: Workspace, bucket: BucketStore) -> None:
    backend = DjangoStorageBackend(workspace)
    assert isinstance(backend.storage, OffloadS3Storage)
    backend.write(WriteRequest(file_path="/tmp/trunc/call_1", content="x" * 30))
    backend.store()
    name = backend.staged["/tmp/trunc/call_1"].storage_name
    listed = bucket.server.client.list_objects_v2(Bucket=bucket.server.bucket, Prefix="")
    keys = [item["Key"] for item in listed["Contents"]]
    assert f"{bucket.location}/{name}" in keys
    assert not any(key.startswith("/") for key in keys)


def test_s3_storage_answers_as_the_local_folder_does(bucket: BucketStore) -> None:
    """Missing content is FileNotFoundError; deleting it is no error; sizes are in bytes."""
    storage = offload_storage()
    with pytest.raises(FileNotFoundError, match=r"ws1/no/such\.txt"):
        storage.open("ws1/no/such.txt")
    assert storage.exists("ws1/no/such.txt") is False
    storage.delete("ws1/no/such.txt")
    storage.save("ws1/ab/some.txt", ContentFile("día".encode()))
    assert storage.size("ws1/ab/some.txt") == 4
    with storage.open("ws1/ab/some.txt") as handle:
        assert handle.read() == "día".encode()


class _BreakingRead(io.RawIOBase):
    """A content whose reading fails after its first bytes: an upload that stops."""

    def __init__(self) -> None:
        self.sent = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.sent:
            raise OSError(5, "Input/output error")
        self.sent = True
        buffer[:5] = b"first"
        return 5


def test_s3_a_write_is_whole_or_not_there(bucket: BucketStore) -> None:
    """An upload that stops leaves nothing at the key; a save at a key holding a damaged
    object replaces it whole (no name beside it)."""
    storage = offload_storage()
    with pytest.raises(OSError, match="Input/output error"):
        storage.save("ws1/ab/cut.txt", File(_BreakingRead(), name="cut.txt"))
    assert bucket.names() == []
    bucket.put("ws1/ab/whole.txt", b"")
    assert storage.save("ws1/ab/whole.txt", ContentFile(b"whole content")) == "ws1/ab/whole.txt"
    assert bucket.names() == ["ws1/ab/whole.txt"]
    assert bucket.read_bytes("ws1/ab/whole.txt") == b"whole content"


def test_s3_unreachable_is_an_os_error(settings: Any, bucket: BucketStore) -> None:
    unreachable(settings, bucket)
    storage = offload_storage()
    for call in (
        lambda: storage.exists("ws1/a.txt"),
        lambda: storage.open("ws1/a.txt"),
        lambda: storage.save("ws1/a.txt", ContentFile(b"a")),
        lambda: storage.delete("ws1/a.txt"),
        lambda: storage.size("ws1/a.txt"),
    ):
        with pytest.raises(S3StorageError, match="on S3: Could not connect to the endpoint URL"):
            call()


def test_s3_unreachable_fails_a_truncate_with_503_and_records_nothing(
    api: ApiClient, settings: Any, bucket: BucketStore
) -> None:
    unreachable(settings, bucket)
    body = {"config": {"max_length_for_trunc": 20}, "tool_name": "grep", "result": "q" * 30}
    response = api.post("/truncate", {**body, "tool_call_id": "call_1", "conversation_id": "r"})
    assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
    assert response.json() == error(
        "truncation: failed to write /tmp/trunc/call_1: the offload storage failed (S3StorageError)"
    )
    assert OffloadedFile.objects.count() == EventRecord.objects.count() == 0
    assert Conversation.objects.count() == 0


def test_s3_unreachable_reads_are_503(api: ApiClient, settings: Any, bucket: BucketStore) -> None:
    path = offload(api, "recorded while S3 was up")
    unreachable(settings, bucket)
    for endpoint in ("/files/read", "/files/raw"):
        response = api.get(endpoint, {"path": path})
        assert response.status_code == HTTPStatus.SERVICE_UNAVAILABLE
        assert response.json() == error("the offload storage failed (S3StorageError)")


def test_s3_unreachable_file_pages_are_404(settings: Any, bucket: BucketStore) -> None:
    client, ws = member_client()
    stored_file(ws, "/f/1", "recorded while S3 was up")
    assert client.get("/files/raw/", {"path": "/f/1"}).status_code == HTTPStatus.OK
    unreachable(settings, bucket)
    for url in ("/files/view/", "/files/raw/"):
        assert client.get(url, {"path": "/f/1"}).status_code == HTTPStatus.NOT_FOUND


def test_s3_refused_delete_still_deletes_the_conversation(
    api: ApiClient,
    bucket: BucketStore,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """S3 refusing to delete the content (no s3:DeleteObject) leaves bytes behind, not an
    error: the rows are gone."""

    def access_denied(self: Any, name: str) -> None:
        raise ClientError(
            {"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}},
            "DeleteObject",
        )

    offload(api, "a" * 30, conversation="run-1")
    monkeypatch.setattr(S3Storage, "delete", access_denied)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.delete("/conversations/run-1")
    assert response.status_code == HTTPStatus.NO_CONTENT
    assert OffloadedFile.objects.count() == 0
    assert len(bucket.names()) == 1
