"""The MCP server of offloaded content: the ``mcp`` package's low-level server, offering
the tools of ``reduction_app.mcp.tools`` to the workspace of the request's API key.

The package runs the protocol (handshake, version negotiation, ping, JSON-RPC errors);
this module answers the tools and resources (``reduction_app.mcp.resources``) requests,
running their Django work on the request's own thread. Over HTTP: ``mcp.views``.
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.db import DatabaseError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from reduction_app.mcp import resources
from reduction_app.mcp.tools import TOOLS, TOOLS_BY_NAME, StorageFailed, ToolProblem
from reduction_app.models import Workspace

logger = logging.getLogger(__name__)

SERVER_NAME = "reduction-lab"
INSTRUCTIONS = (
    "Offloaded tool output of your conversations, kept by Reduction Lab: when a notice "
    "such as <persisted-output> names a path, read it with read_file; search_files and "
    "list_files find what was offloaded."
)
WORKSPACE = "workspace"
"""The key, in the ASGI scope's ``state``, of the workspace the view authenticated."""

_LISTED = [
    types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.arguments.model_json_schema(),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    for tool in TOOLS
]


def _workspace(ctx: ServerRequestContext[Any]) -> Workspace:
    # The Starlette request the transport attached to the message; its state is the
    # ASGI scope's, which the view filled.
    request: Request | None = ctx.request
    if request is None:  # not over HTTP: no key, so no workspace
        raise MCPError(types.INTERNAL_ERROR, "no workspace: this server is served over HTTP only")
    workspace: Workspace = getattr(request.state, WORKSPACE)
    return workspace


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def _call(workspace: Workspace, name: str, arguments: dict[str, Any] | None) -> str:
    tool = TOOLS_BY_NAME[name]
    return tool.run(workspace, tool.parse(arguments))


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_LISTED)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    """A tool's answer; what the model can correct as a tool error. An unknown tool is
    the protocol's invalid-params error; a failing database or storage an internal
    error that names the failure's type only (its message may quote stored values or
    the server's paths)."""
    if params.name not in TOOLS_BY_NAME:
        raise MCPError(types.INVALID_PARAMS, f"unknown tool: {params.name}")
    try:
        # Thread-sensitive: run on the view's thread, which async_to_sync keeps serving
        # meanwhile, so the tools use the request's database connection.
        text = await sync_to_async(_call)(_workspace(ctx), params.name, params.arguments)
    except ToolProblem as exc:
        return _text(str(exc), error=True)
    except StorageFailed as exc:
        logger.error("MCP %s: %s", params.name, exc)
        raise MCPError(types.INTERNAL_ERROR, f"the offload storage failed: {exc}") from None
    except DatabaseError as exc:
        raise _database_failed(params.name, exc) from None
    except Exception:
        # Never the exception's text: the package would send it as the error message.
        logger.exception("MCP %s failed", params.name)
        raise MCPError(types.INTERNAL_ERROR, "internal error") from None
    return _text(text)


RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC error MCP gives a resource that does not exist."""

_TEMPLATES = types.ListResourceTemplatesResult(
    resource_templates=[
        types.ResourceTemplate(
            uri_template=resources.TEMPLATE,
            name="events",
            title="A conversation's reductions",
            description="What was truncated and cleared in a conversation, by its id (JSON).",
            mime_type=resources.MIME,
        )
    ]
)


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    cursor = params.cursor if params is not None else None
    try:
        page, after = await sync_to_async(resources.listed)(_workspace(ctx), cursor)
    except resources.BadCursor:
        raise MCPError(types.INVALID_PARAMS, "cursor: not one resources/list gave") from None
    except DatabaseError as exc:
        raise _database_failed("resources/list", exc) from None
    return types.ListResourcesResult(
        resources=[types.Resource(**fields) for fields in page], next_cursor=after
    )


async def list_templates(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return _TEMPLATES


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    try:
        text = await sync_to_async(resources.read)(_workspace(ctx), uri)
    except resources.NotFound:
        raise MCPError(RESOURCE_NOT_FOUND, f"resource not found: {uri}") from None
    except DatabaseError as exc:
        raise _database_failed("resources/read", exc) from None
    contents = types.TextResourceContents(uri=uri, mime_type=resources.MIME, text=text)
    return types.ReadResourceResult(contents=[contents])


def _database_failed(method: str, exc: DatabaseError) -> MCPError:
    logger.error("MCP %s: the database failed (%s)", method, type(exc).__name__)
    return MCPError(types.INTERNAL_ERROR, f"the database failed ({type(exc).__name__})")


def build_server() -> Server[Any]:
    """The server, declared once; each request is served by a fresh transport around it."""
    return Server(
        SERVER_NAME,
        version="1",
        title="Reduction Lab",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )
