"""Tests for offload paths: safe ids and unique paths (decision 7, cases 41)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from reduction_app.engine import InMemoryBackend, LocalFileBackend, WriteRequest
from reduction_app.engine._storage._paths import (
    DEFAULT_PATH_TAIL,
    Content,
    DefaultPathGenerator,
    PathRegistry,
    content_digest,
    default_path,
    safe_id,
)
from reduction_app.engine.parts import stringify
from reduction_app.engine.tool_io import ToolContext, ToolDetail, ToolResult

SAFE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")


def detail(call_id: str, content: str = "content") -> ToolDetail:
    return ToolDetail(
        tool_context=ToolContext(name="t", call_id=call_id), tool_result=ToolResult.of_text(content)
    )


def content_of(d: ToolDetail) -> str:
    return stringify(d.tool_result.parts) if d.tool_result is not None else ""


def h12(content: str) -> str:
    """The suffix of a reused id's content-addressed path."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:12]


def generator(
    backend: object = None,
    *,
    kind: str = "trunc",
    root_dir: str = "/tmp",
    registry: PathRegistry | None = None,
) -> DefaultPathGenerator:
    return DefaultPathGenerator(
        root_dir=root_dir,
        kind=kind,
        backend=backend,  # type: ignore[arg-type]
        registry=registry or PathRegistry(),
        content_of=content_of,
    )


# safe_id -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call_id", ["call_1", "toolu_01A09q90qw90lq917835lq9", "a.b-c_d", "x" * 120]
)
def test_safe_id_keeps_a_safe_id(call_id: str) -> None:
    assert safe_id(call_id) == call_id


@pytest.mark.parametrize(
    ("call_id", "cleaned"),
    [
        ("a/b", "a_b"),
        ("../../etc/passwd", "_._.._etc_passwd"),
        ("/etc/passwd", "_etc_passwd"),
        ("a\x00b", "a_b"),
        ("call 1\n", "call_1_"),
        ("..", "_."),
        (".hidden", "_hidden"),
        ("工具", "__"),
    ],
)
def test_safe_id_sanitises_unsafe_ids(call_id: str, cleaned: str) -> None:
    """The cleaned id, then the first 8 hex digits of the raw id's SHA-256."""
    digest = hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:8]
    assert safe_id(call_id) == f"{cleaned}-{digest}"
    assert SAFE.fullmatch(safe_id(call_id))


def test_safe_id_keeps_ids_that_sanitise_alike_apart() -> None:
    assert len({safe_id("a/b"), safe_id("a b"), safe_id("a\x00b"), safe_id("a_b")}) == 4


def test_safe_id_shortens_long_ids() -> None:
    cleaned = safe_id("y" * 500)
    assert re.fullmatch(r"y{120}-[0-9a-f]{8}", cleaned)


def test_safe_id_empty_gives_a_fresh_id_each_time() -> None:
    first, second = safe_id(""), safe_id("")
    assert re.fullmatch(r"[0-9a-f]{32}", first)
    assert first != second


# DefaultPathGenerator ------------------------------------------------------------------


def test_default_paths_follow_root_dir_and_kind() -> None:
    """Case 41."""
    assert generator(kind="trunc")(detail("call_1")) == "/tmp/trunc/call_1"
    assert generator(kind="clear")(detail("call_1")) == "/tmp/clear/call_1"


def test_default_path_of_an_empty_id_is_longer_than_the_prefix() -> None:
    """Case 41."""
    path = generator(kind="clear")(detail(""))
    assert re.fullmatch(r"/tmp/clear/[0-9a-f]{32}", path)


def test_default_path_is_a_cleaned_join() -> None:
    assert generator(root_dir="/data//x/./")(detail("c")) == "/data/x/trunc/c"


@pytest.mark.parametrize(
    "call_id", ["../../../etc/passwd", "/etc/passwd", "a/../../b", "..", "\x00", " "]
)
def test_default_path_stays_under_root_dir(call_id: str) -> None:
    path = generator(root_dir="/srv/offload")(detail(call_id))
    parent, name = path.rsplit("/", 1)
    assert parent == "/srv/offload/trunc"
    assert SAFE.fullmatch(name)


def test_default_path_is_reused_for_identical_content() -> None:
    gen = generator(InMemoryBackend())
    assert gen(detail("c", "same")) == gen(detail("c", "same")) == "/tmp/trunc/c"


def test_default_path_moves_on_for_different_content_in_one_process() -> None:
    """Promised paths count even before anything was written: other content under a
    reused id takes the path named by its digest."""
    gen = generator(InMemoryBackend())
    assert [gen(detail("c", body)) for body in ("a", "b", "c", "b", "a")] == [
        "/tmp/trunc/c",
        f"/tmp/trunc/c-{h12('b')}",
        f"/tmp/trunc/c-{h12('c')}",
        f"/tmp/trunc/c-{h12('b')}",
        "/tmp/trunc/c",
    ]


