"""A long recorded agent session replayed against the production server, call by call, a
conversation that shares its files deleted, and ``/clear`` requests whose worker is
killed while they store their offloads, each sent again as a client would.

At the end every offloaded file must read back exactly and ``offload_check`` find
nothing after ``offload_reclaim`` (benchmarks/README.md, "A long session, and requests
killed midway").
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import statistics
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import load_average, recording_files, table
from benchmarks.loadgen import percentile, post_once
from benchmarks.report import Stamp, add_readme_arguments, md_table, readme_path, write_block
from benchmarks.server import ManageError, Server, temporary_server
from reduction_app.engine import formats
from simulator.importers import ImportError_, load_conversations
from simulator.recordings_folder import RecordingsNotFound, require_recordings

__all__ = ["CONFIG", "README_BLOCKS", "Session", "main", "ranked_sessions", "selected"]

RESULTS = Path(__file__).parent / "results" / "soak.json"
PATH = "/api/v1/clear"
PACKAGES = ("Django", "django-ninja", "gunicorn")
README_BLOCKS = ("soak-sqlite", "soak-postgres")
"""The blocks of benchmarks/README.md that ``--readme`` writes, one per database."""
CONFIG: dict[str, Any] = {"max_tokens_for_clear": 4_000, "clear_retention_suffix_limit": 1}
"""The replay's config: a context over 4,000 tokens is cleared down to its last round."""
KILL_CONFIG: dict[str, Any] = {"max_tokens_for_clear": 1_000, "clear_retention_suffix_limit": 1}
"""The killed requests' config: every round but the last is offloaded."""
FORMATS = ("openai_chat", "anthropic")
INPUT_ROLES = {"openai_chat": ("user", "tool"), "anthropic": ("user",)}
MARKS = (10, 100, 300)
"""The calls whose latency the report names, beside the last."""
FIRST = "soak-000"
"""The conversation of the first session: the one deleted."""
TWIN = "soak-twin"
"""The conversation replaying the start of the first session, sharing its files."""


# The session ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Session:
    """One recorded session, as an agent sends it to the API."""

    label: str
    """``file#session`` (the file relative to the recordings folder)."""
    rank_key: tuple[str, int]
    fmt: str
    system: Any
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    calls: list[int] = field(default_factory=list)
    """Indices of the assistant messages that were model calls."""


def _calls(fmt: str, messages: Sequence[dict[str, Any]]) -> list[int]:
    out, seen_input = [], False
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "assistant" and seen_input:
            out.append(index)
        elif role in INPUT_ROLES[fmt]:
            seen_input = True
    return out


def ranked_sessions(folder: Path) -> tuple[list[Session], list[str]]:
    """Every session the simulator reads in ``folder``, most model calls first (then by
    file and position), and the files it could not read."""
    sessions, unread = [], []
    for path in recording_files(folder):
        relative = path.relative_to(folder).as_posix()
        try:
            recorded = load_conversations(path)
        except ImportError_:
            unread.append(relative)
            continue
        for position, conversation in enumerate(recorded):
            if conversation.format not in FORMATS:
                continue
            system, wire = formats.dump(conversation.format, conversation.messages)
            tools = formats.dump_tools(conversation.format, conversation.tools)
            name = conversation.name.rpartition("#")[2] if "#" in conversation.name else ""
            label = f"{relative}#{name or position}"
            calls = _calls(conversation.format, wire)
            sessions.append(
                Session(
                    label, (relative, position), conversation.format, system, wire, tools, calls
                )
            )
    sessions.sort(key=lambda s: (-len(s.calls), s.rank_key))
    return sessions, unread


def selected(sessions: Sequence[Session], calls: int) -> list[Session]:
    """The longest session when it has ``calls`` model calls, else the longest ones in
    rank order until they have ``calls`` between them (or every session)."""
    out: list[Session] = []
    for session in sessions:
        if sum(len(s.calls) for s in out) >= calls:
            break
        out.append(session)
    return out


# Measuring the server -------------------------------------------------------------------


def _offload_root(server: Server) -> Path:
    return Path(server.env["REDUCTION_MEDIA_ROOT"]) / "offload"


