"""Which limit an output is truncated at: ``max_length_for_trunc``, or the opt-in
``trunc_tool_limits`` and ``trunc_command_limits``, in the precedence of
docs/behaviour.md §3.11. Only tools whose truncation handler is the default one get here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from reduction_app.engine.commands import command_kind, shell_command

__all__ = ["TruncLimits"]


@dataclass(frozen=True, slots=True)
class TruncLimits:
    """The truncation limits of one config."""

    default: int
    """``max_length_for_trunc``, in force."""
    by_tool: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    by_command_kind: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def limit(self, tool: str, arguments: str) -> int:
        """The limit of a call of ``tool`` with these (JSON) arguments, in characters."""
        if self.by_command_kind:
            command = shell_command(arguments)
            kind = command_kind(command) if command is not None else None
            if kind is not None and kind in self.by_command_kind:
                return self.by_command_kind[kind]
        return self.by_tool.get(tool, self.default)
