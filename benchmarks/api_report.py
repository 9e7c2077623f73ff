"""The tables :mod:`benchmarks.api_load` prints, from the report it writes as JSON, and
the same tables as markdown for its block of benchmarks/README.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.common import table
from benchmarks.report import md_table, verdict

__all__ = ["GOAL", "markdown", "print_report"]

GOAL = 1.5
"""The API's 1-client p50 over the same work in-process, at most."""

Table = tuple[list[str], list[list[Any]]]


def _load(values: Sequence[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def _summary(report: dict[str, Any]) -> str:
    c, s = report["conversation"], report["server"]
    return (
        f"Conversation: {c['messages']} messages ({c['tool_results']} tool results), "
        f"{c['cl100k_tokens']:,} cl100k tokens ({c['approx_tokens']:,} by the API's default "
        f"approx counter), {c['body_bytes']:,} bytes of JSON per request.\n"
        f"Server: gunicorn {s['gunicorn']}, {s['workers']} sync workers, DEBUG off, "
        f"{s.get('database', 'SQLite')}; "
        f"{report['machine']['cpus']} CPUs, Python {report['machine']['python']}; "
        f"conversation_id {'left out' if not report['conversation_id'] else 'one per client'}."
    )


def _one_at_a_time(report: dict[str, Any]) -> Table:
    rows = []
    for name, v in report["figures"].items():
        a, one = v["answer"], v["one_client"]
        rows.append(
            [
                name,
                "yes" if a["applied"] else "no",
                a["events"],
                f"{v['in_process_ms']:.1f}",
                f"{v['test_client_ms']:.1f}",
                f"{one['p50_ms']:.1f}",
                f"{one['p99_ms']:.1f}",
                one["requests"],
                f"{v['overhead_ms']:.1f}",
                f"{v['overhead_ratio']:.2f}x",
            ]
        )
    headers = [
        "payload",
        "cleared",
        "events",
        "in-process",
        "test client",
        "HTTP p50",
        "HTTP p99",
        "requests",
        "overhead ms",
        "HTTP p50 / in-process",
    ]
    return headers, rows


FLOOR_TITLE = (
    "The Django floor: the in-process work as a Django view with no middleware, "
    "authentication, validation or database; body in: a view that reads the body and "
    "answers {}. One client, taken in turn with the API and in-process (ms):"
)


def _floor(report: dict[str, Any]) -> Table:
    f = report["figures"]
    floors = {name: v["floor"] for name, v in f.items() if v.get("floor")}
    rows = [
        [
            name,
            f"{f[name]['in_process_ms']:.1f}",
            f"{floor['body_in_p50_ms']:.1f}",
            f"{floor['p50_ms']:.1f}",
            f"{floor['p99_ms']:.1f}",
            floor["requests"],
            f"{floor['ratio']:.2f}x",
            f"{f[name]['one_client']['p50_ms']:.1f}",
            f"{floor['api_over_floor']:.2f}x",
        ]
        for name, floor in floors.items()
    ]
    headers = ["payload", "in-process", "body in p50", "floor p50", "floor p99", "requests"]
    return [*headers, "floor / in-process", "API p50", "API / floor"], rows


def _clients(report: dict[str, Any]) -> int:
    f = report["figures"]
    return int(next(iter(f.values()))["loaded"]["clients"]) if f else 0


def _loaded(report: dict[str, Any]) -> Table:
    rows = [
        [
            name,
            f"{v['loaded']['p50_ms']:.1f}",
            f"{v['loaded']['p99_ms']:.1f}",
            f"{v['loaded']['max_ms']:.1f}",
            f"{v['loaded']['throughput_rps']:.1f}",
            v["loaded"]["requests"],
            v["loaded"]["errors"],
            f"{v['loaded']['seconds']:.1f}",
            f"{v['loaded']['load_generator_cpu_share']:.2f}",
        ]
        for name, v in report["figures"].items()
    ]
    headers = ["payload", "p50 ms", "p99 ms", "max ms", "requests/s", "requests", "errors", "s"]
    return [*headers, "load generator, cores"], rows


def print_report(report: dict[str, Any]) -> None:
    print(
        f"\n{_summary(report)}\nLoad average (1, 5, 15 min): {_load(report['load_before'])} "
        f"before, {_load(report['load_after'])} after.\n"
    )
    print("One request at a time (ms; in-process and test client: median):")
    print(table(*_one_at_a_time(report)))
    headers, rows = _floor(report)
    if rows:
        print(f"\n{FLOOR_TITLE}")
        print(table(headers, rows))
    print(f"\n{_clients(report)} concurrent clients:")
    print(table(*_loaded(report)))
    print(
        "\nin-process: formats.json_loads + parse + clear (InMemoryBackend) + dump + msgspec "
        "encoding of the answer, single-threaded.\ntest client: the same request through Django "
        "in this process (no HTTP). HTTP: through gunicorn over loopback, one client.\n"
        f"overhead = HTTP p50 - in-process; goal HTTP p50 / in-process <= {GOAL:g}x."
    )


def _ratios(values: Sequence[float]) -> str:
    low, high = f"{min(values):.2f}x", f"{max(values):.2f}x"
    return low if low == high else f"{low} to {high}"


def goals(report: dict[str, Any]) -> list[str]:
    """The ratio against its goal, and what the floor says about it."""
    f = report["figures"].values()
    if not f:
        return []
    ratios = [v["overhead_ratio"] for v in f]
    lines = [
        f"API p50 / in-process: **{_ratios(ratios)}** "
        f"(goal ≤ {GOAL:g}x: {verdict(ratios, GOAL, 'payloads')}).",
    ]
    floors = [v["floor"] for v in f if v.get("floor")]
    if floors:
        lines.append(
            f"The floor / in-process, the least any API on this stack could reach: "
            f"**{_ratios([x['ratio'] for x in floors])}**; the API / the floor: "
            f"{_ratios([x['api_over_floor'] for x in floors])}."
        )
    errors = sum(v["loaded"]["errors"] + v["one_client"]["errors"] for v in f)
    lines.append(f"Errors (any status but 200): {errors}.")
    return lines


def markdown(report: dict[str, Any]) -> list[str]:
    """The figures as the README shows them: the three tables, then the goal."""
    sections = [
        _summary(report).replace("\n", " "),
        "One request at a time (ms; in-process and test client: median):",
        md_table(*_one_at_a_time(report)),
    ]
    headers, rows = _floor(report)
    if rows:
        sections += [FLOOR_TITLE, md_table(headers, rows)]
    sections += [
        f"{_clients(report)} concurrent clients:",
        md_table(*_loaded(report)),
        "\n".join(f"- {line}" for line in goals(report)),
    ]
    return sections