def stored(server: Server) -> tuple[int, int]:
    """Files and bytes in the offload folder."""
    files = size = 0
    for directory, _, names in os.walk(_offload_root(server)):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                size += os.stat(os.path.join(directory, name)).st_size
                files += 1
    return files, size


def _headers(server: Server) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"}


def _address(server: Server) -> tuple[str, int]:
    parts = urllib.parse.urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def _get(server: Server, endpoint: str, **query: str) -> tuple[int, bytes]:
    url = f"{server.url}/api/v1{endpoint}?{urllib.parse.urlencode(query)}"
    request = urllib.request.Request(url, headers=_headers(server))
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _originals(sent: Any, answered: Any, paths: set[str], out: dict[str, Any]) -> None:
    """Walk the request's messages beside the answer's: a string the answer replaced by a
    notice naming an offload path is that path's original content."""
    if isinstance(sent, dict) and isinstance(answered, dict):
        for key in sent.keys() & answered.keys():
            _originals(sent[key], answered[key], paths, out)
    elif isinstance(sent, list) and isinstance(answered, list) and len(sent) == len(answered):
        for one, other in zip(sent, answered, strict=True):
            _originals(one, other, paths, out)
    elif sent != answered and isinstance(answered, str):
        # A notice names its path as a word of its own: one path may begin another.
        for path in paths & set(answered.split()):
            out[path] = sent


@dataclass
class Call:
    session: int
    seconds: float
    messages: int
    request_bytes: int
    applied: bool
    offloads: int
    files_after: int
    bytes_stored: int


def replay(
    server: Server,
    sessions: Sequence[Session],
    conversation_ids: Sequence[str],
    offloaded: dict[tuple[str, str], Any],
    *,
    limit: int | None = None,
) -> list[Call]:
    """Every call of ``sessions`` (the first ``limit`` of each), each session as the
    conversation of the same rank in ``conversation_ids``; the original content of each
    offloaded path goes into ``offloaded``, by conversation and path."""
    host, port = _address(server)
    headers = _headers(server)
    calls: list[Call] = []
    _, size_before = stored(server)
    for number, (session, conversation_id) in enumerate(
        zip(sessions, conversation_ids, strict=True)
    ):
        carried: list[Any] = []
        previous = 0
        for index in session.calls[:limit]:
            history = carried + session.messages[previous:index]
            previous = index
            body: dict[str, Any] = {
                "format": session.fmt,
                "messages": history,
                "tools": session.tools,
                "conversation_id": conversation_id,
                "config": CONFIG,
            }
            if session.system is not None:
                body["system"] = session.system
            data = json.dumps(body).encode()
            status, seconds, answer_bytes = post_once(host, port, PATH, data, headers)
            if status != 200:
                raise SystemExit(
                    f"{session.label}, call {len(calls) + 1}: /clear answered {status}: "
                    f"{answer_bytes[:500]!r}"
                )
            answer = json.loads(answer_bytes)
            paths = _note_originals(offloaded, conversation_id, history, answer)
            files, size = stored(server)
            calls.append(
                Call(
                    number,
                    seconds,
                    len(history),
                    len(data),
                    bool(answer["applied"]),
                    len(paths),
                    files,
                    size - size_before,
                )
            )
            size_before = size
            carried = answer["messages"]
    return calls


def _note_originals(
    offloaded: dict[tuple[str, str], Any], conversation_id: str, sent: Any, answer: Any
) -> set[str]:
    """The paths ``answer``'s events offloaded; each one's original (the text of ``sent``
    the answer replaced by its notice) goes into ``offloaded``."""
    paths = {e["offload_path"] for e in answer["events"] if e["offload_path"]}
    found: dict[str, Any] = {}
    _originals(sent, answer["messages"], paths, found)
    for path in paths:
        # None: the request held no text the answer replaced by this path's notice.
        offloaded.setdefault((conversation_id, path), None)
    for path, content in found.items():
        offloaded[conversation_id, path] = content
    return paths


