"""The MCP endpoint over HTTP against a live server, driven by the mcp package's own
client and by the Agents SDK's MCP support: offloads the engine made (``POST
/api/v1/truncate``) read back, searched and listed, in the key's workspace only."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from agents import Agent, RunConfig, Runner
from agents.mcp import MCPServerStreamableHttp
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import PaginatedRequestParams
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from reduction_app.client import ReductionClient
from reduction_app.engine import numbered_lines
from reduction_app.workspaces.services import api_key_create, workspace_get_or_create
from tests.integrations.test_openai_agents import ScriptedModel, answer, call

pytestmark = pytest.mark.slow  # a live server, and a client session per test

TRUNCATE_AT = {"max_length_for_trunc": 100}
LOG = "".join(f"step {n:02}: compiled module_{n}.py\n" for n in range(1, 26))
"""25 lines, far over TRUNCATE_AT: the engine offloads it whole."""


def key_of(name: str) -> str:
    _, raw = api_key_create(workspace=workspace_get_or_create(name=name), name="mcp")
    return raw


@pytest.fixture
def raw_key(transactional_db: None) -> str:
    return key_of("alpha")


@pytest.fixture
def other_key(transactional_db: None) -> str:
    return key_of("beta")


@pytest.fixture
def lab(live_server: Any, raw_key: str) -> ReductionClient:
    """The REST API of the live server, with the key of workspace ``alpha``."""
    return ReductionClient(live_server.url, api_key=raw_key)


def offload(lab: ReductionClient, text: str, *, call_id: str, conversation: str = "run-1") -> str:
    """Truncate ``text`` through the REST API (the engine, with the Lab's storage); the
    path of its offload."""
    answer = lab.truncate(
        tool_name="build",
        tool_call_id=call_id,
        result=text,
        conversation_id=conversation,
        config=TRUNCATE_AT,
    )
    path: str = answer["offload_path"]
    assert path and path in answer["result"]
    return path


@asynccontextmanager
async def session(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


async def text_of(client: ClientSession, tool: str, **arguments: Any) -> tuple[str, bool]:
    """The tool's one text item, and whether it is a tool error."""
    result = await client.call_tool(tool, arguments)
    [item] = result.content
    assert item.type == "text"
    return item.text, bool(result.is_error)


async def test_initialize_negotiates_and_lists_the_tools(live_server: Any, raw_key: str) -> None:
    async with session(live_server.url, raw_key) as client:
        assert client.protocol_version == LATEST_HANDSHAKE_VERSION
        assert client.server_info is not None
        assert client.server_info.name == "reduction-lab"
        tools = (await client.list_tools()).tools
        await client.send_ping()
    assert [t.name for t in tools] == ["read_file", "search_files", "list_files"]


async def test_read_file_pages_are_the_rest_read_with_the_hint(
    live_server: Any, lab: ReductionClient, raw_key: str
) -> None:
    """Each page is the numbered lines ``GET /files/read`` answers, then the hint naming
    the offset to read on from; the pages, joined, are the whole content."""
    path = offload(lab, LOG, call_id="c1")
    pages: list[str] = []
    async with session(live_server.url, raw_key) as client:
        offset = 0
        while True:
            text, error = await text_of(client, "read_file", path=path, offset=offset, limit=10)
            assert not error
            rest = lab.read_file(path, offset=offset, limit=10)["content"]
            assert text.startswith(rest)
            hint = re.fullmatch(
                r"\[(\d+) more lines; read on with offset=(\d+)\]\n", text[len(rest) :]
            )
            pages.append(rest)
            if hint is None:
                assert text == rest
                break
            assert (int(hint[1]), int(hint[2])) == (25 - offset - 10, offset + 10)
            offset = int(hint[2])
    assert offset == 20
    assert "".join(pages) == numbered_lines(LOG, 0, 25)[0]
    shown = [line.split("\t", 1)[1] for line in "".join(pages).splitlines()]
    assert "\n".join(shown) + "\n" == LOG
    assert pages[0].startswith("1\tstep 01: compiled module_1.py\n")


async def test_read_file_in_a_conversation_and_past_the_end(
    live_server: Any, lab: ReductionClient, raw_key: str
) -> None:
    path = offload(lab, LOG, call_id="c1", conversation="run-7")
    async with session(live_server.url, raw_key) as client:
        text, error = await text_of(
            client, "read_file", path=path, offset=24, conversation_id="run-7"
        )
        assert (text, error) == ("25\tstep 25: compiled module_25.py\n", False)
        text, _ = await text_of(client, "read_file", path=path, offset=30)
        assert text == f"{path} has 25 lines; none from offset 30."
        text, error = await text_of(client, "read_file", path=path, conversation_id="run-8")
        assert (text, error) == (f"file not found: {path} in conversation run-8", True)


async def test_search_files_answers_paths_and_numbered_lines(
    live_server: Any, lab: ReductionClient, raw_key: str
) -> None:
    first = offload(lab, LOG, call_id="c1")
    second = offload(lab, "nothing here\n" * 10 + "MODULE_7 failed\n", call_id="c2")
    async with session(live_server.url, raw_key) as client:
        text, error = await text_of(client, "search_files", pattern="module_7")
        empty, _ = await text_of(client, "search_files", pattern="zebra", conversation_id="run-1")
    assert not error
    # Newest file first; a line numbered as read_file numbers it.
    assert text == (
        "2 matching lines in 2 files for 'module_7' (case-insensitive, the workspace); "
        "read_file with offset=<line number - 1> reads from a line on.\n"
        f"{second}\n"
        "  11: MODULE_7 failed\n"
        f"{first}\n"
        "  7: step 07: compiled module_7.py\n"
    )
    assert empty == (
        "0 matching lines in 0 files for 'zebra' (case-insensitive, conversation run-1); "
        "read_file with offset=<line number - 1> reads from a line on.\n"
    )


async def test_list_files_pages_with_a_cursor(
    live_server: Any, lab: ReductionClient, raw_key: str
) -> None:
    paths = [offload(lab, LOG + f"run {n}\n", call_id=f"c{n}") for n in range(3)]
    sizes = [len(LOG + f"run {n}\n") for n in range(3)]
    async with session(live_server.url, raw_key) as client:
        first, _ = await text_of(client, "list_files", limit=2)
        cursor = re.search(r'cursor="(\d+)"', first)
        assert cursor is not None
        second, _ = await text_of(client, "list_files", limit=2, cursor=cursor[1])
        bad, error = await text_of(client, "list_files", cursor="abc")
    rows = [f"{paths[n]}\tbuild\t{sizes[n]}\t" for n in (2, 1, 0)]
    header, *listed, more = first.splitlines()
    assert header == "path\ttool\tchars\ttokens\tconversation"
    assert [line.rsplit("\t", 2)[0] + "\t" for line in listed] == rows[:2]
    assert all(line.endswith("\trun-1") for line in listed)
    assert more == f'[more files: call list_files with cursor="{cursor[1]}"]'
    assert second.splitlines()[1].startswith(rows[2])
    assert len(second.splitlines()) == 2
    assert (bad, error) == (
        "cursor: not a cursor list_files gave; leave it out to start over",
        True,
    )


@pytest.mark.parametrize("key", [None, "not-a-key"])
async def test_without_a_live_key_the_client_is_refused(live_server: Any, key: str | None) -> None:
    """The client's initialize fails with the server's JSON-RPC error (raised out of
    its task groups); the HTTP answer is a 401 asking for a Bearer token."""
    with pytest.raises(ExceptionGroup) as caught:
        async with session(live_server.url, key):
            pass
    assert caught.group_contains(MCPError, match="^missing or invalid API key$")
    response = httpx2.post(
        f"{live_server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json"}
        | ({} if key is None else {"Authorization": f"Bearer {key}"}),
    )
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_another_workspace_sees_none_of_the_files(
    live_server: Any, lab: ReductionClient, other_key: str
) -> None:
    path = offload(lab, LOG, call_id="c1")
    async with session(live_server.url, other_key) as client:
        read, read_error = await text_of(client, "read_file", path=path)
        found, _ = await text_of(client, "search_files", pattern="module")
        listed, _ = await text_of(client, "list_files")
    assert (read, read_error) == (f"file not found: {path}", True)
    assert found == "No offloaded files in the workspace.\n"
    assert listed == "No offloaded files.\n"


