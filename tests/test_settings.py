"""config/settings.py: the offload storage, the job lease and queue timeout and the
recordings folder chosen from the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings import MEDIA_ROOT, _env_int, _job_lease, _offload_storage

ROOT = Path(__file__).resolve().parent.parent
LOCAL = {
    "BACKEND": "reduction_app.records.folder.OffloadFolderStorage",
    "OPTIONS": {"location": MEDIA_ROOT / "offload"},
}


@pytest.mark.parametrize("environ", [{}, {"OFFLOAD_STORAGE": ""}, {"OFFLOAD_STORAGE": "Local"}])
def test_offload_storage_is_the_local_folder_by_default(environ: dict[str, str]) -> None:
    assert _offload_storage(environ) == LOCAL


def test_offload_storage_s3_takes_the_django_storages_variables() -> None:
    environ = {
        "OFFLOAD_STORAGE": "s3",
        "AWS_STORAGE_BUCKET_NAME": "agent-offloads",
        "AWS_S3_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_S3_REGION_NAME": "eu-west-1",
        "AWS_S3_ADDRESSING_STYLE": "path",
        "AWS_LOCATION": "/lab/offload/",
        "AWS_ACCESS_KEY_ID": "left to boto3",
    }
    assert _offload_storage(environ) == {
        "BACKEND": "reduction_app.records.s3.OffloadS3Storage",
        "OPTIONS": {
            "bucket_name": "agent-offloads",
            "location": "lab/offload",
            "max_memory_size": 1024 * 1024,
            "endpoint_url": "http://127.0.0.1:9000",
            "region_name": "eu-west-1",
            "addressing_style": "path",
        },
    }


def test_offload_storage_s3_on_aws_needs_only_a_bucket() -> None:
    assert _offload_storage({"OFFLOAD_STORAGE": "s3", "AWS_STORAGE_BUCKET_NAME": "b1"}) == {
        "BACKEND": "reduction_app.records.s3.OffloadS3Storage",
        "OPTIONS": {"bucket_name": "b1", "location": "offload", "max_memory_size": 1024 * 1024},
    }


@pytest.mark.parametrize("bucket", [None, "", "  "])
def test_offload_storage_s3_without_a_bucket_is_refused(bucket: str | None) -> None:
    environ = {"OFFLOAD_STORAGE": "s3"}
    if bucket is not None:
        environ["AWS_STORAGE_BUCKET_NAME"] = bucket
    with pytest.raises(ImproperlyConfigured) as caught:
        _offload_storage(environ)
    assert str(caught.value) == (
        "OFFLOAD_STORAGE=s3 needs AWS_STORAGE_BUCKET_NAME, the bucket offloaded files go to"
    )


def test_offload_storage_unknown_kind_is_refused() -> None:
    with pytest.raises(ImproperlyConfigured) as caught:
        _offload_storage({"OFFLOAD_STORAGE": "gcs"})
    assert str(caught.value) == "OFFLOAD_STORAGE must be 'local' or 's3', not 'gcs'"


def test_offload_storage_s3_without_a_bucket_stops_the_server_starting() -> None:
    """The error comes when the settings load, before any request, naming the variable."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "TEST_DATABASE_URL", "AWS_STORAGE_BUCKET_NAME"}
    }
    environ["OFFLOAD_STORAGE"] = "s3"
    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert done.stderr.rstrip().splitlines()[-1] == (
        "django.core.exceptions.ImproperlyConfigured: OFFLOAD_STORAGE=s3 needs "
        "AWS_STORAGE_BUCKET_NAME, the bucket offloaded files go to"
    )


def test_sweep_lease_is_a_minute_and_three_runs_by_default() -> None:
    assert _job_lease({}) == (60.0, 3)
    environ = {"REDUCTION_SWEEP_LEASE_SECONDS": "2.5", "REDUCTION_SWEEP_MAX_RUNS": "1"}
    assert _job_lease(environ) == (2.5, 1)


def test_job_lease_is_read_under_its_name_before_its_former_name() -> None:
    assert _job_lease({"REDUCTION_JOB_LEASE_SECONDS": "7"}) == (7.0, 3)
    both = {"REDUCTION_JOB_LEASE_SECONDS": "7", "REDUCTION_SWEEP_LEASE_SECONDS": "2.5"}
    assert _job_lease(both) == (7.0, 3)
    with pytest.raises(ImproperlyConfigured) as caught:
        _job_lease({"REDUCTION_JOB_LEASE_SECONDS": "0", "REDUCTION_SWEEP_LEASE_SECONDS": "2"})
    assert str(caught.value) == (
        "REDUCTION_JOB_LEASE_SECONDS must be a number of seconds above 0, not '0'"
    )


def test_job_queue_timeout_is_read_under_its_name_before_its_former_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, former = (
        "REDUCTION_JOB_QUEUE_TIMEOUT_SECONDS",
        "REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS",
    )
    monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(former, raising=False)
    assert _env_int(name, 21600, former=former) == 21600
    monkeypatch.setenv(former, "600")
    assert _env_int(name, 21600, former=former) == 600
    monkeypatch.setenv(name, "90")
    assert _env_int(name, 21600, former=former) == 90
    monkeypatch.delenv(name)
    monkeypatch.setenv(former, "soon")
    with pytest.raises(ImproperlyConfigured) as caught:
        _env_int(name, 21600, former=former)
    assert str(caught.value) == (
        "REDUCTION_SIMULATION_QUEUE_TIMEOUT_SECONDS must be a whole number from 0, not 'soon'"
    )


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"REDUCTION_SWEEP_LEASE_SECONDS": "0"},
            "REDUCTION_SWEEP_LEASE_SECONDS must be a number of seconds above 0, not '0'",
        ),
        (
            {"REDUCTION_SWEEP_LEASE_SECONDS": "a minute"},
            "REDUCTION_SWEEP_LEASE_SECONDS must be a number of seconds above 0, not 'a minute'",
        ),
        (
            {"REDUCTION_SWEEP_LEASE_SECONDS": "inf"},
            "REDUCTION_SWEEP_LEASE_SECONDS must be a number of seconds above 0, not 'inf'",
        ),
        (
            {"REDUCTION_SWEEP_MAX_RUNS": "0"},
            "REDUCTION_SWEEP_MAX_RUNS must be a whole number from 1, not '0'",
        ),
        (
            {"REDUCTION_SWEEP_MAX_RUNS": "2.5"},
            "REDUCTION_SWEEP_MAX_RUNS must be a whole number from 1, not '2.5'",
        ),
    ],
)
def test_sweep_lease_refuses_what_cannot_be_a_lease(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ImproperlyConfigured) as caught:
        _job_lease(environ)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, ROOT.parent / "shared" / "data" / "conversations"), ("/srv/runs", Path("/srv/runs"))],
    ids=["unset", "set"],
)
def test_recordings_dir_from_the_environment(value: str | None, expected: Path) -> None:
    """REDUCTION_RECORDINGS_DIR, else shared/data/conversations beside the checkout."""
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "TEST_DATABASE_URL", "REDUCTION_RECORDINGS_DIR"}
    }
    if value is not None:
        environ["REDUCTION_RECORDINGS_DIR"] = value
    done = subprocess.run(
        [sys.executable, "-c", "import config.settings as s; print(s.REDUCTION_RECORDINGS_DIR)"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (0, f"{expected}\n"), done.stderr
