"""Errors the services raise for requests the records cannot satisfy; the API and the
pages show their message."""

from __future__ import annotations


class ServiceError(Exception):
    """A request the records cannot satisfy (a duplicate name, say); shown to the client."""