@pytest.mark.parametrize(
    "path", ["../../etc/passwd", "/tmp/trunc/../../../etc/passwd", "..\\..\\secrets.txt"]
)
async def test_path_traversal_is_refused(
    live_server: Any, lab: ReductionClient, raw_key: str, path: str
) -> None:
    offload(lab, LOG, call_id="c1")
    async with session(live_server.url, raw_key) as client:
        text, error = await text_of(client, "read_file", path=path)
    assert (text, error) == (f"path {path!r} is outside the storage root", True)


def test_agents_sdk_reads_back_the_engines_offload(
    live_server: Any, lab: ReductionClient, raw_key: str
) -> None:
    """An agent of the Agents SDK with the Lab as an MCP server: the model reads the
    offload the engine made, and gets the original content's numbered lines."""
    path = offload(lab, LOG, call_id="c1")
    model = ScriptedModel([call("r1", "read_file", path=path), answer("module 7 compiled")])
    server = MCPServerStreamableHttp(
        params={"url": f"{live_server.url}/mcp", "headers": {"Authorization": f"Bearer {raw_key}"}},
        cache_tools_list=True,
    )

    async def run() -> Any:
        async with server:
            agent = Agent(name="reader", model=model, mcp_servers=[server])
            run_config = RunConfig(tracing_disabled=True)
            return await Runner.run(agent, "What did the build do?", run_config=run_config)

    result = asyncio.run(run())
    assert result.final_output == "module 7 compiled"
    assert model.tool_names[0] == ["read_file", "search_files", "list_files"]
    [output] = [i["output"] for i in model.inputs[1] if i.get("type") == "function_call_output"]
    [item] = output
    assert item == {"type": "input_text", "text": numbered_lines(LOG, 0, 2000)[0]}


