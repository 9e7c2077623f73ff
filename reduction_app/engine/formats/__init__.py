"""The three wire formats, parsed into engine values and dumped back, losslessly.

Every way into or out of the engine (the REST API, the simulator, the management
commands, the database JSON columns) goes through this package, so there is one parser
per format. Parsing is strict, and wire fields with no slot of their own are kept in
``extra`` under ``"<format>.<field>"``: docs/engine.md, "Wire formats".
"""

from __future__ import annotations

from reduction_app.engine.formats._common import (
    MAX_JSON_DEPTH,
    MAX_NAME_CHARS,
    text_problem,
    too_deep,
)
from reduction_app.engine.formats.anthropic import messages_from_anthropic, messages_to_anthropic
from reduction_app.engine.formats.jsonio import (
    json_loads,
    json_loads_checked,
    json_loads_utf8,
    json_problem,
    nesting_path,
)
from reduction_app.engine.formats.openai_chat import messages_from_openai, messages_to_openai
from reduction_app.engine.formats.registry import (
    FORMAT_NAMES,
    FORMATS,
    MessageStyle,
    SystemParam,
    WireFormat,
    dump,
    dump_tools,
    get_format,
    parse,
    parse_following,
    parse_tools,
)
from reduction_app.engine.formats.responses import messages_from_responses, messages_to_responses
from reduction_app.engine.formats.tool_parts import parts_from_json, parts_to_json
from reduction_app.engine.formats.tools import (
    tools_from_anthropic,
    tools_from_openai,
    tools_from_responses,
    tools_to_anthropic,
    tools_to_openai,
    tools_to_responses,
)

__all__ = [
    "FORMATS",
    "FORMAT_NAMES",
    "MAX_JSON_DEPTH",
    "MAX_NAME_CHARS",
    "MessageStyle",
    "SystemParam",
    "WireFormat",
    "dump",
    "dump_tools",
    "get_format",
    "json_loads",
    "json_loads_checked",
    "json_loads_utf8",
    "json_problem",
    "messages_from_anthropic",
    "messages_from_openai",
    "messages_from_responses",
    "messages_to_anthropic",
    "messages_to_openai",
    "messages_to_responses",
    "nesting_path",
    "parse",
    "parse_following",
    "parse_tools",
    "parts_from_json",
    "parts_to_json",
    "text_problem",
    "too_deep",
    "tools_from_anthropic",
    "tools_from_openai",
    "tools_from_responses",
    "tools_to_anthropic",
    "tools_to_openai",
    "tools_to_responses",
]
