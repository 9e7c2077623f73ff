"""The offload storage a test runs on: a local folder, or a bucket on a real S3-protocol
server on loopback (moto's server mode in a child process, started once per test run).

An :class:`OffloadStore` is that storage seen from outside the app (the names and bytes
of what is stored), so a test checks what a request left behind the same way on both.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

from config.settings import _offload_storage

SERVER_SCRIPT = Path(__file__).with_name("s3_server.py")
BUCKET = "reduction-lab-tests"
START_SECONDS = 60
"""How long the server may take to start (it takes well under a second)."""
STOP_SECONDS = 10


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str
    client: Any
    """A boto3 S3 client of the server, for looking at the bucket from outside the app."""


def _client_config() -> Any:
    from botocore.config import Config

    # Bounded: a refused or stuck connection fails the test in seconds, not minutes.
    return Config(
        s3={"addressing_style": "path"},
        retries={"max_attempts": 2, "mode": "standard"},
        connect_timeout=5,
        read_timeout=30,
    )


def s3_storage_entry(endpoint: str, bucket: str, location: str) -> dict[str, Any]:
    """The ``offload`` entry of STORAGES the settings build from ``OFFLOAD_STORAGE=s3`` and
    the standard variables, with the test credentials (moto takes any) and time limits."""
    entry = _offload_storage(
        {
            "OFFLOAD_STORAGE": "s3",
            "AWS_STORAGE_BUCKET_NAME": bucket,
            "AWS_S3_ENDPOINT_URL": endpoint,
            "AWS_S3_REGION_NAME": "us-east-1",
            "AWS_LOCATION": location,
        }
    )
    entry["OPTIONS"].update(
        access_key="testing", secret_key="testing", client_config=_client_config()
    )
    return entry


def _one_loader_per_data_path(mp: pytest.MonkeyPatch) -> None:
    """Every boto3 session of the run reads the service models through one loader, which
    keeps what it has parsed. The app builds a new S3 storage for each test (its settings
    change), and each new session would otherwise parse S3's models again: about a third
    of a second per test, more than the requests themselves take."""
    import botocore.loaders
    import botocore.session

    loaders: dict[str | None, Any] = {}

    def shared_loader(search_path_string: str | None = None) -> Any:
        loader = loaders.get(search_path_string)
        if loader is None:
            loader = loaders[search_path_string] = botocore.loaders.create_loader(
                search_path_string
            )
        # boto3 adds its own folder to the loader of each new session: once is enough.
        loader.search_paths[:] = dict.fromkeys(loader.search_paths)
        return loader

    mp.setattr(botocore.session, "create_loader", shared_loader)


def _isolated_from_real_aws(mp: pytest.MonkeyPatch, scratch: Path) -> None:
    """Nothing of the machine's AWS setup (profiles, proxies, instance metadata) applies."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN"):
        mp.delenv(name, raising=False)
    mp.setenv("AWS_CONFIG_FILE", str(scratch / "aws-config"))
    mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(scratch / "aws-credentials"))
    mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name in ("NO_PROXY", "no_proxy"):
        mp.setenv(name, ",".join(filter(None, [os.environ.get(name, ""), "127.0.0.1"])))


@contextmanager
def running_s3_server(scratch: Path) -> Iterator[S3Server]:
    """moto's server on a free loopback port, with the test bucket; stopped on exit."""
    import boto3

    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        ready, _, _ = select.select([process.stdout], [], [], START_SECONDS)
        line = process.stdout.readline() if ready else ""
        if not line.strip().isdigit():
            pytest.fail(
                f"moto's S3 server did not start within {START_SECONDS} s (is the dev extra, "
                f"with moto[server], installed?); it said {line!r}",
                pytrace=False,
            )
        endpoint = f"http://127.0.0.1:{int(line)}"
        with pytest.MonkeyPatch.context() as mp:
            _isolated_from_real_aws(mp, scratch)
            _one_loader_per_data_path(mp)
            client = boto3.client(
                "s3",
                endpoint_url=endpoint,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
                config=_client_config(),
            )
            client.create_bucket(Bucket=BUCKET)
            yield S3Server(endpoint, BUCKET, client)
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()


class OffloadStore(Protocol):
    kind: str
    """``"local"`` or ``"s3"``: the test ids say which."""
    entry: dict[str, Any]
    """The ``offload`` entry of STORAGES that puts the app on this storage."""

    def names(self) -> list[str]:
        """The storage names of everything stored, sorted."""
        ...

    def read_bytes(self, name: str) -> bytes: ...

    def remove(self, name: str) -> None:
        """Remove stored content behind the app's back (content lost)."""
        ...

    def put(self, name: str, data: bytes) -> None:
        """Store ``data`` at ``name`` behind the app's back (content damaged)."""
        ...


@dataclass
class FolderStore:
    folder: Path
    kind: str = "local"
    entry: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.entry = {
            "BACKEND": "reduction_app.records.folder.OffloadFolderStorage",
            "OPTIONS": {"location": self.folder},
        }

    def names(self) -> list[str]:
        if not self.folder.exists():  # the storage creates it on its first write
            return []
        return sorted(
            p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*") if p.is_file()
        )

    def read_bytes(self, name: str) -> bytes:
        return (self.folder / name).read_bytes()

    def remove(self, name: str) -> None:
        (self.folder / name).unlink()

    def put(self, name: str, data: bytes) -> None:
        (self.folder / name).parent.mkdir(parents=True, exist_ok=True)
        (self.folder / name).write_bytes(data)


@dataclass
class BucketStore:
    server: S3Server
    location: str
    """The key prefix of this test's objects (each test has its own)."""
    kind: str = "s3"
    entry: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.entry = s3_storage_entry(self.server.endpoint, self.server.bucket, self.location)

    def names(self) -> list[str]:
        prefix = f"{self.location}/"
        pages = self.server.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.server.bucket, Prefix=prefix
        )
        keys = [item["Key"] for page in pages for item in page.get("Contents", [])]
        return sorted(key.removeprefix(prefix) for key in keys)

    def read_bytes(self, name: str) -> bytes:
        response = self.server.client.get_object(
            Bucket=self.server.bucket, Key=f"{self.location}/{name}"
        )
        data: bytes = response["Body"].read()
        return data

    def remove(self, name: str) -> None:
        self.server.client.delete_object(Bucket=self.server.bucket, Key=f"{self.location}/{name}")

    def put(self, name: str, data: bytes) -> None:
        self.server.client.put_object(
            Bucket=self.server.bucket, Key=f"{self.location}/{name}", Body=data
        )


def use_store(settings: Any, store: OffloadStore) -> OffloadStore:
    """Point the app's ``offload`` storage at ``store``; return it."""
    settings.STORAGES = {**settings.STORAGES, "offload": store.entry}
    return store
