"""The README's REST example and the REST API manual's agent loops, run as written
against a server set up as ``make run`` sets it up (the demo workspace and user from
``seed_demo``): what they record shows on the dashboard when the demo user signs in.

Only the address changes (the server listens on a free port, not 8000) and the key an
example says to paste (``rl_...``) is the one the example before it printed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookiejar import CookieJar
from pathlib import Path

import pytest

from benchmarks.server import ROOT, Server, production_server
from tests.migrated_databases import copy_sqlite

pytestmark = pytest.mark.slow  # a production server seeded as `make run` seeds it
PASSWORD = "demo-password"
TIMEOUT = 120
DEFAULT_URL = "http://127.0.0.1:8000"
SH_BLOCK = re.compile(r"```sh\n(.*?)```", re.S)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("walkthrough")
    copy_sqlite(sqlite_template, folder)
    with production_server(folder, migrated=True) as running:
        running.manage("seed_demo", "--user", "demo", "--password", PASSWORD, "--site", running.url)
        yield running


def section(path: Path, heading: str) -> str:
    """The text of ``path`` under ``heading`` (a Markdown heading line), to the next
    heading of the same level or above."""
    text = path.read_text()
    start = text.index(f"\n{heading}\n")
    level = heading.split(" ", 1)[0]
    ends = [
        m.start()
        for m in re.finditer(r"\n(#+) ", text[start + 1 :])
        if len(m.group(1)) <= len(level)
    ]
    return text[start : start + 1 + ends[0]] if ends else text[start:]


def run_shell(server: Server, script: str) -> str:
    """Run ``script`` with bash from the repository, the virtual environment first on
    PATH (as `. .venv/bin/activate` puts it) and the server's settings; its output."""
    env = dict(server.env)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script.replace(DEFAULT_URL, server.url)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{script}\n---\n{done.stdout}\n{done.stderr}"
    return done.stdout


def demo_sees(server: Server, conversation_id: str) -> str:
    """The conversation's dashboard page, as the demo user signed in sees it."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    with opener.open(f"{server.url}/accounts/login/", timeout=TIMEOUT) as response:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.read().decode())
    assert token is not None
    form = {"username": "demo", "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)}
    opener.open(
        f"{server.url}/accounts/login/", data=urllib.parse.urlencode(form).encode(), timeout=TIMEOUT
    ).close()
    with opener.open(f"{server.url}/conversations/", timeout=TIMEOUT) as response:
        assert conversation_id in response.read().decode()
    quoted = urllib.parse.quote(conversation_id)
    with opener.open(f"{server.url}/conversations/{quoted}/", timeout=TIMEOUT) as response:
        page: str = response.read().decode()
    return page


def test_the_readme_rest_example_records_what_the_demo_user_sees(server: Server) -> None:
    [script] = SH_BLOCK.findall(section(ROOT / "README.md", "## The REST API"))
    answer = run_shell(server, script)
    assert "/tmp/trunc/call_1" in answer
    assert "grep" in demo_sees(server, "try-1")


def test_the_python_agent_loop_records_what_the_demo_user_sees(server: Server) -> None:
    [script] = SH_BLOCK.findall(section(ROOT / "docs" / "api.md", "### A complete loop in Python"))
    lines = [line.split("#", 1)[0].strip() for line in script.splitlines()]
    make_key, run_loop = (line for line in lines if line.startswith(".venv/bin/python"))
    key = run_shell(server, make_key).splitlines()[-1]
    out = run_shell(server, run_loop.replace("rl_...", key))
    found = re.match(r"conversation (\S+) on ", out)
    assert found is not None, out
    assert "offloaded /tmp/trunc/" in out
    assert "read_file" in demo_sees(server, found.group(1))


def test_the_curl_loop_records_what_the_demo_user_sees(server: Server, tmp_path: Path) -> None:
    blocks = SH_BLOCK.findall(section(ROOT / "docs" / "api.md", "### The same loop with curl"))
    script = "\n".join(blocks)
    # The loop runs from the repository root (it calls manage.py); the answers it saves
    # go to a temporary folder instead of the checkout.
    for saved in ("truncated.json", "cleared.json"):
        assert saved in script
        script = script.replace(saved, str(tmp_path / saved))
    out = run_shell(server, script)
    ids = set(re.findall(r'"conversation_id": "([^"]+)"', "\n".join(blocks)))
    assert ids, "the curl loop names no conversation"
    assert '"offload_path"' in out
    assert '"revision": 2' in out  # the second /clear continued the first one's context
    for conversation_id in ids:
        demo_sees(server, conversation_id)
