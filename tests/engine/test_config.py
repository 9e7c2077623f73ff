"""Config checks added after review: backends the default paths need, safe root_dir, and
the types the engine takes from user code (tools, counters, states)."""

from __future__ import annotations

from typing import Any

import pytest

from reduction_app.engine import (
    ChatModelAgentState,
    ConfigError,
    InMemoryBackend,
    LocalFileBackend,
    Message,
    ReductionConfig,
    ReductionError,
    ToolArgument,
    ToolCall,
    ToolContext,
    ToolReductionConfig,
    WriteRequest,
    config_from_dict,
    new,
)
from reduction_app.engine.errors import MessageError


class WriteOnly:
    def write(self, request: WriteRequest) -> None:
        return None


def test_config_default_paths_need_a_readable_backend() -> None:
    """Without read() a reused call id would overwrite an earlier offload (decision 7)."""
    with pytest.raises(ConfigError, match=r"^backend must have a read\(path\) method"):
        new(ReductionConfig(backend=WriteOnly()))
    with pytest.raises(ConfigError, match=r"^tool_config\['grep'\]\.backend must have a read"):
        new(
            ReductionConfig(
                backend=InMemoryBackend(),
                tool_config={"grep": ToolReductionConfig(backend=WriteOnly())},
            )
        )


def test_config_custom_paths_take_a_write_only_backend() -> None:
    mw = new(
        ReductionConfig(
            backend=WriteOnly(),
            gen_trunc_offload_file_path=lambda d: f"/t/{d.tool_context.call_id}",
            gen_clear_offload_file_path=lambda d: f"/c/{d.tool_context.call_id}",
        )
    )
    assert mw.config.backend is not None


class _ShortPaths(InMemoryBackend):
    max_path_chars = 210


def test_config_root_dir_leaves_room_for_the_backends_longest_path() -> None:
    """A default path runs up to 201 characters past root_dir ("/clear/", a 129-character
    safe id, "-" and a content's 64-digit digest): 9 are left of 210."""
    assert config_from_dict({"root_dir": "/" + "r" * 8}, backend=_ShortPaths()).root_dir
    with pytest.raises(ConfigError) as caught:
        config_from_dict({"root_dir": "/" + "r" * 9}, backend=_ShortPaths())
    assert str(caught.value) == (
        "root_dir must be at most 9 characters, so that the offload paths under it "
        "(201 more) stay within the storage's limit of 210; got 10 characters"
    )
    # Paths of the config's own generators are theirs to keep short.
    config = ReductionConfig(
        backend=_ShortPaths(),
        root_dir="/" + "r" * 200,
        gen_clear_offload_file_path=lambda detail: "/c",
        gen_trunc_offload_file_path=lambda detail: "/t",
    )
    assert new(config).config.root_dir == "/" + "r" * 200


def test_config_root_dir_must_not_climb(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match=r"^root_dir must not contain '\.\.', got '\.\./x'$"):
        config_from_dict({"root_dir": "../x"}, backend=LocalFileBackend(tmp_path))
    assert (
        config_from_dict({"root_dir": "/var/x..y"}, backend=InMemoryBackend()).root_dir
        == "/var/x..y"
    )


def test_tool_output_of_the_wrong_type_is_named() -> None:
    mw = new(ReductionConfig(backend=InMemoryBackend()))
    ctx = ToolContext(name="t", call_id="c")
    with pytest.raises(
        ReductionError, match=r"^tool 't' produced an output of type NoneType, not a str$"
    ):
        mw.wrap_invokable_tool_call(lambda _: None, ctx)("{}")  # type: ignore[arg-type, return-value]
    with pytest.raises(
        ReductionError, match=r"^tool 't' produced an output of type str, not a ToolResult$"
    ):
        mw.wrap_enhanced_invokable_tool_call(lambda _: "x", ctx)(ToolArgument())  # type: ignore[arg-type, return-value]
    stream = mw.wrap_streamable_tool_call(lambda _: iter(["ok", None]), ctx)  # type: ignore[list-item]
    with pytest.raises(
        ReductionError, match=r"^tool 't' produced a chunk of type NoneType, not a str$"
    ):
        list(stream("{}"))


def test_counter_of_the_wrong_type_and_bad_state_are_named() -> None:
    msgs = [
        Message.user("u"),
        Message.assistant(tool_calls=[ToolCall(id="a", name="t")]),
        Message.tool("r", "a"),
    ]
    mw = new(ReductionConfig(backend=InMemoryBackend(), token_counter=lambda m, t: None))  # type: ignore[arg-type, return-value]
    with pytest.raises(ReductionError, match=r"^token_counter returned None, not an int$"):
        mw.before_model_rewrite_state(ChatModelAgentState(messages=msgs))
    good = new(ReductionConfig(backend=InMemoryBackend()))
    with pytest.raises(
        MessageError, match=r"^state\.messages must be a list of messages, got None$"
    ):
        good.before_model_rewrite_state(ChatModelAgentState(messages=None))  # type: ignore[arg-type]
