"""The three wire formats, parsed into engine values and dumped back, losslessly.

Every way into or out of the engine (the REST API, the simulator, the management
commands, the database JSON columns) goes through these functions:

* OpenAI Chat Completions ``messages`` ↔ chat :class:`~reduction_app.engine.messages.Message`
  (:mod:`.openai_chat`);
* Anthropic Messages ``system`` + ``messages`` ↔
  :class:`~reduction_app.engine.blocks.AgenticMessage` (:mod:`.anthropic`);
* OpenAI Responses ``input`` items ↔ AgenticMessage (:mod:`.responses`);
* each format's ``tools`` ↔ :class:`~reduction_app.engine.messages.ToolInfo` (:mod:`.tools`).

Code that takes a format by name goes through the registry (:mod:`.registry`):
:data:`FORMATS` holds one :class:`WireFormat` record per format, and
``parse(fmt, messages, system=...)``, ``dump(fmt, messages)``, ``parse_tools`` and
``dump_tools`` dispatch on the name; an unknown name raises ``FormatError`` quoting it.

Whole documents arrive as bytes (a request body, a file): ``json_loads`` and
``json_loads_utf8`` (:mod:`.jsonio`) decode them as ``json.loads`` does, without one
``str`` of the whole document; ``json_loads_checked`` decodes a request body, refusing
numbers no JSON answer can give back, and ``json_problem`` finds what a decoded value
holds that JSON or a database cannot.

Parsing is strict: an unknown role, type or field, or a value of the wrong JSON
type, raises :class:`~reduction_app.engine.errors.FormatError` naming where it is
and quoting it. Wire fields with no slot of their own are kept in ``extra`` under
``"<format>.<field>"`` (``openai.``, ``anthropic.``, ``responses.``), so
``to(from(x)) == x``. Dumping writes wire fields only: engine markers such as the
processed flag never leave ``extra``.
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
