"""The texts the engine puts in place of tool output, in English and Chinese, and the
recognisers that find them again in a conversation.

The structure follows the reference (a ``<persisted-output>`` wrapper, the original size,
the file path, head and tail previews, the read tool's name); sizes are in characters. The
language is the config's ``language`` if set, else the process default
(:func:`set_language`), chosen when a text is formatted.
"""

from __future__ import annotations

import re
import threading
from typing import Literal

from reduction_app.engine.errors import ConfigError

__all__ = [
    "LANGUAGES",
    "Language",
    "clear_placeholder",
    "clear_placeholder_path",
    "get_language",
    "is_clear_placeholder",
    "set_language",
    "stream_notice",
    "trunc_notice",
    "truncation_file_path",
]

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")

_default_language: Language = "en"
_language_lock = threading.Lock()


def set_language(language: Language) -> None:
    """Set the process-wide default language for configs that do not set their own."""
    global _default_language
    if language not in LANGUAGES:
        raise ConfigError("language", f"must be one of {list(LANGUAGES)}, got {language!r}")
    with _language_lock:
        _default_language = language


def get_language(override: Language | None = None) -> Language:
    """The language to format in now: ``override`` when given, else the process default."""
    return override if override is not None else _default_language


_TRUNC = {
    "en": (
        "<persisted-output>\n"
        "Output too large ({original_size}). Full output saved to: {file_path}\n"
        "Preview (first {preview_size}):\n"
        "{preview_first}\n"
        "\n"
        "Preview (last {preview_size}):\n"
        "{preview_last}\n"
        "\n"
        "Use {read_tool_name} to view\n"
        "</persisted-output>"
    ),
    "zh": (
        "<persisted-output>\n"
        "输出结果过大 ({original_size}). 完整输出保存到: {file_path}\n"
        "预览 (前 {preview_size}):\n"
        "{preview_first}\n"
        "\n"
        "预览 (后 {preview_size}):\n"
        "{preview_last}\n"
        "\n"
        "使用 {read_tool_name} 进行查看\n"
        "</persisted-output>"
    ),
}

_STREAM = {
    "en": (
        "<persisted-output>\nOutput truncated after {preview_size} characters were streamed. "
        "{offload_notify} {error_msg_notify}\n</persisted-output>"
    ),
    "zh": (
        "<persisted-output>\n输出结果在流式传输 {preview_size} 个字符后被截断。"
        "{offload_notify} {error_msg_notify}\n</persisted-output>"
    ),
}
_STREAM_SAVED = {
    "en": "Full output saved to: {file_path}. Use {read_tool_name} to view.",
    "zh": "完整输出保存到: {file_path}。使用 {read_tool_name} 进行查看。",
}
_STREAM_FAILED = {
    "en": "Failed to save full output: {error}.",
    "zh": "完整输出保存失败: {error}。",
}

_CLEAR_OFFLOADED = {
    "en": (
        "<persisted-output>Tool result saved to: {file_path}\n"
        "Use {read_tool_name} to view</persisted-output>"
    ),
    "zh": (
        "<persisted-output>工具结果已保存至: {file_path}\n"
        "使用 {read_tool_name} 进行查看</persisted-output>"
    ),
}
_CLEAR_DROPPED = {"en": "[Old tool result content cleared]", "zh": "[工具输出结果已清理]"}
_DIGEST_LABEL = {"en": "Digest: ", "zh": "摘要: "}


def trunc_notice(
    *,
    original_size: int,
    file_path: str,
    preview_size: int,
    preview_first: str,
    preview_last: str,
    read_tool_name: str,
    language: Language | None = None,
) -> str:
    """The notice that replaces one large text part of a buffered tool result."""
    return _TRUNC[get_language(language)].format(
        original_size=original_size,
        file_path=file_path,
        preview_size=preview_size,
        preview_first=preview_first,
        preview_last=preview_last,
        read_tool_name=read_tool_name,
    )