def row_counts(server: Server) -> tuple[int, int]:
    """Event rows and file rows the server's database holds."""
    out = server.manage(
        "shell",
        "-c",
        "from reduction_app.models import EventRecord, OffloadedFile; "
        "print(EventRecord.objects.count(), OffloadedFile.objects.count())",
    )
    # The last line: the shell may say first what it imported.
    events, files = out.strip().splitlines()[-1].split()
    return int(events), int(files)


def delete_conversation(server: Server, conversation_id: str) -> int:
    """``DELETE /api/v1/conversations/<id>``: its status."""
    url = f"{server.url}/api/v1/conversations/{urllib.parse.quote(conversation_id)}"
    request = urllib.request.Request(url, headers=_headers(server), method="DELETE")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def read_back(server: Server, offloaded: dict[tuple[str, str], Any]) -> dict[str, int]:
    """Each offloaded file through ``GET /files/raw``, against the original."""
    counts = {"checked": 0, "equal": 0, "not text": 0, "no original": 0}
    for (conversation_id, path), original in sorted(offloaded.items()):
        if original is None:
            counts["no original"] += 1
            print(f"no original found for {path}", file=sys.stderr)
            continue
        if not isinstance(original, str):
            counts["not text"] += 1
            continue
        status, raw = _get(server, "/files/raw", path=path, conversation_id=conversation_id)
        counts["checked"] += 1
        # /files/raw writes a tool's lone surrogates as UTF-8 writes any other code point.
        if status == 200 and raw.decode("utf-8", "surrogatepass") == original:
            counts["equal"] += 1
        else:
            print(f"read-back differs: {path} ({status})", file=sys.stderr)
    return counts


# Killed requests ------------------------------------------------------------------------


def kill_conversation(rounds: int, tag: str) -> list[dict[str, Any]]:
    """A task, then ``rounds`` rounds of one small tool call each, every output new."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": f"Run the {rounds} checks of batch {tag}."},
    ]
    for i in range(rounds):
        call_id = f"call_{tag}_{i}"
        arguments = json.dumps({"command": f"./check {i}"})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": arguments},
                    }
                ],
            }
        )
        output = f"batch {tag}, check {i}: passed\n" + f"line {i}\n" * 12
        messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
    return messages


def _socket_inode(client_port: int, server_port: int) -> str | None:
    """The inode of the server's end of the connection from ``client_port``."""
    for table_path in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table_path, encoding="ascii") as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local, remote = fields[1], fields[2]
                if (
                    int(local.rpartition(":")[2], 16) == server_port
                    and int(remote.rpartition(":")[2], 16) == client_port
                ):
                    return fields[9]
    return None


def _worker_holding(server: Server, inode: str) -> int | None:
    for pid in server.worker_pids():
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                        return pid
    return None