def test_default_path_checks_what_the_backend_already_holds() -> None:
    backend = InMemoryBackend()
    backend.write(WriteRequest(file_path="/tmp/trunc/c", content="older"))
    backend.write(WriteRequest(file_path=f"/tmp/trunc/c-{h12('newer')}", content="newer"))
    gen = generator(backend)
    assert gen(detail("c", "newer")) == f"/tmp/trunc/c-{h12('newer')}"
    assert gen(detail("c", "fresh")) == f"/tmp/trunc/c-{h12('fresh')}"
    assert gen(detail("c", "older")) == "/tmp/trunc/c"


def test_default_path_of_a_reused_id_is_the_same_for_the_same_content_in_a_new_process() -> None:
    """A conversation sent again, to a middleware that promised nothing yet, finds the
    paths its contents took, with no registry shared."""
    backend = InMemoryBackend()
    first = []
    for body in ("a", "b", "c"):
        first.append(generator(backend)(detail("c", body)))
        backend.write(WriteRequest(file_path=first[-1], content=body))
    again = [generator(backend)(detail("c", body)) for body in ("c", "b", "a")]
    assert again == first[::-1]
    assert first == ["/tmp/trunc/c", f"/tmp/trunc/c-{h12('b')}", f"/tmp/trunc/c-{h12('c')}"]


class CountingBackend(InMemoryBackend):
    """An in-memory backend that counts the reads the path check makes."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read(self, path: str) -> str:
        self.reads += 1
        return super().read(path)


@pytest.mark.parametrize("earlier", [1, 10, 300])
def test_default_path_reads_the_backend_at_most_three_times_per_result(earlier: int) -> None:
    """However many earlier results shared the id, one more costs at most three reads
    (base, short digest, whole digest), and a repeat of an earlier content two."""
    backend = CountingBackend()
    for n in range(earlier):
        path = generator(backend)(detail("dup", f"output {n}"))
        backend.write(WriteRequest(file_path=path, content=f"output {n}"))
    backend.reads = 0
    assert generator(backend)(detail("dup", "new")) == f"/tmp/trunc/dup-{h12('new')}"
    assert backend.reads == 2
    backend.reads = 0
    last = f"output {earlier - 1}"
    expected = "/tmp/trunc/dup" if earlier == 1 else f"/tmp/trunc/dup-{h12(last)}"
    assert generator(backend)(detail("dup", last)) == expected
    assert backend.reads == (1 if earlier == 1 else 2)


def test_default_path_takes_the_whole_digest_when_the_short_one_is_taken() -> None:
    """Two contents whose digests begin alike (forced here: other content already sits at
    the short path) part at the whole digest; a third read confirms the whole path."""
    backend = CountingBackend()
    backend.write(WriteRequest(file_path="/tmp/trunc/c", content="first"))
    backend.write(WriteRequest(file_path=f"/tmp/trunc/c-{h12('mine')}", content="impostor"))
    full = hashlib.sha256(b"mine").hexdigest()
    assert generator(backend)(detail("c", "mine")) == f"/tmp/trunc/c-{full}"
    assert backend.reads == 3
    backend.write(WriteRequest(file_path=f"/tmp/trunc/c-{full}", content="mine"))
    assert generator(backend)(detail("c", "mine")) == f"/tmp/trunc/c-{full}"


def test_default_path_refuses_when_the_whole_digest_path_holds_other_content() -> None:
    """Only a backend that changed the content under a path gets here."""
    backend = InMemoryBackend()
    full = hashlib.sha256(b"mine").hexdigest()
    for path in ("/tmp/trunc/c", f"/tmp/trunc/c-{full[:12]}", f"/tmp/trunc/c-{full}"):
        backend.write(WriteRequest(file_path=path, content="changed"))
    with pytest.raises(RuntimeError) as caught:
        generator(backend)(detail("c", "mine"))
    assert str(caught.value) == (
        f"no offload path for /tmp/trunc/c: /tmp/trunc/c-{full} holds other content "
        "with the same SHA-256"
    )


def test_default_path_tail_covers_the_longest_default_path() -> None:
    """A cut id with its digest, then a whole content digest: DEFAULT_PATH_TAIL past root_dir."""
    backend = InMemoryBackend()
    long_id = "y" * 500
    base = generator(backend, kind="clear", root_dir="/r")(detail(long_id, "a"))
    backend.write(WriteRequest(file_path=base, content="a"))
    backend.write(WriteRequest(file_path=f"{base}-{h12('b')}", content="x"))
    longest = generator(backend, kind="clear", root_dir="/r")(detail(long_id, "b"))
    assert len(longest) - len("/r") == DEFAULT_PATH_TAIL == 201


class DigestBackend(InMemoryBackend):
    """A backend that answers digests, and fails any read: the check must not read."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def digest(self, path: str) -> str:
        self.asked.append(path)
        return content_digest(super().read(path))

    def read(self, path: str) -> str:
        raise AssertionError(f"read {path}")


