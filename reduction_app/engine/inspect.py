"""The engine's second public surface: looking into conversations and offloads.

:mod:`reduction_app.engine` is what an agent needs to *reduce* a conversation. This
module is for code that *reads* one without reducing it (the dashboard, the simulator,
the benchmarks): the same rules the phases apply, so a chart or a replay never
re-derives them and never drifts from the engine.

- Messages: :func:`classify` a message of either style, list the :func:`tool_calls_of`
  an assistant message (as :class:`CallRef`), :func:`read_result` and
  :func:`write_result` a tool result (new values; nothing is changed in place).
- Notices: :func:`is_clear_placeholder` recognises the clear phase's placeholders,
  :func:`truncation_file_path` pulls the offload path out of a truncation notice, and
  :func:`is_offload_manifest` recognises the message ``clear_offload_manifest`` adds.
- Offloads: :func:`offload_paths` lists the files a reduced conversation names and
  :func:`restore_results` puts the original results back from them;
  :func:`first_clear_paths` lists the paths the clear phase's default generator tries
  first for a conversation's calls (a storage can look them up together).
- Pairing: :func:`pairing_problems` lists where a conversation splits a tool call from
  its result under a wire format's rules (as :class:`PairingProblem` values), and
  :func:`wire_pairing_problems` does the same for a wire-format message list.
- Counting: :func:`count_text`, :func:`render_message` and :func:`render_tool` measure
  and render the way the token counters do.

Everything else the engine's modules hold is private: outside code imports only
``reduction_app.engine``, this module and ``reduction_app.engine.formats`` (a test
checks).
"""

from __future__ import annotations

from collections.abc import Sequence

from reduction_app.engine._clear._manifest import is_offload_manifest
from reduction_app.engine._clear._pairing import (
    PairingProblem,
    pairing_problems,
    wire_pairing_problems,
)
from reduction_app.engine._storage._paths import default_path
from reduction_app.engine._storage._restore import offload_paths, restore_results
from reduction_app.engine._tokens._counters import count_text, render_message, render_tool
from reduction_app.engine.access import (
    AnyMessage,
    CallRef,
    classify,
    read_result,
    tool_calls_of,
    write_result,
)
from reduction_app.engine.notices import is_clear_placeholder, truncation_file_path

__all__ = [
    "CallRef",
    "PairingProblem",
    "classify",
    "count_text",
    "first_clear_paths",
    "is_clear_placeholder",
    "is_offload_manifest",
    "offload_paths",
    "pairing_problems",
    "read_result",
    "render_message",
    "render_tool",
    "restore_results",
    "tool_calls_of",
    "truncation_file_path",
    "wire_pairing_problems",
    "write_result",
]


def first_clear_paths(messages: Sequence[AnyMessage], root_dir: str) -> set[str]:
    """The path the default clear handler tries first for each call in ``messages`` with
    an id (``{root_dir}/clear/{safe id}``). A call whose path holds other content gets
    one named by its content's digest; an empty id a random one: neither is listed."""
    return {
        default_path(root_dir, "clear", ref.call_id)
        for msg in messages
        for ref in tool_calls_of(msg)
        if ref.call_id
    }
