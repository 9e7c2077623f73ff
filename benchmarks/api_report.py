"""The tables :mod:`benchmarks.api_load` prints, from the report it writes as JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.common import table

__all__ = ["print_report"]


def _load(values: Sequence[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def print_report(report: dict[str, Any]) -> None:
    c, s = report["conversation"], report["server"]
    print(
        f"\nConversation: {c['messages']} messages ({c['tool_results']} tool results), "
        f"{c['cl100k_tokens']:,} cl100k tokens ({c['approx_tokens']:,} by the API's default "
        f"approx counter), {c['body_bytes']:,} bytes of JSON per request.\n"
        f"Server: gunicorn {s['gunicorn']}, {s['workers']} sync workers, DEBUG off, "
        f"{s.get('database', 'SQLite')}; "
        f"{report['machine']['cpus']} CPUs, Python {report['machine']['python']}; "
        f"conversation_id {'left out' if not report['conversation_id'] else 'one per client'}.\n"
        f"Load average (1, 5, 15 min): {_load(report['load_before'])} before, "
        f"{_load(report['load_after'])} after.\n"
    )
    f = report["figures"]
    print("One request at a time (ms; in-process and test client: median):")
    rows = []
    for name, v in f.items():
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
    print(
        table(
            [
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
            ],
            rows,
        )
    )
    floors = {name: v["floor"] for name, v in f.items() if v.get("floor")}
    if floors:
        print(
            "\nThe Django floor: the in-process work as a Django view with no middleware, "
            "authentication, validation or database; body in: a view that reads the body and "
            "answers {}. One client, taken in turn with the API and in-process (ms):"
        )
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
        print(table([*headers, "floor / in-process", "API p50", "API / floor"], rows))
    clients = next(iter(f.values()))["loaded"]["clients"] if f else 0
    print(f"\n{clients} concurrent clients:")
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
        for name, v in f.items()
    ]
    headers = ["payload", "p50 ms", "p99 ms", "max ms", "requests/s", "requests", "errors", "s"]
    print(table([*headers, "load generator, cores"], rows))
    print(
        "\nin-process: formats.json_loads + parse + clear (InMemoryBackend) + dump + msgspec "
        "encoding of the answer, single-threaded.\ntest client: the same request through Django "
        "in this process (no HTTP). HTTP: through gunicorn over loopback, one client.\n"
        "overhead = HTTP p50 - in-process; target HTTP p50 / in-process <= 1.5x."
    )