def test_default_path_compares_digests_when_the_backend_has_them() -> None:
    """Same content at the path: reused; other content: the next path; no content read."""
    backend = DigestBackend()
    InMemoryBackend.write(backend, WriteRequest(file_path="/tmp/trunc/c1", content="content"))
    InMemoryBackend.write(backend, WriteRequest(file_path="/tmp/trunc/c2", content="other"))
    assert generator(backend)(detail("c1")) == "/tmp/trunc/c1"
    assert generator(backend)(detail("c2")) == f"/tmp/trunc/c2-{h12('content')}"
    assert generator(backend)(detail("c3")) == "/tmp/trunc/c3"
    assert backend.asked == [
        "/tmp/trunc/c1",
        "/tmp/trunc/c2",
        f"/tmp/trunc/c2-{h12('content')}",
        "/tmp/trunc/c3",
    ]


def test_content_digest_is_sha256_of_utf8_with_surrogates_kept() -> None:
    text = "é\udc80"
    assert content_digest(text) == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_default_path_checks_a_reopened_local_folder(tmp_path: Path) -> None:
    LocalFileBackend(tmp_path).write(WriteRequest(file_path="/tmp/trunc/c", content="older"))
    gen = generator(LocalFileBackend(tmp_path))
    assert gen(detail("c", "older")) == "/tmp/trunc/c"
    assert gen(detail("c", "other")) == f"/tmp/trunc/c-{h12('other')}"


def test_default_path_without_a_readable_backend_uses_the_registry_only() -> None:
    class WriteOnly:
        def write(self, request: WriteRequest) -> None:
            return None

    gen = generator(WriteOnly())
    assert [gen(detail("c", body)) for body in ("a", "b", "a")] == [
        "/tmp/trunc/c",
        f"/tmp/trunc/c-{h12('b')}",
        "/tmp/trunc/c",
    ]


def test_default_paths_share_a_registry_across_generators() -> None:
    """Two generators of one middleware (per-tool backends) never hand one path to two contents."""
    registry = PathRegistry()
    first, second = (
        generator(InMemoryBackend(), registry=registry),
        generator(InMemoryBackend(), registry=registry),
    )
    assert first(detail("c", "a")) == "/tmp/trunc/c"
    assert second(detail("c", "b")) == f"/tmp/trunc/c-{h12('b')}"


def test_path_registry_promise() -> None:
    registry = PathRegistry()
    assert registry.promised("/p") is None
    assert registry.promise("/p", "d1") is True
    assert registry.promise("/p", "d1") is True
    assert registry.promise("/p", "d2") is False
    assert registry.promised("/p") == "d1"


def test_default_path_works_out_the_content_only_when_a_path_is_contested() -> None:
    """A fresh path costs no pass over the output; a promised or stored one compares it."""
    asked: list[str] = []

    def counting(d: ToolDetail) -> str:
        content = content_of(d)
        asked.append(content)
        return content

    backend = InMemoryBackend()
    gen = DefaultPathGenerator(
        root_dir="/tmp", kind="trunc", backend=backend, registry=PathRegistry(), content_of=counting
    )
    assert gen(detail("c", "a")) == "/tmp/trunc/c"
    assert asked == []
    assert gen(detail("c", "b")) == f"/tmp/trunc/c-{h12('b')}"
    assert asked == ["b", "a"]
    backend.write(WriteRequest(file_path="/tmp/trunc/d", content="stored"))
    assert gen(detail("d", "stored")) == "/tmp/trunc/d"
    assert asked == ["b", "a", "stored"]


def test_content_equals_the_same_text_by_value() -> None:
    first, second = Content(content_of, detail("c", "x")), Content(content_of, detail("d", "x"))
    assert first == second == "x"
    assert first != Content(content_of, detail("c", "y"))
    assert first != "y"


@pytest.mark.parametrize("root_dir", ["/tmp", "/data/offload/", "rel"])
def test_first_clear_paths_are_the_paths_the_clear_phase_uses(root_dir: str) -> None:
    """For every call with an id, safe or not, the listed path is the one a clear writes
    (nothing was at it); an empty id is left out, as its path is random."""
    from reduction_app.engine import ChatModelAgentState, Message, ReductionConfig, ToolCall, new
    from reduction_app.engine.inspect import first_clear_paths

    ids = ["call_1", "../../etc/passwd", "a b", "", "call_5"]
    messages: list[Message] = [Message.user("go")]
    for call_id in [*ids, "last"]:
        call = ToolCall(id=call_id, name="grep", arguments="{}")
        messages += [Message.assistant(tool_calls=[call]), Message.tool("x" * 400, call_id)]
    backend = InMemoryBackend()
    config = ReductionConfig(backend=backend, max_tokens_for_clear=10, root_dir=root_dir)
    new(config).before_model_rewrite_state(ChatModelAgentState(messages=messages))
    written = set(backend.files)
    listed = first_clear_paths(messages, root_dir)
    kept = default_path(root_dir, "clear", "last")  # the last round is not cleared
    assert len(listed) == 5
    assert listed - {kept} <= written
    assert len(written - listed) == 1  # the empty id's random path
