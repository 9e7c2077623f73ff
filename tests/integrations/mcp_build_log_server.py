"""An MCP server over stdio with one tool, ``build_log``, for the Agents SDK adapter's
tests: run as a script by ``MCPServerStdio``."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

LINES = 5_000

server = MCPServer("build")


@server.tool()
def build_log() -> str:
    """The build's log."""
    return "".join(f"line {n}: compiling module {n}\n" for n in range(LINES))


if __name__ == "__main__":
    server.run("stdio")
