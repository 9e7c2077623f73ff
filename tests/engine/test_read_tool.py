"""The read_file tool's answer: one implementation for the REST API and every adapter."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reduction_app.engine import (
    DEFAULT_READ_LIMIT,
    InMemoryBackend,
    LocalFileBackend,
    ReductionConfig,
    ToolReductionConfig,
    WriteRequest,
    aanswer_read_file,
    answer_read_file,
    read_file_backends,
    read_page,
)


def _backend(**files: str) -> InMemoryBackend:
    backend = InMemoryBackend()
    for name, content in files.items():
        backend.write(WriteRequest(file_path=f"/tmp/trunc/{name}", content=content))
    return backend


def test_read_page_numbers_lines_and_says_where_to_read_on() -> None:
    page = read_page("a\nb\r\nc\nd\n", "/f", offset=1, limit=2)
    assert (page.lines, page.total_lines, page.next_offset) == ("2\tb\n3\tc\n", 4, 3)
    assert page.answer == "2\tb\n3\tc\n[1 more lines; read on with offset=3]\n"


def test_read_page_to_the_end_has_no_hint() -> None:
    assert read_page("a\nb", "/f", offset=1).answer == "2\tb\n"


def test_read_page_past_the_end_says_so() -> None:
    assert read_page("a\nb\n", "/f", offset=5).answer == "/f has 2 lines; none from offset 5."
    assert read_page("", "/f").answer == "/f has 0 lines; none from offset 0."


def test_answer_read_file_pages_a_long_file_with_the_default_limit() -> None:
    content = "".join(f"line {n}\n" for n in range(2_500))
    answer = answer_read_file([_backend(c1=content)], "/tmp/trunc/c1")
    lines = answer.split("\n")
    assert len(lines) == DEFAULT_READ_LIMIT + 2  # the page, the hint, and the last "\n"
    assert lines[0] == "1\tline 0"
    assert lines[DEFAULT_READ_LIMIT - 1] == "2000\tline 1999"
    assert lines[DEFAULT_READ_LIMIT] == "[500 more lines; read on with offset=2000]"


def test_answer_read_file_answers_problems_to_the_model(tmp_path: Path) -> None:
    config = ReductionConfig(backend=LocalFileBackend(tmp_path))
    assert answer_read_file(config, "/tmp/trunc/none") == "file not found: /tmp/trunc/none"
    assert answer_read_file(config, "../../etc/passwd") == (
        "path '../../etc/passwd' is outside the storage root"
    )
    bad = "invalid arguments: offset must be an integer >= 0 and limit >= 1"
    assert answer_read_file(config, "/x", offset=-1) == bad
    assert answer_read_file(config, "/x", limit=0) == bad
    assert answer_read_file(config, "/x", offset=True) == bad


def test_answer_read_file_reads_each_backend_of_a_config_in_turn() -> None:
    shared, own = _backend(c1="one\n"), _backend(c2="two\n")
    config = ReductionConfig(
        backend=shared,
        tool_config={"grep": ToolReductionConfig(backend=own), "ls": ToolReductionConfig()},
    )
    assert read_file_backends(config) == [shared, own]
    assert answer_read_file(config, "/tmp/trunc/c1") == "1\tone\n"
    assert answer_read_file(config, "/tmp/trunc/c2") == "1\ttwo\n"


class _AsyncBackend:
    def __init__(self, content: str) -> None:
        self.content = content

    async def write(self, request: WriteRequest) -> None:
        raise AssertionError("never written")

    async def read(self, path: str) -> str:
        if path != "/tmp/trunc/a1":
            raise FileNotFoundError(path)
        return self.content


def test_aanswer_read_file_awaits_an_async_backend() -> None:
    backend = _AsyncBackend("x\ny\nz\n")
    answer = asyncio.run(aanswer_read_file([backend], "/tmp/trunc/a1", limit=1))
    assert answer == "1\tx\n[2 more lines; read on with offset=1]\n"
    missing = asyncio.run(aanswer_read_file([backend], "/tmp/trunc/b"))
    assert missing == "file not found: /tmp/trunc/b"


def test_answer_read_file_refuses_an_async_backend() -> None:
    with pytest.raises(TypeError, match="the backend of /tmp/trunc/a1 is async"):
        answer_read_file([_AsyncBackend("x")], "/tmp/trunc/a1")
