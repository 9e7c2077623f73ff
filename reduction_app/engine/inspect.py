"""The engine's second public surface: looking into conversations and offloads.

:mod:`reduction_app.engine` is what an agent needs to *reduce* a conversation; this module
is for code that *reads* one without reducing it (the dashboard, the simulator, the
benchmarks), with the very rules the phases apply, so a chart or a replay never re-derives
them and never drifts from the engine. What each function does: docs/engine.md, "Looking
into conversations".
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
