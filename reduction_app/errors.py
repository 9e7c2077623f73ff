"""Errors the services raise for requests the records cannot satisfy; the API and the
pages show their message.

- ``ServiceError``: a conflicting write (answered 409)
  - ``QuotaExceeded``: a workspace over its offload quota or request rate (answered 429,
    with ``Retry-After`` when waiting helps)
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request the records cannot satisfy (a duplicate name, say); shown to the client."""


class QuotaExceeded(ServiceError):
    """A request beyond one of its workspace's quotas; nothing of it was recorded."""

    def __init__(self, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Seconds until the request may succeed, when only time is needed."""
