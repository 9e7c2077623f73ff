"""The ``read_file`` tool the notices point the model at: its definition and what it
answers.

Truncation and clearing replace a tool output by a notice naming the file that holds it;
the model reads it back with this tool. The REST API (``GET /tools/read_file``,
``GET /files/read``) and the framework adapters (``reduction_app.integrations``) offer the
same tool and answer it the same way, from here.
"""

from __future__ import annotations

from typing import Any

from reduction_app.engine.messages import ToolInfo

__all__ = [
    "DEFAULT_READ_LIMIT",
    "READ_FILE_DESCRIPTION",
    "READ_FILE_PARAMETERS",
    "numbered_lines",
    "read_file_tool",
]

READ_FILE_DESCRIPTION = (
    "Read a file that holds tool output moved out of the conversation to save context. "
    "Notices such as <persisted-output> name the path. Returns numbered lines; read large "
    "files a part at a time with offset (0-based line) and limit (number of lines)."
)
READ_FILE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "The path given in the notice."},
        "offset": {"type": "integer", "minimum": 0, "description": "First line to read, from 0."},
        "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read."},
    },
    "required": ["path"],
}
DEFAULT_READ_LIMIT = 2000
"""Lines a read returns when the model names no ``limit``."""


def read_file_tool(name: str = "read_file") -> ToolInfo:
    """The tool's definition, under ``name`` (the config's ``read_file_tool_name``)."""
    return ToolInfo(name=name, description=READ_FILE_DESCRIPTION, parameters=READ_FILE_PARAMETERS)


def numbered_lines(content: str, offset: int, limit: int) -> tuple[str, int]:
    """``limit`` lines of ``content`` from line ``offset`` (0-based), each as
    ``<number>\\t<text>\\n`` (numbers from 1), and the number of lines in all.

    Lines end at ``\\n``; the ``\\r`` of a ``\\r\\n`` ending is a line ending too and is
    not shown, and a final ``\\n`` starts no new line (the exact content is the file's
    raw text)."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    chosen = lines[offset : offset + limit]
    body = "".join(
        f"{offset + i + 1}\t{line.removesuffix(chr(13))}\n" for i, line in enumerate(chosen)
    )
    return body, len(lines)
