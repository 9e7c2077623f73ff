"""Offload paths: safe, unique and free of whitespace (docs/behaviour.md, decision 7 and
§3.7). A call's path is ``{root_dir}/{trunc|clear}/{safe id}``, or one named by its
content's digest when that path holds other content; the check reads the backend (so it
holds across processes) and remembers what it promised (so one pass never hands a path
out twice).
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import threading
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from reduction_app.engine._steps import Steps, call, run_sync
from reduction_app.engine._storage._backends import Backend
from reduction_app.engine.tool_io import ToolDetail

__all__ = [
    "DEFAULT_PATH_TAIL",
    "Content",
    "DefaultPathGenerator",
    "PathRegistry",
    "content_digest",
    "default_path",
    "safe_id",
    "unique_paths",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_ID = 120
_SHORT_DIGEST = 12
"""Hex digits of a content's SHA-256 in the path of a reused id: 48 bits, so two
contents under one id begin alike about once in 10^14 pairs."""
_FULL_DIGEST = 64
DEFAULT_PATH_TAIL = len("/clear/") + _MAX_ID + len("-12345678") + len("-") + _FULL_DIGEST
"""The most characters a default path runs past its ``root_dir``: ``/clear/`` (or
``/trunc/``), the longest safe id (a cut id and its digest) and the content's whole
digest (the last of a reused id's candidates)."""


def safe_id(call_id: str) -> str:
    """A file name made from ``call_id`` that cannot leave its folder."""
    if not call_id:
        return uuid.uuid4().hex
    cleaned = _UNSAFE.sub("_", call_id)
    if cleaned.startswith("."):
        cleaned = "_" + cleaned[1:]
    if cleaned != call_id or len(cleaned) > _MAX_ID:
        # Sanitising can map different ids to one name; a short digest of the raw id
        # keeps them apart without relying on the uniqueness check alone.
        digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        cleaned = f"{cleaned[:_MAX_ID]}-{digest}"
    return cleaned


def content_digest(content: str) -> str:
    """The SHA-256 (hex) of ``content`` in UTF-8, lone surrogates kept: what a backend's
    optional ``digest(path)`` returns for the content at ``path``."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()


def unique_paths(base: str, digest: Callable[[], str]) -> Iterator[str]:
    """The paths a content may take for the call whose first path is ``base``, in order:
    ``base``, then ``base`` with the first 12 hex digits of the content's SHA-256, then
    with all 64. ``digest`` is only called when ``base`` was refused."""
    yield base
    full = digest()
    yield f"{base}-{full[:_SHORT_DIGEST]}"
    yield f"{base}-{full}"


def default_path(root_dir: str, kind: str, call_id: str) -> str:
    """The first path the default generator tries for a call: ``{root_dir}/{kind}/{safe id}``
    (an empty ``call_id`` gets a fresh random id, so a different path each time)."""
    return posixpath.normpath(posixpath.join(root_dir, kind, safe_id(call_id)))


class Content:
    """The content a detail will be offloaded as, worked out on first use and kept.

    Equal to another :class:`Content` or to a ``str`` holding the same text.
    """

    __slots__ = ("_content_of", "_detail", "_digest", "_text")

    def __init__(self, content_of: Callable[[ToolDetail], str], detail: ToolDetail) -> None:
        self._content_of = content_of
        self._detail = detail
        self._text: str | None = None
        self._digest: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = self._content_of(self._detail)
        return self._text

    @property
    def digest(self) -> str:
        """What a backend's ``digest(path)`` gives for this content."""
        if self._digest is None:
            self._digest = content_digest(self.text)
        return self._digest

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        if isinstance(other, Content):
            return self.text == other.text
        if isinstance(other, str):
            return self.text == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class PathRegistry:
    """Paths handed out but not yet written, with the content each will hold.

    A promise lasts from the path's choice until its write (or until the pass that chose
    it is given up): after the write the backend itself answers for the path, so the
    same conversation gets the same paths from any middleware, old or new. Promises of
    the same content by concurrent passes are counted, and the path stays promised until
    the last of them releases it. A promise holds its content (or what makes it), which
    the pass that chose the path holds anyway until it writes it.
    """

    def __init__(self) -> None:
        self._promised: dict[str, tuple[str | Content, int]] = {}
        self._lock = threading.Lock()

    def promised(self, path: str) -> str | Content | None:
        """The content ``path`` is promised to, if it is."""
        with self._lock:
            held = self._promised.get(path)
            return held[0] if held is not None else None

    def promise(self, path: str, content: str | Content) -> bool:
        """Promise ``path`` for ``content``; False when it is promised to other content."""
        with self._lock:
            held = self._promised.get(path)
            if held is None:
                self._promised[path] = (content, 1)
                return True
            # Works out the contents (see Content) only when two passes race for a path.
            if held[0] != content:
                return False
            self._promised[path] = (held[0], held[1] + 1)
            return True

    def release(self, path: str) -> None:
        """End one promise of ``path`` (its content was written, or will never be)."""
        with self._lock:
            held = self._promised.get(path)
            if held is None:
                return
            if held[1] <= 1:
                del self._promised[path]
            else:
                self._promised[path] = (held[0], held[1] - 1)


class DefaultPathGenerator:
    """The default ``gen_*_offload_file_path``: ``{root_dir}/{kind}/{safe id}``, made unique.

    ``content_of`` gives the text that will be written for a detail, so the
    uniqueness check can tell a repeat of the same content from a collision. It is only
    worked out when another content asks for the same path (a fresh path costs nothing),
    and compared as a string, not through a digest: ``==`` stops at a different length or
    the first different character, where a digest reads an output of maybe tens of
    megabytes whole. A backend that keeps its contents' SHA-256 may offer
    ``digest(path)``: the check then compares digests instead of reading the content back,
    which for a bucket is a download per path.
    """

    def __init__(
        self,
        *,
        root_dir: str,
        kind: str,
        backend: Backend | None,
        registry: PathRegistry,
        content_of: Callable[[ToolDetail], str],
    ) -> None:
        self.root_dir = root_dir
        self.kind = kind
        self.backend = backend
        self.registry = registry
        self.content_of = content_of

    def base_path(self, detail: ToolDetail) -> str:
        return default_path(self.root_dir, self.kind, detail.tool_context.call_id)

    def __call__(self, detail: ToolDetail) -> str:
        return run_sync(self.steps(detail))

    def steps(self, detail: ToolDetail) -> Steps[str]:
        base = self.base_path(detail)
        content = Content(self.content_of, detail)
        # A backend that knows its contents' digests answers without reading them back.
        by_digest = callable(getattr(self.backend, "digest", None))
        probe = getattr(self.backend, "digest" if by_digest else "read", None)
        for candidate in unique_paths(base, lambda: content.digest):
            held = self.registry.promised(candidate)
            if held is not None:
                if content == held:
                    return candidate
                continue
            if probe is not None:
                stored: Any
                try:
                    stored = yield call(probe, candidate)
                except FileNotFoundError:
                    stored = None
                if stored is not None and (content.digest if by_digest else content.text) != stored:
                    continue
            if self.registry.promise(candidate, content):
                return candidate
        # Only a backend whose content at a path changed between two reads gets here: a
        # path named by the whole digest holds that content or nothing.
        raise RuntimeError(
            f"no offload path for {base}: {base}-{content.digest} holds other content "
            "with the same SHA-256"
        )
