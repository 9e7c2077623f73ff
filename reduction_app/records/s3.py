"""The offload storage on S3, or any S3-compatible server, through django-storages
(``OFFLOAD_STORAGE=s3``).

It holds S3 to the contract every storage keeps here: a failure is an ``OSError``
(:class:`S3StorageError`), raised by ``open()`` rather than a later ``read()``, so the
API and pages need not know which storage is behind them.
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
