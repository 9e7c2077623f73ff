"""Errors the services raise for requests the records cannot satisfy; the API and the
pages show their message.

- ``ServiceError``: a conflicting write, or a stale ``previous_revision`` (answered 409)
  - ``QuotaExceeded``: over a workspace's offload quota or request rate (answered 429)
  - ``LimitExceeded``: more work than one request may ask for (answered 422)
- ``SimulationInputError`` (a ``ValueError``): a simulation that cannot run (answered 422)
"""

from __future__ import annotations


class ServiceError(Exception):
    """A request the records cannot satisfy (a duplicate name, say); shown to the client."""


class QuotaExceeded(ServiceError):
    """A request beyond one of its workspace's quotas (its offload quota or its request
    rate); nothing of it was recorded. Answered 429, with ``Retry-After`` when waiting helps."""

    def __init__(self, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Seconds until the request may succeed, when only time is needed."""


class LimitExceeded(ServiceError):
    """A request asking for more work than any one request may (``REDUCTION_MAX_MESSAGES``,
    ``REDUCTION_MAX_OFFLOADS``), refused before anything of it was recorded. The message
    names the limit and its setting."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        """The request's field at fault, when one is."""


class StaleRevision(ServiceError):
    """A ``/clear`` that continues a client's context from a revision that is not the
    conversation's current one (another call answered it since, or there is none)."""

    def __init__(self, current: int | None) -> None:
        if current is None:
            message = (
                "this conversation has no context to continue; send the whole context "
                "(without previous_revision)"
            )
        else:
            message = (
                f"previous_revision is stale: the conversation's context is at revision "
                f"{current}; send the whole context (without previous_revision)"
            )
        super().__init__(message)
        self.current = current
        """The conversation's current revision; ``None`` when it has none."""


class SimulationInputError(ValueError):
    """A simulation request that cannot run; ``field`` names what is at fault."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        super().__init__(f"{field}: {problem}")