async def test_resources_list_and_read_a_conversation_s_events_in_its_workspace_only(
    live_server: Any, lab: ReductionClient, raw_key: str, other_key: str
) -> None:
    """Each conversation of the key's workspace is a resource holding its recorded events
    as JSON (those of ``GET /api/v1/events``); another workspace lists none of them and
    reads none (resource not found), and a made-up URI is not found either."""
    offload(lab, LOG, call_id="c1", conversation="run/1 é")
    offload(lab, LOG, call_id="c2", conversation="run-2")
    async with session(live_server.url, raw_key) as client:
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        uris = {r.name: str(r.uri) for r in listed}
        read = await client.read_resource(uris["run/1 é"])
    assert set(uris) == {"run/1 é", "run-2"}
    assert uris["run/1 é"] == "lab://conversations/run%2F1%20%C3%A9/events"
    assert [t.uri_template for t in templates] == ["lab://conversations/{conversation_id}/events"]
    [contents] = read.contents
    assert contents.mime_type == "application/json"
    body = json.loads(contents.text)
    expected = lab.events(conversation_id="run/1 é")["results"]
    assert body["conversation_id"] == "run/1 é"
    assert [e["id"] for e in body["events"]] == [e["id"] for e in reversed(expected)]
    assert body["events"][0]["offload_path"] == "/tmp/trunc/c1"
    assert body["left_out"] is None
    async with session(live_server.url, other_key) as client:
        assert (await client.list_resources()).resources == []
        for missing in (uris["run-2"], "lab://conversations/nope/events", "file:///etc/passwd"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(missing)
            assert caught.value.error.code == -32002


async def test_resources_list_pages_with_its_cursor(
    live_server: Any, lab: ReductionClient, raw_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reduction_app.mcp import resources

    monkeypatch.setattr(resources, "PAGE", 2)
    for n in range(3):
        offload(lab, LOG, call_id=f"c{n}", conversation=f"run-{n}")
    async with session(live_server.url, raw_key) as client:
        first = await client.list_resources()
        assert first.next_cursor is not None
        after = PaginatedRequestParams(cursor=first.next_cursor)
        second = await client.list_resources(params=after)
        with pytest.raises(MCPError) as caught:
            await client.list_resources(params=PaginatedRequestParams(cursor="x"))
    assert [r.name for r in first.resources] == ["run-2", "run-1"]
    assert [r.name for r in second.resources] == ["run-0"]
    assert second.next_cursor is None
    assert caught.value.error.code == -32602
