"""``manage.py replay CONVERSATION_ID --config a.json [--config b.json | --grid g.json]``:
run a simulation of a recorded conversation from a shell and store it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from reduction_app.conversations.selectors import conversation_get
from reduction_app.models import JobStatus, Workspace
from reduction_app.simulations.selectors import simulation_results
from reduction_app.simulations.services import (
    SimulationInputError,
    simulation_create,
    simulation_run,
)
from simulator.pricing import DEFAULT_PRICING_NAME
from simulator.stored import ComparisonResults

COLUMNS = (
    ("model_calls", "calls"),
    ("input_tokens_billed", "billed tok"),
    ("cached_tokens", "cached tok"),
    ("cost_usd", "cost $"),
    ("peak_context_tokens", "peak tok"),
    ("truncations", "trunc"),
    ("clears", "clears"),
    ("chars_offloaded", "offloaded ch"),
    ("refetches", "refetch"),
    ("repeated_calls", "repeat"),
)


def _read(path: str, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"{path}: cannot read {what}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise CommandError(f"{path}: {what} is not JSON: {exc.msg} at line {exc.lineno}") from exc


class Command(BaseCommand):
    help = "Replay a recorded conversation under configs (or sweep a grid) and store the result."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("conversation_id")
        parser.add_argument("--workspace", default="default")
        parser.add_argument("--config", action="append", default=[], metavar="FILE")
        parser.add_argument("--grid", metavar="FILE")
        parser.add_argument("--baseline", choices=["first", "none"], default="first")
        parser.add_argument(
            "--pricing",
            default=DEFAULT_PRICING_NAME,
            help="a price preset or one of the workspace's prices",
        )
        parser.add_argument("--json", action="store_true", help="print the stored results as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        workspace = Workspace.objects.filter(slug=options["workspace"]).first()
        if workspace is None:
            raise CommandError(f"workspace {options['workspace']!r} not found")
        conversation = conversation_get(workspace=workspace, client_id=options["conversation_id"])
        if conversation is None:
            raise CommandError(f"conversation {options['conversation_id']!r} not found")
        configs = [
            {"name": Path(p).stem, "config": _read(p, "config")} for p in options["config"]
        ] or [{"name": "no reduction"}, {"name": "defaults", "config": {}}]
        grid = _read(options["grid"], "grid") if options["grid"] else None
        try:
            simulation = simulation_create(
                workspace=workspace,
                conversation=conversation,
                configs=configs,
                grid=grid,
                baseline=options["baseline"],
                pricing=options["pricing"],
            )
        except SimulationInputError as exc:
            raise CommandError(str(exc)) from exc
        simulation = simulation_run(simulation_id=simulation.pk)
        if simulation.status != JobStatus.DONE:
            raise CommandError(f"simulation {simulation.pk} failed: {simulation.error}")
        if options["json"]:
            self.stdout.write(json.dumps(simulation.results, ensure_ascii=False))
            return
        results = simulation_results(simulation)
        assert isinstance(results, ComparisonResults)
        # Under --baseline none the baseline is none of the results: its own row first.
        rows = [*filter(None, [results.baseline_result]), *results.results]
        header = ["config", *(label for _, label in COLUMNS)]
        table = [
            [r.name, *(f"{r.totals.figures().get(key, 0):,}" for key, _ in COLUMNS)] for r in rows
        ]
        widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
        self.stdout.write(
            "  ".join(
                h.rjust(w) if i else h.ljust(w)
                for i, (h, w) in enumerate(zip(header, widths, strict=True))
            )
        )
        for row in table:
            self.stdout.write(
                "  ".join(
                    c.rjust(w) if i else c.ljust(w)
                    for i, (c, w) in enumerate(zip(row, widths, strict=True))
                )
            )
        self.stdout.write(f"Stored as simulation {simulation.pk}.")
