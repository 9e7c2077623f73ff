"""What a worker does while it holds a job: claim it, keep its lease with a heartbeat,
and end it once, unless the watcher took it back meanwhile.

The heartbeat runs on a daemon thread with a database connection of its own. A worker
presumed dead that was only slow does no harm: its heartbeat stops at the first beat that
finds the job no longer in the run it claimed, and :func:`job_end` ends only a job still
running. The lifecycle is in docs/deploying.md, "The task workers".
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.models import QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from reduction_app.models import UNFINISHED, Job, JobStatus

__all__ = [
    "BEATS_PER_LEASE",
    "beating",
    "claim_fields",
    "heartbeat",
    "job_end",
    "lease_seconds",
    "lost",
    "queue_timeout",
    "untaken",
    "worker_name",
]

logger = logging.getLogger(__name__)

BEATS_PER_LEASE = 6
"""Heartbeats a running job gets per lease: a worker is presumed dead after missing six
(a busy database may hold one up for a while)."""

_J = TypeVar("_J", bound=Job)


def lease_seconds() -> float:
    """How long a running job may go without a heartbeat before its worker is presumed
    dead (``REDUCTION_JOB_LEASE_SECONDS``, every kind of job alike)."""
    return float(settings.REDUCTION_JOB_LEASE_SECONDS)


def queue_timeout() -> float:
    """How long a job may wait in the queue before it is taken for one no worker will run
    (``REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS``, every kind that waits alike); 0 waits
    however long."""
    return float(settings.REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS)


def worker_name() -> str:
    """This worker as a job records it: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def claim_fields(job: Job, now: datetime) -> list[str]:
    """Mark ``job`` (locked by the caller) running in this worker, one run more; the
    fields to save."""
    job.status = JobStatus.RUNNING
    job.runs += 1
    job.worker = worker_name()
    job.started_at = job.heartbeat_at = now
    return ["status", "runs", "worker", "started_at", "heartbeat_at"]


def lost(rows: QuerySet[_J], now: datetime | None = None) -> QuerySet[_J]:
    """Those of ``rows`` running with no heartbeat for a lease. A job claimed before jobs
    had heartbeats has none: its start (or its creation) stands in."""
    cutoff = (now or timezone.now()) - timedelta(seconds=lease_seconds())
    running: QuerySet[_J] = rows.filter(status=JobStatus.RUNNING)
    beats: QuerySet[_J] = running.alias(beat=Coalesce("heartbeat_at", "started_at", "created_at"))
    return beats.filter(beat__lt=cutoff)


def untaken(rows: QuerySet[_J], timeout: float, now: datetime | None = None) -> QuerySet[_J]:
    """Those of ``rows`` still queued ``timeout`` seconds after they were made (none for
    a timeout of 0: they wait however long)."""
    if not timeout:
        return rows.none()
    cutoff = (now or timezone.now()) - timedelta(seconds=timeout)
    return rows.filter(status=JobStatus.QUEUED, created_at__lt=cutoff)


@contextmanager
def heartbeat(job: Job, *, name: str = "") -> Iterator[None]:
    """Keep the claimed job's lease while the block runs: a thread (called ``name``, by
    default after the job) refreshes its heartbeat for as long as the job is still running
    in the run this worker claimed."""
    rows = type(job)._default_manager.filter(pk=job.pk, status=JobStatus.RUNNING, runs=job.runs)
    name = name or f"{type(job)._meta.model_name}-{job.pk}-heartbeat"
    with beating(rows, name=name):
        yield


@contextmanager
def beating(rows: QuerySet[Any], *, name: str) -> Iterator[None]:
    """While the block runs, a daemon thread called ``name`` (with a database connection
    of its own) writes ``heartbeat_at`` on ``rows`` :data:`BEATS_PER_LEASE` times a
    lease, until a beat finds none of them left to write."""
    stop = threading.Event()
    thread = threading.Thread(target=_beat, args=(rows, stop), name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _beat(rows: QuerySet[Any], stop: threading.Event) -> None:
    every = lease_seconds() / BEATS_PER_LEASE
    try:
        while not stop.wait(every):
            try:
                mine = rows.update(heartbeat_at=timezone.now())
            except DatabaseError:
                # One beat missed (the database busy or away); the next may get through.
                logger.warning("%s: a beat failed", threading.current_thread().name, exc_info=True)
                continue
            if not mine:
                return  # taken back from this worker, finished, or failed
    finally:
        connections.close_all()  # this thread's own connection


def job_end(job: Job, *, status: JobStatus, **fields: Any) -> bool:
    """End ``job`` (``done`` or ``failed``, with ``fields``) unless it ended already: the
    watcher failed it, or another run of it ended first. Whether this call ended it."""
    rows = type(job)._default_manager.filter(pk=job.pk, status__in=UNFINISHED)
    ended = rows.update(status=status, finished_at=timezone.now(), **fields)
    if not ended:
        logger.warning("%s ended after it was given up; its outcome is dropped", job)
    return bool(ended)