def stream_notice(
    *,
    limit: int,
    file_path: str,
    read_tool_name: str,
    error: str,
    language: Language | None = None,
) -> str:
    """The closing notice of a truncated stream: where the full output went, or why it
    could not be saved (``error`` non-empty)."""
    lang = get_language(language)
    saved = _STREAM_SAVED[lang].format(file_path=file_path, read_tool_name=read_tool_name)
    saved = "" if error else saved
    failed = _STREAM_FAILED[lang].format(error=error) if error else ""
    return _STREAM[lang].format(preview_size=limit, offload_notify=saved, error_msg_notify=failed)


def clear_placeholder(
    *,
    file_path: str | None,
    read_tool_name: str,
    language: Language | None = None,
    digest: str = "",
) -> str:
    """The text that replaces a cleared tool result; ``file_path=None`` when not offloaded.

    A non-empty ``digest`` (see :mod:`._handlers._digests`) follows on a line of its own, labelled,
    inside the placeholder: the recognisers below find the placeholder with or without it.
    """
    lang = get_language(language)
    if file_path is None:
        text = _CLEAR_DROPPED[lang]
        return f"{text}\n{_DIGEST_LABEL[lang]}{digest}" if digest else text
    text = _CLEAR_OFFLOADED[lang].format(file_path=file_path, read_tool_name=read_tool_name)
    if not digest:
        return text
    end = "</persisted-output>"
    return f"{text.removesuffix(end)}\n{_DIGEST_LABEL[lang]}{digest}{end}"


# Offload paths never contain whitespace (see ``_storage/_paths.py``), which is what lets
# ``\S+`` below pull a path back out of a notice.
_CLEARED_RE = re.compile(
    r"<persisted-output>(?:Tool result saved to: (?P<en>\S+)\nUse \S+ to view(?:\nDigest: .*)?"
    r"|工具结果已保存至: (?P<zh>\S+)\n使用 \S+ 进行查看(?:\n摘要: .*)?)</persisted-output>",
    re.DOTALL,
)
_DROPPED_DIGEST_RE = re.compile(
    r"\[Old tool result content cleared\]\nDigest: .*|\[工具输出结果已清理\]\n摘要: .*",
    re.DOTALL,
)
# The whole buffered notice, previews and closing tag included: a tool output that only
# starts like one is content, not a notice, and must be offloaded like any other.
_TRUNC_RE = re.compile(
    r"<persisted-output>\n(?:"
    r"Output too large \(\d+\)\. Full output saved to: (?P<en>\S+)\n"
    r"Preview \(first \d+\):\n.*\n\nPreview \(last \d+\):\n.*\n\nUse \S+ to view"
    r"|输出结果过大 \(\d+\)\. 完整输出保存到: (?P<zh>\S+)\n"
    r"预览 \(前 \d+\):\n.*\n\n预览 \(后 \d+\):\n.*\n\n使用 \S+ 进行查看"
    r")\n</persisted-output>",
    re.DOTALL,
)
_STREAM_RE = re.compile(
    r"<persisted-output>\n(?:Output truncated after \d+ characters were streamed\. "
    r"Full output saved to: (?P<en>\S+)\. Use \S+ to view\. "
    r"|输出结果在流式传输 \d+ 个字符后被截断。完整输出保存到: (?P<zh>\S+?)。使用 \S+ 进行查看。 )"
    r"\n</persisted-output>\Z"
)


def is_clear_placeholder(text: str) -> bool:
    """Whether ``text`` is one of the engine's own clear placeholders, in either language."""
    return (
        text in _CLEAR_DROPPED.values()
        or _CLEARED_RE.fullmatch(text) is not None
        or _DROPPED_DIGEST_RE.fullmatch(text) is not None
    )


def clear_placeholder_path(text: str) -> str | None:
    """The offload path an engine clear placeholder names (``None`` for any other text,
    and for the placeholder of a result cleared without offloading)."""
    match = _CLEARED_RE.fullmatch(text)
    if match is None:
        return None
    return match.group("en") or match.group("zh")


def truncation_file_path(text: str) -> str | None:
    """The offload path named by an engine truncation notice in ``text``, if it has one.

    A buffered notice is the whole text; a stream notice ends it (after the forwarded
    prefix). A stream notice that reports a failed save names no file and gives ``None``.
    """
    match = _TRUNC_RE.fullmatch(text)
    if match is None:
        match = _STREAM_RE.search(text)
    if match is None:
        return None
    return match.group("en") or match.group("zh")
