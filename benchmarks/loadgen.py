"""A small HTTP load generator: ``clients`` threads, each posting one request after
another for a bounded time, over loopback with the standard library only.

Each request opens its own connection (gunicorn's sync workers close every connection
after answering) and is timed from before the connection is opened until the whole
answer has been read. Answers are not parsed here; a request counts as an error when the
status is not 200 or the connection fails.
"""

from __future__ import annotations

import http.client
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["LoadResult", "in_turn", "percentile", "post_once", "run_for", "run_load"]

REQUEST_TIMEOUT = 120.0
"""Seconds one request may take before it counts as an error."""


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (``p`` in 0..100) of ``values``."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class LoadResult:
    clients: int
    seconds: float
    """From the first request's start to the last answer's end."""
    latencies: list[float] = field(default_factory=list)
    """Seconds, of the requests answered with 200."""
    errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    """How many answers had each status (0: the connection failed)."""
    client_cpu_seconds: float = 0.0
    """CPU time this process (the load generator) used meanwhile: on a small machine it
    competes with the server for the same cores."""

    @property
    def requests(self) -> int:
        return len(self.latencies)

    @property
    def throughput(self) -> float:
        """Answered requests per second."""
        return self.requests / self.seconds if self.seconds else 0.0

    def p(self, q: float) -> float:
        return percentile(self.latencies, q)

    def add(self, other: LoadResult) -> None:
        """Count ``other``'s requests and time as this run's too."""
        self.seconds += other.seconds
        self.latencies += other.latencies
        self.errors += other.errors
        for status, count in other.statuses.items():
            self.statuses[status] = self.statuses.get(status, 0) + count
        self.client_cpu_seconds += other.client_cpu_seconds


def post_once(
    host: str, port: int, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, float, bytes]:
    """Status, seconds and body of one POST on a new connection (status 0: it failed)."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection(host, port, timeout=REQUEST_TIMEOUT)
    try:
        connection.request("POST", path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        status = response.status
    except OSError:
        status, data = 0, b""
    finally:
        connection.close()
    return status, time.perf_counter() - start, data


def run_load(
    host: str,
    port: int,
    path: str,
    *,
    clients: int,
    seconds: float,
    request_for: Callable[[int], tuple[bytes, dict[str, str]]],
) -> LoadResult:
    """``clients`` threads post to ``path`` until ``seconds`` have passed; a request
    started before then is waited for. ``request_for(client)`` gives a client's body and
    headers (built before the clock starts)."""
    requests = [request_for(client) for client in range(clients)]
    lock = threading.Lock()
    result = LoadResult(clients, 0.0)
    cpu_start = time.process_time()
    start = time.perf_counter()
    deadline = start + seconds

    def client(index: int) -> None:
        body, headers = requests[index]
        while time.perf_counter() < deadline:
            status, elapsed, _ = post_once(host, port, path, body, headers)
            with lock:
                result.statuses[status] = result.statuses.get(status, 0) + 1
                if status == 200:
                    result.latencies.append(elapsed)
                else:
                    result.errors += 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        # Bounded: a request that never ends times out after REQUEST_TIMEOUT.
        thread.join(seconds + REQUEST_TIMEOUT + 5)
    result.seconds = time.perf_counter() - start
    result.client_cpu_seconds = time.process_time() - cpu_start
    return result


def run_for(seconds: float, call: Callable[[], float]) -> LoadResult:
    """``call`` (which returns the seconds it measured) again and again for ``seconds``,
    in this thread: an in-process contender timed as a one-client load."""
    result = LoadResult(1, 0.0)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        result.latencies.append(call())
    result.seconds = time.perf_counter() - start
    return result


def in_turn(
    contenders: dict[str, Callable[[float], LoadResult]], seconds: float, slice_seconds: float
) -> dict[str, LoadResult]:
    """Each contender run for ``slice_seconds`` in turn, round after round, until each has
    had about ``seconds``: the load on a shared machine drifts, and contenders taken in
    turn meet the same drift, so their ratios hold where their milliseconds do not."""
    results = {name: LoadResult(1, 0.0) for name in contenders}
    for _ in range(max(1, round(seconds / slice_seconds))):
        for name, run in contenders.items():
            results[name].add(run(slice_seconds))
    return results
