"""``manage.py sweep_recover [--simulation ID]``: take back the sweep parts whose worker
stopped answering (the workers and the sweep pages do it too; this is for cron or a
person)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from reduction_app.simulations.sweeps import sweep_parts_recover


class Command(BaseCommand):
    help = (
        "Queue again the sweep parts whose worker stopped answering for longer than "
        "REDUCTION_JOB_LEASE_SECONDS, or fail them after REDUCTION_SWEEP_MAX_RUNS runs."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--simulation", type=int, help="Only this sweep's parts (its id).")

    def handle(self, *args: Any, **options: Any) -> None:
        recovered = sweep_parts_recover(simulation_id=options["simulation"])
        for part in recovered.requeued:
            worker = part.requeued_after[-1]
            self.stdout.write(f"Queued again after worker {worker} stopped answering: {part}")
        for part in recovered.failed:
            where = f"part {part.position} of simulation {part.simulation_id}"
            self.stdout.write(f"Failed {where}: {part.error}")
        if not (recovered.requeued or recovered.failed):
            self.stdout.write("No part's worker has stopped answering.")
