"""The one watcher: it fails the jobs of every kind whose worker stopped answering (no
heartbeat for a lease) or that no worker took (queued past their kind's queue timeout),
and looks again a lease later while any job is unfinished.

Each kind of job registers what the watcher looks at and says (:class:`JobKind`).
Lookers exclude each other by writing with a condition (:func:`_fail`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django_tasks import task
from django_tasks_db.models import DBTaskResult

from reduction_app.jobs.lease import lease_seconds, lost, queue_timeout, untaken
from reduction_app.models import UNFINISHED, Job, JobStatus

__all__ = [
    "JobKind",
    "give_up",
    "job_check",
    "jobs_watch",
    "kinds",
    "register",
    "span",
    "untaken_reason",
    "watch_enqueue",
    "watch_jobs",
]

logger = logging.getLogger(__name__)


def _nothing(_: list[int]) -> None:
    return None


def span(seconds: float) -> str:
    """``seconds`` as a person reads them: 6 h, 15 min, 90 s."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


def untaken_reason(then: str) -> str:
    """Why a job no worker took failed, and what to do: start the workers, ``then``
    (start it again, import the files again, ...)."""
    return (
        f"no worker took it in {span(queue_timeout())} (REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS): "
        f"start the task workers (manage.py db_worker), then {then}"
    )


def _start_it_again() -> str:
    return untaken_reason("start it again")


@dataclass(frozen=True)
class JobKind:
    """A kind of job, as the watcher treats it. A kind may take back its lost jobs itself
    instead of failing them (:attr:`recover`: sweep parts are queued again)."""

    name: str
    """What the log calls it: ``import``, ``simulation``, ..."""
    rows: Callable[[], QuerySet[Any]]
    """The jobs of this kind the watcher looks at."""
    lost_error: Callable[[], str] = str
    """Why a job whose worker stopped answering failed (unless :attr:`recover` takes it
    back)."""
    untaken_error: Callable[[], str] = _start_it_again
    """Why a job no worker took failed."""
    queue_timeout: Callable[[], float] = queue_timeout
    """Seconds a job may wait for a worker (by default the one queue timeout every kind
    shares); 0 waits however long."""
    recover: Callable[[QuerySet[Any]], int] | None = None
    """Takes back the lost jobs it is given itself (instead of failing them); how many."""
    ended: Callable[[list[int]], None] = _nothing
    """Called with the ids of the jobs the watcher failed (to drop what they held)."""


_kinds: dict[str, JobKind] = {}


def register(kind: JobKind) -> JobKind:
    """Have the watcher look at ``kind`` (declared beside the service that runs it)."""
    _kinds[kind.name] = kind
    return kind


def kinds() -> tuple[JobKind, ...]:
    """Every kind of job registered, in the order registered."""
    return tuple(_kinds.values())


def give_up(kind: JobKind, rows: QuerySet[Any] | None = None) -> int:
    """Take back the jobs of ``kind`` (of ``rows``, or all it watches) whose worker stopped
    answering, and fail those no worker took; how many."""
    rows = kind.rows() if rows is None else rows
    now = timezone.now()
    if kind.recover is not None:
        done = kind.recover(lost(rows, now))
    else:
        done = _fail(kind, lost(rows, now), kind.lost_error, now)
    return done + _fail(kind, untaken(rows, kind.queue_timeout(), now), kind.untaken_error, now)


def _fail(kind: JobKind, due: QuerySet[Any], why: Callable[[], str], now: Any) -> int:
    ids = list(due.values_list("pk", flat=True))
    if not ids:
        return 0
    error = why()
    # The update checks again: a job that started, beat or ended since it was read is
    # left alone.
    failed = due.filter(pk__in=ids).update(status=JobStatus.FAILED, error=error, finished_at=now)
    if failed:
        kind.ended(ids)
        logger.warning("%s %s: %s", kind.name, ", ".join(map(str, ids)), error)
    return int(failed)


def job_check(kind: JobKind, job: Job) -> Job:
    """``job`` as someone looks at it: given up first (and read again) when its worker
    stopped answering or no worker took it. Queries only when ``job``, as read, looks
    given up (a page polling a live job costs nothing more)."""
    if _looks_due(kind, job) and give_up(kind, kind.rows().filter(pk=job.pk)):
        job.refresh_from_db()
    return job


def _looks_due(kind: JobKind, job: Job) -> bool:
    now = timezone.now()
    if job.status == JobStatus.RUNNING:
        beat = job.heartbeat_at or job.started_at or job.created_at
        return beat < now - timedelta(seconds=lease_seconds())
    timeout = kind.queue_timeout()
    if job.status == JobStatus.QUEUED and timeout:
        return job.created_at < now - timedelta(seconds=timeout)
    return False


def jobs_watch() -> int:
    """Look at every kind of job (:func:`give_up`); while any job is unfinished, look again
    a lease later. How many are unfinished."""
    for kind in kinds():
        give_up(kind)
    unfinished = sum(kind.rows().filter(status__in=UNFINISHED).count() for kind in kinds())
    if unfinished:
        watch_enqueue()
    return unfinished


@task()
def watch_jobs() -> int:
    """Fail (or take back) the jobs of every kind whose worker stopped answering or that
    no worker took; again a lease later while any is unfinished."""
    return jobs_watch()


def watch_enqueue() -> bool:
    """Queue the watch task to run a lease from now, unless one is queued already;
    whether this queued one.

    Nobody has to ask: queueing a job, or a worker starting one, calls this, and a page
    or API answer that shows a job looks at it first (:func:`job_check`).
    """
    path = f"{watch_jobs.func.__module__}.{watch_jobs.func.__qualname__}"
    if DBTaskResult.objects.filter(task_path=path, status="READY").exists():
        return False
    later = timezone.now() + timedelta(seconds=lease_seconds())
    watch_jobs.using(run_after=later).enqueue()
    return True