def _wait_for_workers(server: Server, killed: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = server.worker_pids()
        if len(pids) == server.workers and killed not in pids:
            status, _ = _get(server, "/tools/read_file")
            if status == 200:
                return
        time.sleep(0.1)
    raise SystemExit(f"gunicorn did not replace worker {killed} in {timeout:.0f} s")


def kill_once(
    server: Server,
    number: int,
    kills: int,
    rounds: int,
    offloaded: dict[tuple[str, str], Any],
) -> dict[str, Any]:
    """Post one large /clear and SIGKILL its worker once it stored ``number + 1`` parts in
    ``kills + 1`` of its offloads; then send it again, noting its offloads' originals."""
    host, port = _address(server)
    conversation_id = f"soak-kill-{number}"
    messages = kill_conversation(rounds, str(number))
    body = json.dumps(
        {"messages": messages, "conversation_id": conversation_id, "config": KILL_CONFIG}
    ).encode()
    files_before, bytes_before = stored(server)
    connection = http.client.HTTPConnection(host, port, timeout=300)
    connection.connect()
    assert connection.sock is not None
    client_port = connection.sock.getsockname()[1]
    outcome: dict[str, Any] = {}

    def send() -> None:
        try:
            connection.request("POST", PATH, body=body, headers=_headers(server))
            outcome["status"] = connection.getresponse().status
        except (OSError, http.client.HTTPException) as error:
            outcome["error"] = type(error).__name__
        finally:
            connection.close()

    start = time.perf_counter()
    sender = threading.Thread(target=send)
    sender.start()
    threshold = max(1, (rounds - 1) * (number + 1) // (kills + 1))
    worker = None
    while sender.is_alive():
        files, _ = stored(server)
        if files - files_before >= threshold:
            inode = _socket_inode(client_port, port)
            worker = _worker_holding(server, inode) if inode else None
            if worker is not None:
                os.kill(worker, signal.SIGKILL)
                break
        time.sleep(0.005)
    killed_after = time.perf_counter() - start
    sender.join(timeout=120)
    if worker is None:
        raise SystemExit(
            f"kill {number + 1}: the request ended ({outcome}) before its worker could be "
            f"killed with {threshold} offloads stored; try more --kill-rounds"
        )
    _wait_for_workers(server, worker)
    files_after, bytes_after = stored(server)
    status, events = _get(server, "/events", conversation_id=conversation_id)
    recorded = len(json.loads(events)["results"]) if status == 200 else -1
    retry_status, retry_seconds, answer = post_once(host, port, PATH, body, _headers(server))
    retried = 0
    if retry_status == 200:
        retried = len(_note_originals(offloaded, conversation_id, messages, json.loads(answer)))
    return {
        "offloads": rounds - 1,
        "killed_at": threshold,
        "killed_after_s": killed_after,
        "client_saw": outcome.get("error") or outcome.get("status"),
        "files_left": files_after - files_before,
        "bytes_left": bytes_after - bytes_before,
        "events_recorded": recorded,
        "retry_status": retry_status,
        "retry_s": retry_seconds,
        "retry_offloads": retried,
    }


def _check(server: Server, *options: str) -> tuple[str, int]:
    try:
        return server.manage("offload_check", *options).strip(), 0
    except ManageError as error:
        return error.stdout.strip(), error.returncode


def reclaim_and_check(server: Server) -> dict[str, Any]:
    """``offload_check`` (the killed requests' content is journaled: counted apart, not a
    fault), ``offload_reclaim --older-than 0``, then ``offload_check --deep``."""
    before, before_status = _check(server)
    reclaim = server.manage("offload_reclaim", "--older-than", "0").strip()
    after, status = _check(server, "--deep")
    return {
        "check_before": before,
        "check_before_status": before_status,
        "reclaim": reclaim,
        "check_status": status,
        "check": after,
    }


# Report ---------------------------------------------------------------------------------


def _ms(seconds: float) -> str:
    return f"{1000 * seconds:.1f}"


def figures(calls: Sequence[Call]) -> dict[str, Any]:
    seconds = [c.seconds for c in calls]
    total_bytes = sum(c.bytes_stored for c in calls)
    offloads = sum(c.offloads for c in calls)
    marks = {m: seconds[m - 1] for m in MARKS if m <= len(calls)}
    tenths = []
    for tenth in range(10):
        part = calls[len(calls) * tenth // 10 : len(calls) * (tenth + 1) // 10]
        if part:
            tenths.append(
                {
                    "calls": f"{calls.index(part[0]) + 1}-{calls.index(part[-1]) + 1}",
                    "mean_s": statistics.fmean(c.seconds for c in part),
                    "max_s": max(c.seconds for c in part),
                    "messages": part[-1].messages,
                    "request_bytes": part[-1].request_bytes,
                    "files": part[-1].files_after,
                }
            )
    return {
        "calls": len(calls),
        "at": marks,
        "last_s": seconds[-1],
        "median_s": statistics.median(seconds),
        "p95_s": percentile(seconds, 95),
        "max_s": max(seconds),
        "total_s": sum(seconds),
        "calls_cleared": sum(c.applied for c in calls),
        "offloads": offloads,
        "bytes_stored": total_bytes,
        "bytes_per_call": total_bytes / len(calls),
        "bytes_per_offload": total_bytes / offloads if offloads else 0.0,
        "tenths": tenths,
    }


def _latency_rows(found: dict[str, Any]) -> list[list[str]]:
    rows = [[f"call {m}", _ms(s)] for m, s in found["at"].items()]
    rows.append([f"call {found['calls']} (the last)", _ms(found["last_s"])])
    rows += [["median", _ms(found["median_s"])], ["p95", _ms(found["p95_s"])]]
    rows.append(["max", _ms(found["max_s"])])
    return rows


def _tenth_rows(found: dict[str, Any]) -> list[list[str]]:
    return [
        [
            t["calls"],
            _ms(t["mean_s"]),
            _ms(t["max_s"]),
            f"{t['messages']:,}",
            f"{t['request_bytes']:,}",
            f"{t['files']:,}",
        ]
        for t in found["tenths"]
    ]


TENTH_HEADERS = ["calls", "mean ms", "max ms", "messages sent", "request bytes", "stored files"]
KILL_HEADERS = [
    "kill",
    "offloads",
    "killed at",
    "killed after s",
    "client saw",
    "files left",
    "bytes left",
    "events",
    "sent again",
    "again ms",
]


def _kill_rows(kills: Sequence[dict[str, Any]]) -> list[list[str]]:
    return [
        [
            str(n),
            f"{k['offloads']:,}",
            f"{k['killed_at']:,} stored",
            f"{k['killed_after_s']:.2f}",
            str(k["client_saw"]),
            f"{k['files_left']:,}",
            f"{k['bytes_left']:,}",
            str(k["events_recorded"]),
            str(k["retry_status"]),
            _ms(k["retry_s"]),
        ]
        for n, k in enumerate(kills, start=1)
    ]


def problems(report: dict[str, Any]) -> list[str]:
    """What makes the run fail (the module docstring says what)."""
    out = []
    back = report["read_back"]
    if back["equal"] != back["checked"]:
        out.append(f"{back['checked'] - back['equal']} offloaded files did not read back exactly")
    if back["no original"]:
        out.append(f"{back['no original']} offloads replaced no text of their request")
    recorded = [k for k in report["kills"] if k["events_recorded"] != 0]
    if recorded:
        out.append(f"{len(recorded)} killed requests recorded events")
    unanswered = [k for k in report["kills"] if k["retry_status"] != 200]
    if unanswered:
        out.append(f"{len(unanswered)} killed requests sent again were not answered with 200")
    shared = report["shared"]
    if shared["delete_status"] != 204:
        out.append(f"deleting {FIRST} answered {shared['delete_status']}")
    if not shared["shared_paths"]:
        out.append(f"{TWIN} shared no offloaded file with {FIRST}: try more --twin-calls")
    end = report["end"]
    if end["check_before_status"] != 0:
        out.append("offload_check found content unaccounted for after the kills")
    if end["check_status"] != 0 or "journals" in end["check"]:
        out.append("offload_check found content unaccounted for after offload_reclaim")
    return out


def _shared_sentence(report: dict[str, Any]) -> str:
    shared = report["shared"]
    return (
        f"Shared files: the first {shared['twin_calls']:,} calls of the first session again, "
        f"as `{TWIN}`: {shared['twin_paths']:,} offloaded paths, {shared['shared_paths']:,} "
        f"of them the first conversation's too. `DELETE /api/v1/conversations/{FIRST}` "
        f"answered {shared['delete_status']}; the twin's files were read back after it."
    )


def _rows_sentence(report: dict[str, Any]) -> str:
    rows, found = report["rows"], report["figures"]
    calls = found["calls"]
    return (
        f"Rows the replay's {calls:,} calls recorded: {rows['events']:,} events "
        f"({rows['events'] / calls:,.1f} a call) and {rows['files']:,} files "
        f"({rows['files'] / calls:,.1f} a call)."
    )


def markdown(report: dict[str, Any]) -> list[str]:
    found, sessions = report["figures"], report["sessions"]
    several = len(sessions) > 1
    chosen = (
        f"No session of the recordings folder has {report['calls_wanted']:,} model calls "
        f"(the longest has {sessions[0]['calls']:,}), so {len(sessions)} sessions were "
        "replayed one after another, longest first, each as its own conversation in the "
        "same workspace."
        if several
        else f"The longest session of the recordings folder, {sessions[0]['calls']:,} calls."
    )
    listed = ", ".join(f"`{s['label']}` ({s['calls']})" for s in sessions)
    end = report["end"]
    reclaim = f"`manage.py offload_reclaim --older-than 0`:\n\n```\n{end['reclaim']}\n```"
    back = report["read_back"]
    failed = problems(report)
    result = "; ".join(failed) if failed else "every check passed"
    before = "\n".join(
        line for line in end["check_before"].splitlines() if not line.startswith(" ")
    )
    headings = "\n".join(line for line in end["check"].splitlines() if not line.startswith(" "))
    kills = report["kills"]
    return [
        f"{report['database']}, gunicorn with {report['workers']} workers. {chosen} "
        f"Sessions (model calls): {listed}. Left out: {len(report['unread_files'])} files "
        f"the simulator does not read. Config: `{json.dumps(CONFIG)}`.",
        md_table(["latency of /clear", "ms"], _latency_rows(found)),
        "By tenth of the replay (messages, request size and stored files at its end):\n\n"
        + md_table(TENTH_HEADERS, _tenth_rows(found)),
        f"{found['calls_cleared']:,} of {found['calls']:,} calls cleared, "
        f"{found['offloads']:,} offloads; the offload folder grew by "
        f"**{found['bytes_stored']:,} bytes**, {found['bytes_per_call']:,.0f} bytes a call "
        f"({found['bytes_per_offload']:,.0f} an offload). " + _rows_sentence(report),
        _shared_sentence(report),
        f"Killed requests: {len(kills)} `/clear` requests of {report['kill_rounds']:,} tool "
        "rounds each, their worker sent SIGKILL while the request stored its offloads (at "
        "the count of stored offloads shown), then each sent again:\n\n"
        + md_table(KILL_HEADERS, _kill_rows(kills)),
        f"Read back with `GET /files/raw`, each file the offloads of every conversation left "
        f"name (the killed requests' retries and the twin's included): {back['equal']:,} of "
        f"{back['checked']:,} equal to the original output"
        + (f", {back['not text']} not text and not compared" if back["not text"] else "")
        + ".",
        f"`manage.py offload_check` after the kills (exit {end['check_before_status']}):"
        f"\n\n```\n{before}\n```",
        reclaim,
        f"`manage.py offload_check --deep` after the reclaim (exit {end['check_status']}):"
        f"\n\n```\n{headings}\n```",
        f"Result: {result}.",
    ]


def print_report(report: dict[str, Any]) -> None:
    found = report["figures"]
    for session in report["sessions"]:
        print(f"session {session['label']}: {session['calls']} calls, {session['fmt']}")
    print(table(["latency of /clear", "ms"], _latency_rows(found)))
    print(table(TENTH_HEADERS, _tenth_rows(found)))
    print(
        f"{found['calls_cleared']} calls cleared, {found['offloads']} offloads, "
        f"{found['bytes_stored']:,} bytes stored ({found['bytes_per_call']:,.0f} a call)"
    )
    print(_rows_sentence(report))
    print(_shared_sentence(report))
    print(table(KILL_HEADERS, _kill_rows(report["kills"])))
    print(f"read back: {report['read_back']}")
    end = report["end"]
    print(f"offload_check after the kills (exit {end['check_before_status']}):")
    print(end["check_before"])
    print(f"offload_reclaim:\n{end['reclaim']}")
    print(f"offload_check --deep after the reclaim (exit {end['check_status']}):\n{end['check']}")


# Driving --------------------------------------------------------------------------------


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recordings", type=Path, metavar="DIR", help="the recordings folder")
    parser.add_argument(
        "--calls", type=int, default=300, help="model calls to replay at least (whole sessions)"
    )
    parser.add_argument(
        "--twin-calls",
        type=int,
        default=50,
        help="calls of the first session replayed again as a conversation sharing its files",
    )
    parser.add_argument("--kills", type=int, default=20, help="requests killed while storing")
    parser.add_argument(
        "--kill-rounds", type=int, default=1_000, help="tool rounds of each killed request"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers")
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="serve from a fresh database made (and dropped) on this PostgreSQL server, "
        "e.g. postgres://postgres@127.0.0.1:5432/postgres; SQLite by default",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    add_readme_arguments(parser)
    args = parser.parse_args(argv)
    if args.calls < 1 or args.twin_calls < 1 or args.kills < 0:
        parser.error("--calls and --twin-calls must be 1 or more, --kills 0 or more")
    if args.kill_rounds < 2 * (args.kills + 1):
        parser.error(f"--kill-rounds must be {2 * (args.kills + 1)} or more for {args.kills} kills")
    try:
        args.recordings = require_recordings(args.recordings, option="--recordings")
    except RecordingsNotFound as error:
        parser.error(str(error))
    return args


def _server(args: argparse.Namespace) -> contextlib.AbstractContextManager[Server]:
    # The killed requests may offload more than REDUCTION_MAX_OFFLOADS lets through by
    # default, as an operator may allow.
    env = {"REDUCTION_MAX_OFFLOADS": str(max(args.kill_rounds, 1_000))}
    return temporary_server("soak-", workers=args.workers, database_url=args.database_url, env=env)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    name = README_BLOCKS[1] if args.database_url else README_BLOCKS[0]
    readme = readme_path(args, name)
    packages = (*PACKAGES, "psycopg") if args.database_url else PACKAGES
    stamp = Stamp.take("benchmarks.soak", argv, packages)
    ranked, unread = ranked_sessions(args.recordings)
    if not ranked:
        raise SystemExit(f"no session the simulator reads in {args.recordings}")
    sessions = selected(ranked, args.calls)
    replayed = sum(len(s.calls) for s in sessions)
    if len(sessions) > 1:
        print(
            f"the longest session has {len(sessions[0].calls)} model calls, fewer than "
            f"{args.calls}: replaying {len(sessions)} sessions one after another, each its "
            f"own conversation, {replayed} calls in all",
            file=sys.stderr,
        )
    offloaded: dict[tuple[str, str], Any] = {}
    with _server(args) as server:
        print(f"server on {server.url}", file=sys.stderr)
        ids = [FIRST, *(f"soak-{n:03d}" for n in range(1, len(sessions)))]
        calls = replay(server, sessions, ids, offloaded)
        events, files = row_counts(server)
        print(f"replaying {args.twin_calls} calls again as {TWIN}...", file=sys.stderr)
        twin = replay(server, sessions[:1], [TWIN], offloaded, limit=args.twin_calls)
        first_paths = {path for (owner, path) in offloaded if owner == FIRST}
        twin_paths = {path for (owner, path) in offloaded if owner == TWIN}
        deleted = delete_conversation(server, FIRST)
        for key in [key for key in offloaded if key[0] == FIRST]:
            del offloaded[key]
        kills = []
        for number in range(args.kills):
            print(f"kill {number + 1} of {args.kills}...", file=sys.stderr)
            kills.append(kill_once(server, number, args.kills, args.kill_rounds, offloaded))
        back = read_back(server, offloaded)
        end = reclaim_and_check(server)
    report = {
        "database": "PostgreSQL" if args.database_url else "SQLite",
        "workers": args.workers,
        "calls_wanted": args.calls,
        "unread_files": unread,
        "sessions": [
            {"label": s.label, "fmt": s.fmt, "calls": len(s.calls), "messages": len(s.messages)}
            for s in sessions
        ],
        "config": CONFIG,
        "figures": figures(calls),
        "rows": {"events": events, "files": files},
        "shared": {
            "twin_calls": len(twin),
            "twin_paths": len(twin_paths),
            "shared_paths": len(twin_paths & first_paths),
            "delete_status": deleted,
        },
        "read_back": back,
        "kill_rounds": args.kill_rounds,
        "kills": kills,
        "end": end,
        "load_after": load_average(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print_report(report)
    print(f"\nwrote {args.out}")
    if readme is not None:
        write_block(readme, name, stamp.block(markdown(report), report["load_after"]))
        print(f"wrote its block {name} of {readme}")
    failed = problems(report)
    if failed:
        print("FAILED: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
