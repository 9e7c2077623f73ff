"""``/mcp``: the MCP server over streamable HTTP, as a view of the WSGI app.

The view refuses an ``Origin`` the site does not serve (against DNS rebinding), takes
the REST API's keys as Bearer tokens and their request rate; then hands the request, as
an ASGI scope, to the ``mcp`` package's streamable-HTTP transport, stateless and
answering with JSON, run to its answer on an event loop of its own.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import anyio
import mcp_types as types
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import DatabaseError
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port, validate_host
from django.views.decorators.csrf import csrf_exempt
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings

from reduction_app.errors import QuotaExceeded
from reduction_app.mcp.server import WORKSPACE, build_server
from reduction_app.models import Workspace
from reduction_app.workspaces.rates import rate_limit_count
from reduction_app.workspaces.services import api_key_authenticate

logger = logging.getLogger(__name__)

SERVER = build_server()
# Django checked Host and will check the Origin below: the transport's own check, which
# takes fixed lists only, is left off. Its Content-Type and Accept checks still apply.
_SECURITY = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _error(status: int, message: str, code: int = types.INVALID_REQUEST) -> HttpResponse:
    """A JSON-RPC error with no id, as the transport answers a request it refuses."""
    body = types.JSONRPCError(
        jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message)
    )
    return HttpResponse(
        body.model_dump_json(by_alias=True, exclude_unset=True),
        status=status,
        content_type="application/json",
    )


def _origin_allowed(origin: str) -> bool:
    """An Origin is allowed when its host is one ``ALLOWED_HOSTS`` lets in (Django's own
    test of a Host, with its defaults under DEBUG) or it is one of
    ``CSRF_TRUSTED_ORIGINS``. Tools and agents send none."""
    if origin in settings.CSRF_TRUSTED_ORIGINS:
        return True
    host, _ = split_domain_port(urlsplit(origin).netloc)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(host) and validate_host(host, allowed)


def _authenticate(request: HttpRequest) -> Workspace | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    key = api_key_authenticate(raw_key=token.strip())
    if key is None:
        return None
    rate_limit_count(workspace=key.workspace)
    return key.workspace


def _scope(request: HttpRequest, workspace: Workspace) -> dict[str, Any]:
    """The ASGI scope of ``request``: its method, address and headers (WSGI holds header
    values as latin-1 text, so they go back to the same bytes), and the workspace."""
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode(),
        "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
        "server": (request.get_host(), int(request.get_port())),
        "state": {WORKSPACE: workspace},
    }


async def _serve(
    scope: dict[str, Any], body: bytes
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """Run the transport over one request; its status, headers and body."""
    answered = anyio.Event()
    delivered = False
    start: dict[str, Any] = {}
    parts: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # as a server does: the client is there until answered
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    # A manager per request: a stateless server keeps nothing between requests, and a
    # manager runs once.
    manager = StreamableHTTPSessionManager(
        app=SERVER,
        json_response=True,
        stateless=True,
        security_settings=_SECURITY,
        max_request_body_size=settings.REDUCTION_MAX_REQUEST_BYTES,
    )
    async with manager.run():
        await manager.handle_request(scope, receive, send)
    answered.set()
    return (
        start.get("status", HTTPStatus.INTERNAL_SERVER_ERROR),
        start.get("headers", []),
        b"".join(parts),
    )


@csrf_exempt
def mcp_endpoint(request: HttpRequest) -> HttpResponse:
    """The MCP endpoint: POST a JSON-RPC message, get its answer as JSON."""
    if request.method != "POST":
        # No stream the server opens (GET) and no session to end (DELETE).
        response = _error(HTTPStatus.METHOD_NOT_ALLOWED, "Method Not Allowed: POST messages")
        response["Allow"] = "POST"
        return response
    origin = request.headers.get("Origin")
    if origin is not None and not _origin_allowed(origin):
        return _error(HTTPStatus.FORBIDDEN, "Forbidden: this Origin is not served")
    try:
        workspace = _authenticate(request)
    except QuotaExceeded as exc:
        response = _error(HTTPStatus.TOO_MANY_REQUESTS, str(exc))
        if exc.retry_after is not None:
            response["Retry-After"] = str(exc.retry_after)
        return response
    except DatabaseError as exc:
        logger.error("MCP: the database failed (%s)", type(exc).__name__)
        return _error(
            HTTPStatus.SERVICE_UNAVAILABLE,
            f"the database failed ({type(exc).__name__})",
            types.INTERNAL_ERROR,
        )
    if workspace is None:
        response = _error(HTTPStatus.UNAUTHORIZED, "missing or invalid API key")
        response["WWW-Authenticate"] = "Bearer"
        return response
    # The body was read within REDUCTION_MAX_REQUEST_BYTES by reduction_app.limits.
    status, headers, body = async_to_sync(_serve)(_scope(request, workspace), request.body)
    response = HttpResponse(body, status=status)
    for name, value in headers:
        # Starlette sends content-length too; Django sets its own.
        if name.lower() != b"content-length":
            response[name.decode("latin-1")] = value.decode("latin-1")
    return response
