"""The offload storage on S3, or any S3-compatible server (MinIO, Ceph, R2, moto), through
django-storages; chosen with ``OFFLOAD_STORAGE=s3`` (see ``config/settings.py``).

What it adds to django-storages' ``S3Storage`` is the contract the rest of the app holds
every storage to, as the local folder keeps it: a storage that fails raises ``OSError``
(``FileNotFoundError`` for content that is not there), so the API answers 503 and the
file pages 404 without knowing which storage is behind them. botocore's own errors are
not ``OSError``; here they become :class:`S3StorageError`. A file opened for reading is
fetched at once, so a failure comes from ``open()``, where callers handle it, rather
than from a later ``read()`` (``S3File`` downloads the whole object on the first read
anyway; ``max_memory_size`` in the settings makes a large one spill to a temporary file).

Writes need nothing more to be whole: S3 makes an object visible only once its upload
is complete (a single PUT, or a multipart upload once completed), so a worker killed
while uploading leaves nothing under the key, never a part of the content; a save at a
key that holds an object replaces it whole (``file_overwrite``, django-storages'
default), which ``records.storage`` relies on to write damaged content again. The local
folder gets the same from ``records/folder.py``.

Object keys are ``<location>/<storage name>``; storage names never start with ``/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# django-storages, boto3 and botocore ship no types; the class below types what it adds.
from boto3.exceptions import Boto3Error  # type: ignore[import-untyped]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped]
from storages.backends.s3 import S3Storage  # type: ignore[import-untyped]

__all__ = ["OffloadS3Storage", "S3StorageError"]

_S3_ERRORS = (BotoCoreError, ClientError, Boto3Error)


class S3StorageError(OSError):
    """S3 answered an offload storage request with an error, or could not be reached."""


@contextmanager
def _as_os_errors(action: str, name: str) -> Iterator[None]:
    try:
        yield
    except _S3_ERRORS as exc:
        response: dict[str, Any] = getattr(exc, "response", {}) or {}
        if response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
            raise FileNotFoundError(f"{name} is not in the bucket") from exc
        raise S3StorageError(f"could not {action} {name} on S3: {exc}") from exc


class OffloadS3Storage(S3Storage):  # type: ignore[misc]
    """``S3Storage`` whose failures are ``OSError``, and whose reads fetch on ``open()``."""

    def _open(self, name: str, mode: str = "rb") -> Any:
        with _as_os_errors("read", name):
            handle = super()._open(name, mode)
            if "r" in mode:
                handle.file  # noqa: B018  (the property downloads the object)
        return handle

    def _save(self, name: str, content: Any) -> str:
        with _as_os_errors("write", name):
            saved: str = super()._save(name, content)
        return saved

    def delete(self, name: str) -> None:
        with _as_os_errors("delete", name):
            super().delete(name)

    def exists(self, name: str) -> bool:
        with _as_os_errors("look up", name):
            found: bool = super().exists(name)
        return found

    def size(self, name: str) -> int:
        with _as_os_errors("look up", name):
            size: int = super().size(name)
        return size
