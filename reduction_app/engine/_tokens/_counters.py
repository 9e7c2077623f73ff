"""Token counters: the protocol, the built-ins (``approx``, the reference's characters // 4,
and tiktoken's encodings) and :func:`get_token_counter`, which resolves a config's
``token_counter``. A conversation is rendered for counting as docs/behaviour.md §4.1
says; each counter caches what it counted by identity (``_caches``), so counting a
growing conversation costs only its new messages.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

import tiktoken

from reduction_app.engine import blocks
from reduction_app.engine._tokens._caches import CacheInfo, IdentityCache, TextCache, shared_prefix
from reduction_app.engine._tokens._encodings import EncodingLoader, default_loader
from reduction_app.engine.errors import ConfigError
from reduction_app.engine.messages import ROLE_ASSISTANT, Media, Message, ToolInfo

__all__ = [
    "TOKEN_COUNTER_NAMES",
    "ApproxTokenCounter",
    "CacheInfo",
    "CachingCounter",
    "TiktokenCounter",
    "TokenCounter",
    "count_text",
    "get_token_counter",
    "render_block",
    "render_message",
    "render_tool",
]

TOKEN_COUNTER_NAMES = ("approx", "cl100k_base", "o200k_base")

AnyMessage = Message | blocks.AgenticMessage


class TokenCounter(Protocol):
    """Counts the tokens of a conversation and the tools offered with it."""

    def __call__(
        self, messages: Sequence[AnyMessage], tool_infos: Sequence[ToolInfo], /
    ) -> int: ...


# --- rendering ---------------------------------------------------------------------------

_INDENT = " " * 6
_TEXT_BLOCKS = (blocks.UserInputText, blocks.AssistantGenText, blocks.Reasoning)
_MEDIA_BLOCKS = (
    blocks.UserInputImage,
    blocks.UserInputAudio,
    blocks.UserInputVideo,
    blocks.UserInputFile,
)
_MEDIA_CONTENT = ("image", "audio", "video", "file")


def _json(value: Any) -> str:
    def default(obj: object) -> object:
        # Read-only mappings (MappingProxyType) and odd values a parser let through still
        # render, rather than failing the count.
        return dict(obj) if isinstance(obj, Mapping) else str(obj)

    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=default)


def _media_lines(media: Media | None) -> list[str]:
    # Inline data is summarised, not counted: a model never sees base64 as text tokens.
    if media is None:
        return []
    # The reference's order: a file's name first, an image's detail last.
    lines = [f"name: {media.name}"] if media.name else []
    if media.url:
        url = media.url
        lines.append(f"url: {url[:100]}..." if len(url) > 100 else f"url: {url}")
    if media.base64_data:
        data = media.base64_data
        # The reference cuts long data with "..." and its format adds "..." again.
        cut = f"{data[:20]}..." if len(data) > 20 else data
        lines.append(f"base64_data: {cut}... ({len(data)} bytes)")
    if media.mime_type:
        lines.append(f"mime_type: {media.mime_type}")
    if media.detail:
        lines.append(f"detail: {media.detail}")
    return lines


def _render_content(content: blocks.ToolResultContent) -> str:
    # A piece renders as the reference renders its own blocks: payload lines indented by
    # six spaces, so after "[i] " the first line keeps its indent; no type label.
    if content.type == "text":
        return f"{_INDENT}text: {content.text}\n"
    if content.type in _MEDIA_CONTENT:
        if content.media is None:
            return f"empty {content.type} block\n"
        return "".join(f"{_INDENT}{line}\n" for line in _media_lines(content.media))
    # As the reference: a result piece of unknown type contributes only this line.
    return f"unknown block type: {content.type or '<empty>'}\n"


def render_block(block: blocks.ContentBlock) -> str:
    """One agentic block as the counters measure it: ``type: <type>`` and indented payload.

    ``type: function_tool_result`` is followed by ``call_id:``, ``name:``,
    ``content: (k blocks)`` and ``        [i] `` before each result piece's own lines
    (``      text: …``, or a medium's ``      url: …`` lines). Media blocks list their
    media fields; tool search results and raw blocks give their JSON.
    """
    lines: list[str] = []
    if isinstance(block, _TEXT_BLOCKS):
        lines.append(f"text: {block.text}")
    elif isinstance(block, _MEDIA_BLOCKS):
        lines.extend(_media_lines(block.media))
    elif isinstance(block, blocks.FunctionToolCall):
        lines += [f"call_id: {block.call_id}", f"name: {block.name}"]
        lines.append(f"arguments: {block.arguments}")
    elif isinstance(block, blocks.FunctionToolResult):
        lines += [f"call_id: {block.call_id}", f"name: {block.name}"]
        lines.append(f"content: ({len(block.content)} blocks)")
        head = f"type: {block.type}\n" + "".join(f"{_INDENT}{line}\n" for line in lines)
        pieces = (f"        [{i}] {_render_content(c)}" for i, c in enumerate(block.content))
        return head + "".join(pieces)
    elif isinstance(block, blocks.ToolSearchResult):
        lines += [f"call_id: {block.call_id}", f"name: {block.name}"]
        lines.append(f"result: {_json(block.result)}")
    elif isinstance(block, blocks.RawBlock):
        lines.append(f"data: {_json(block.data)}")
    return f"type: {block.type}\n" + "".join(f"{_INDENT}{line}\n" for line in lines)


def render_message(msg: AnyMessage) -> list[str]:
    """The strings a message is measured as: one for a chat message, role plus one per
    block for an agentic message (the reference floors each separately)."""
    if isinstance(msg, blocks.AgenticMessage):
        return [msg.role, *(render_block(block) for block in msg.content_blocks)]
    return ["".join(_chat_pieces(msg))]


def _chat_pieces(msg: Message) -> tuple[str, ...]:
    """The pieces a chat message's one string is joined from."""
    parts = [msg.role, "\n", msg.reasoning_content, "\n", msg.content, "\n"]
    if msg.role == ROLE_ASSISTANT:
        for call in msg.tool_calls:
            parts += [call.name, "\n", call.arguments]
    for part in (*msg.user_input_multi_content, *msg.assistant_gen_multi_content):
        if part.type == "text":
            parts += [part.text, "\n"]
    return tuple(parts)


def render_tool(tool: ToolInfo) -> str:
    """A tool's whole schema as the counters measure it (decision 12)."""
    params = None if tool.parameters is None else dict(tool.parameters)
    return _json({"name": tool.name, "description": tool.description, "parameters": params})


# --- counters ----------------------------------------------------------------------------


class CachingCounter:
    """Sums the cached per-message and per-tool counts; subclasses measure one string."""

    name: str

    def __init__(self) -> None:
        self._messages: IdentityCache[AnyMessage] = IdentityCache()
        self._tools: IdentityCache[ToolInfo] = IdentityCache()
        # The last list counted, with running totals (``_totals[i]`` is the sum of the first
        # ``i``): an agent's next call sends the same messages plus new ones, so only what
        # follows the shared prefix is summed. Both lists are private and edited at their
        # tails (never copied whole), under ``_lock``; ``_key`` names the list they describe
        # (:meth:`count_after`). They hold one conversation alive per counter.
        self._items: list[AnyMessage | None] = []
        self._totals: list[int] = [0]
        self._key: object = object()
        self._lock = threading.Lock()

    def count_text(self, text: str) -> int:
        raise NotImplementedError

    def _count_message(self, msg: AnyMessage) -> int:
        return sum(self.count_text(s) for s in render_message(msg))

    def _count_tool(self, tool: ToolInfo) -> int:
        return self.count_text(render_tool(tool))

    def count_message(self, msg: AnyMessage) -> int:
        """Tokens of one message (cached by identity)."""
        return self._messages.get_or_count(msg, self._count_message)

    def count_tools(self, tool_infos: Sequence[ToolInfo]) -> int:
        """Tokens of the tool schemas (each cached by identity)."""
        return sum(self._tools.get_or_count(t, self._count_tool) for t in tool_infos)

    def __call__(
        self, messages: Sequence[AnyMessage | None], tool_infos: Sequence[ToolInfo], /
    ) -> int:
        if not isinstance(messages, list | tuple):
            messages = tuple(messages)
        # A tuple names itself to a later count_after(known=...); a list may change, so it
        # names nothing.
        key = messages if isinstance(messages, tuple) else object()
        return self._sum(messages, tool_infos, None, key, ())

    def count_after(
        self,
        messages: Sequence[AnyMessage],
        tool_infos: Sequence[ToolInfo],
        *,
        known: object,
        same: int = 0,
        key: object = None,
        relabelled: Iterable[int] = (),
    ) -> int:
        """As a call, when the caller knows that the first ``same`` of ``messages`` count as
        those of ``known`` do (the same or equal messages, or ones that differ only in what
        is not measured, such as flags). ``known`` names the list last counted: the
        ``messages`` (or ``key``) of the last ``count_after``, or the tuple of the last call.
        While it is still the last list counted, no search for the shared prefix is needed;
        otherwise (``None``, or another caller counted since) this is a plain call.
        ``relabelled`` are positions below ``same`` that hold new objects counting as
        before (flagged copies): they are remembered, so a later plain call finds them
        shared. The counter keeps ``key`` (``messages`` by default) as the list's name."""
        return self._sum(
            messages, tool_infos, (known, same), messages if key is None else key, relabelled
        )

    def _sum(
        self,
        messages: Sequence[AnyMessage | None],
        tool_infos: Sequence[ToolInfo],
        trusted: tuple[object, int] | None,
        key: object,
        relabelled: Iterable[int],
    ) -> int:
        tools = self.count_tools(tool_infos)
        # Another thread is summing with this counter: count without the running totals
        # rather than wait for it (every message's count is cached all the same).
        if not self._lock.acquire(blocking=False):
            return sum(self.count_message(m) for m in messages if m is not None) + tools
        try:
            items, totals = self._items, self._totals
            if trusted is not None and trusted[0] is self._key:
                shared = min(trusted[1], len(items), len(messages))
                for i in relabelled:
                    if i < shared:
                        items[i] = messages[i]
            else:
                shared = shared_prefix(items, messages)
            new = messages[shared:]
            del items[shared:]
            del totals[shared + 1 :]
            total = totals[-1]
            for msg in new:
                if msg is not None:
                    total += self.count_message(msg)
                totals.append(total)
            items.extend(new)
            self._key = key
        except BaseException:
            # A count that failed half-way (an encoding that cannot load) leaves nothing
            # half-done behind it.
            self._items, self._totals, self._key = [], [0], object()
            raise
        finally:
            self._lock.release()
        return total + tools

    def cache_info(self) -> CacheInfo:
        """Hits, misses and live entries of the message and tool caches."""
        m, t = self._messages, self._tools
        return CacheInfo(m.hits, m.misses, len(m), t.hits, t.misses, len(t))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ApproxTokenCounter(CachingCounter):
    """The default: the reference's estimate, characters // 4 per rendered string."""

    name = "approx"

    def count_text(self, text: str) -> int:
        return len(text) // 4


class TiktokenCounter(CachingCounter):
    """Exact token counts with a tiktoken encoding, loaded lazily and offline."""

    TEXT_CACHE_MAX_CHARS = 32_000_000

    def __init__(self, encoding_name: str, *, loader: EncodingLoader | None = None) -> None:
        super().__init__()
        self.name = encoding_name
        self._loader = loader or default_loader()
        self._encode: Callable[[str], list[int]] | None = None
        self.texts = TextCache(self.TEXT_CACHE_MAX_CHARS)

    @property
    def encoding(self) -> tiktoken.Encoding:
        """The encoding; the first access loads it (raises ``TokenizerUnavailable``)."""
        return self._loader.get_encoding(self.name)

    def count_text(self, text: str) -> int:
        return self.texts.get_or_count(text, self._encode_count)

    def _count_message(self, msg: AnyMessage) -> int:
        if isinstance(msg, blocks.AgenticMessage):
            return super()._count_message(msg)
        # A chat message's text is cached by its pieces: the cache then keeps the strings
        # the message holds, not a joined copy of a long tool output.
        return self.texts.get_or_count_pieces(_chat_pieces(msg), self._encode_count)

    def _encode_count(self, text: str) -> int:
        # Tool output may contain "<|endoftext|>"; it is counted as the text it is, which
        # is what encode_ordinary does (encode(text, disallowed_special=()) gives the same
        # tokens, after a search for special tokens that would all be refused anyway).
        encode = self._encode
        if encode is None:
            encode = self._encode = self.encoding.encode_ordinary
        return len(encode(text))


_SHARED: dict[str, CachingCounter] = {}
_SHARED_LOCK = threading.Lock()


def get_token_counter(spec: str | TokenCounter) -> TokenCounter:
    """Resolve a config's ``token_counter``: a built-in name (one shared instance each, so
    their caches are shared too) or any callable, returned as is."""
    if isinstance(spec, str):
        if spec not in TOKEN_COUNTER_NAMES:
            raise ConfigError("token_counter", _bad_spec(spec))
        with _SHARED_LOCK:
            counter = _SHARED.get(spec)
            if counter is None:
                counter = ApproxTokenCounter() if spec == "approx" else TiktokenCounter(spec)
                _SHARED[spec] = counter
        return counter
    if callable(spec):
        return spec
    raise ConfigError("token_counter", _bad_spec(spec))


def _bad_spec(spec: object) -> str:
    names = ", ".join(repr(n) for n in TOKEN_COUNTER_NAMES)
    return f"must be {names} or a callable, got {spec!r}"


def count_text(counter: TokenCounter, text: str) -> int:
    """Tokens of a bare text, by the counter's own measure when it has one, else as the
    content of a tool message. For plain (not async) counters."""
    measure = getattr(counter, "count_text", None)
    if callable(measure):
        return int(measure(text))
    return counter([Message(role="tool", content=text)], [])
