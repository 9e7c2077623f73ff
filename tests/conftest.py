"""Shared test fixtures, the recordings folder, the marks that sort the suite, and the
Hypothesis profiles.

The recorded agent runs are not in the repository (:mod:`simulator.recordings_folder`
says where they are). A test that reads them carries :data:`needs_recordings`, or calls
:func:`skip_without_recordings` from a shared helper: without the folder it is skipped,
with a reason naming the folder. Under CI (``CI=true``) a missing folder fails the run
before any test.

Nobody marks a test ``db`` or ``browser`` by hand: :func:`uses_database` decides from the
test's marks and fixtures, and ``--db-only`` keeps those alone (the PostgreSQL pass of
``make test``); ``make check`` leaves them out with the ``slow`` ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

from simulator.recordings_folder import RecordingsNotFound, recordings_dir
from tests.migrated_databases import migrated_postgres, migrated_sqlite
from tests.offload_stores import S3Server, running_s3_server

REPO = Path(__file__).resolve().parent.parent
CONVERSATIONS = recordings_dir()
"""The real recorded agent conversations (tau-bench, τ²-bench, OpenHands, SWE-agent,
mini-swe-agent, Claude Code), kept outside the repository; the folder may be missing."""
HAVE_RECORDINGS = CONVERSATIONS.is_dir()
WITHOUT_RECORDINGS = f"needs the recordings: {RecordingsNotFound(CONVERSATIONS)}"
"""The reason a test that reads them is skipped."""
needs_recordings = pytest.mark.skipif(not HAVE_RECORDINGS, reason=WITHOUT_RECORDINGS)
"""Skips a test (or, as ``pytestmark``, a module) when the recordings are missing."""


def skip_without_recordings() -> None:
    """Skip the calling test when the recordings are missing: for helpers shared by many
    tests, which are not all marked."""
    if not HAVE_RECORDINGS:
        pytest.skip(WITHOUT_RECORDINGS)


def temporary_offload_storage(settings: Any, tmp_path: Path) -> Path:
    """Point the ``offload`` storage at a fresh folder under ``tmp_path``; return it."""
    folder = tmp_path / "offload"
    settings.STORAGES = {
        **settings.STORAGES,
        "offload": {
            "BACKEND": "reduction_app.records.folder.OffloadFolderStorage",
            "OPTIONS": {"location": folder},
        },
    }
    return folder


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A real S3-protocol server (moto's) on loopback with an empty test bucket, started
    the first time a test asks for it and stopped at the end of the run."""
    with running_s3_server(tmp_path_factory.mktemp("aws")) as server:
        yield server


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite database migrated the first time a test asks for it, for the servers and
    workers tests start to copy (:func:`tests.migrated_databases.copy_sqlite`)."""
    return migrated_sqlite(tmp_path_factory.mktemp("sqlite-template"))


@pytest.fixture(scope="session")
def postgres_template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The name of a database on TEST_DATABASE_URL's server, migrated the first time a
    test asks for it and dropped at the end of the run: ``fresh_postgres(url,
    template=...)`` copies it."""
    with migrated_postgres(
        os.environ["TEST_DATABASE_URL"], tmp_path_factory.mktemp("postgres-template")
    ) as name:
        yield name


# Hypothesis examples per property: a few locally, where `make check` should be quick,
# and Hypothesis' own default of 100 under CI; HYPOTHESIS_PROFILE picks one by name.
hypothesis_settings.register_profile("quick", max_examples=20)
hypothesis_settings.register_profile("thorough", max_examples=100, print_blob=True)


def hypothesis_profile(environ: Mapping[str, str]) -> str:
    """The Hypothesis profile for an environment: HYPOTHESIS_PROFILE, else ``thorough``
    under CI and ``quick`` elsewhere."""
    return environ.get("HYPOTHESIS_PROFILE") or (
        "thorough" if environ.get("CI") in {"true", "1"} else "quick"
    )


HYPOTHESIS_PROFILE = hypothesis_profile(os.environ)
hypothesis_settings.load_profile(HYPOTHESIS_PROFILE)


def max_examples(thorough: int) -> int:
    """Examples for a property that needs more or fewer than the profile's: ``thorough``
    under the thorough profile, scaled as the loaded profile scales Hypothesis' 100."""
    return max(1, thorough * hypothesis_settings.default.max_examples // 100)


SLOW = frozenset(
    {
        # Whole recordings replayed, swept or priced, or a page checked against a command
        # that does so.
        "tests/engine/test_clear_pairing.py::test_recordings_reduce_to_paired_conversations",
        "tests/simulator/test_branches.py::test_replay_many_equals_each_replay_on_the_corpus",
        "tests/simulator/test_branches.py::test_replay_many_equals_each_replay_on_real_recordings",
        "tests/simulator/test_branches.py::test_replay_many_truncates_once_per_truncation_key",
        "tests/simulator/test_calibration.py::test_simulator_page_shows_what_calibrate_prints",
        "tests/simulator/test_ceiling.py::test_ceiling_costs_less_than_real_configs_on_mini_swe_agent_runs",
        "tests/simulator/test_cli.py::test_main_calibrate_reads_the_recordings_option",
        "tests/simulator/test_compare.py::test_sweep_fast_path_equals_the_plain_loop",
        "tests/simulator/test_corpus_sweep.py::test_corpus_sweep_across_runs_in_a_pool_gives_the_same_results",
        "tests/simulator/test_corpus_sweep.py::test_corpus_sweep_billed_more_counts_runs_costing_more_than_no_reduction",
        "tests/simulator/test_corpus_sweep.py::test_corpus_sweep_totals_equal_one_replay_per_run_and_combination",
        "tests/simulator/test_corpus_sweep.py::test_main_sweep_of_files_and_folders_prints_the_corpus",
        "tests/simulator/test_inspect.py::test_inspect_log_reads_each_epoch_as_a_conversation",
        "tests/simulator/test_misses.py::test_misses_agree_with_an_independent_count_on_mini_swe_agent_runs",
        "tests/simulator/test_prefix.py::test_shipped_claude_code_logs_prefix_and_calibration",
        "tests/simulator/test_otel_instrumentations.py::test_a_long_run_over_the_attribute_limit_names_the_setting",
        "tests/simulator/test_otel_instrumentations.py::test_a_long_run_with_the_limit_raised_imports_exactly",
        "tests/simulator/test_otel_instrumentations.py::test_a_side_call_in_the_trace_is_a_side_conversation",
        "tests/simulator/test_otel_instrumentations.py::test_instrumented_loop_imports_exactly_what_was_sent",
        "tests/simulator/test_recommend.py::test_recommend_on_three_mini_swe_agent_runs_agrees_with_replay",
        "tests/simulator/test_recommend.py::test_simulator_page_shows_the_strategies_table_as_printed",
        "tests/simulator/test_recovery.py::test_recovery_on_the_shipped_recordings_prices_a_miss",
        "tests/simulator/test_recovery.py::test_simulator_page_shows_the_recovery_table_as_printed",
        "tests/simulator/test_replay.py::test_replay_lower_clear_threshold_never_sends_more",
        "tests/simulator/test_sources.py::test_every_shipped_claude_code_log_has_one_model_call_per_response",
        "tests/simulator/test_strategies.py::test_cli_calibrate_prints_both_tables_and_json",
        # A fresh Python process each, or a server.
        "tests/engine/test_tokens.py::test_fresh_process_counts_offline",
        "tests/integrations/test_langchain.py::test_langchain_agent_example_prints_what_it_reduced",
        "tests/integrations/test_openai_agents.py::test_example_runs_offline",
        "tests/integrations/test_pydantic_ai.py::test_example_runs",
        "tests/integrations/test_without_django.py::test_adapter_imports_without_django",
        "tests/simulator/test_cli.py::test_python_m_simulator_closed_pipe_is_quiet",
        "tests/test_conftest.py::test_conftest_skips_tests_that_need_the_missing_recordings",
        "tests/test_conftest.py::test_conftest_under_ci_fails_the_run_without_the_recordings",
        # The module's gunicorn.
        "tests/test_gunicorn_worker.py::test_header_longer_than_the_limit_is_431_json",
        "tests/test_gunicorn_worker.py::test_too_many_headers_is_431_json",
        "tests/test_gunicorn_worker.py::test_request_line_longer_than_the_limit_is_414_json",
        "tests/test_gunicorn_worker.py::test_malformed_request_line_is_400_json",
        "tests/test_gunicorn_worker.py::test_malformed_header_is_400_json_that_does_not_echo_it",
        "tests/test_gunicorn_worker.py::test_request_the_app_answers_is_not_touched",
    }
)
"""Tests that take seconds, by ``path::function`` (every parameter of it), for modules
that hold quick tests too; whole modules and the tests of the Django app carry
``pytest.mark.slow`` themselves. :func:`pytest_collection_modifyitems` refuses to run
when a module it collects no longer has a function named here."""

DATABASE_FIXTURES = frozenset(
    {"django_db_setup", "_django_db_helper", "db", "transactional_db", "live_server"}
)
"""Fixtures through which a test reaches the database. ``item.fixturenames`` holds every
fixture a test needs, directly or through others, so one that takes ``db`` three fixtures
down is found too; ``live_server`` asks for ``transactional_db`` only when the test runs.
``client`` alone opens no database: a test that queried through it would fail."""
BROWSER_TESTS = REPO / "tests" / "browser"
NOTHING_USES_THE_DATABASE = pytest.StashKey[bool]()


def uses_database(item: pytest.Item) -> bool:
    """Whether ``item`` uses the test database: a ``django_db`` (or ``db``) mark, a fixture
    of :data:`DATABASE_FIXTURES`, or a Django test case with databases. Only these run on
    PostgreSQL too; the rest would run the same code twice."""
    if item.get_closest_marker("django_db") or item.get_closest_marker("db"):
        return True
    if not DATABASE_FIXTURES.isdisjoint(getattr(item, "fixturenames", ())):
        return True
    from django.test import SimpleTestCase

    case = getattr(item, "cls", None)
    return isinstance(case, type) and issubclass(case, SimpleTestCase) and bool(case.databases)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--db-only",
        action="store_true",
        help="run only the tests that use the database (the PostgreSQL pass of make test)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "s3: runs on the loopback S3 server (set by the fixtures; -m 'not s3' skips)"
    )
    # As the Makefile reads CI: under CI, tests that would be skipped without the
    # recordings must run, so their absence is an error, not a list of skips.
    if os.environ.get("CI") in {"true", "1"} and not HAVE_RECORDINGS:
        raise pytest.UsageError(f"CI={os.environ['CI']}: {RecordingsNotFound(CONVERSATIONS)}")


def pytest_report_header() -> str:
    return f"hypothesis profile: {HYPOTHESIS_PROFILE}"


def _in_module(item: pytest.Item) -> bool:
    return isinstance(item, pytest.Function) and item.nodeid.count("::") == 1


# First, so that `-m db` and the like see these marks.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses the database ``db`` and every browser test ``browser``;
    mark every test that runs on S3: those taking ``s3_server``, and the ``[s3]`` half of
    those taking ``offloads``. With ``--db-only``, deselect the tests that are not ``db``."""
    modules = {item.nodeid.split("::")[0]: item.module for item in items if _in_module(item)}
    gone = sorted(
        name
        for name, (path, function) in ((name, name.split("::")) for name in SLOW)
        if path in modules and not hasattr(modules[path], function)
    )
    if gone:
        raise pytest.UsageError(f"tests/conftest.py SLOW names tests that are gone: {gone}")
    for item in items:
        if item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)
        if uses_database(item):
            item.add_marker(pytest.mark.db)
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)
        callspec = getattr(item, "callspec", None)
        on_s3 = callspec is not None and callspec.params.get("offloads") == "s3"
        if on_s3 or "s3_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.s3)
    if config.getoption("db_only"):
        kept = [item for item in items if _on_postgresql(item)]
        deselected = [item for item in items if not _on_postgresql(item)]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = kept
            config.stash[NOTHING_USES_THE_DATABASE] = not kept


def _on_postgresql(item: pytest.Item) -> bool:
    """Whether the PostgreSQL pass runs ``item``: it uses the database, and is not the
    SQLite half of a test whose servers run on each database in turn."""
    return bool(item.get_closest_marker("db")) and not item.get_closest_marker("sqlite_only")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """``--db-only`` over tests none of which uses the database (``make test
    PYTEST_ARGS=tests/engine``) has nothing to run on PostgreSQL, which is no failure."""
    if session.config.stash.get(NOTHING_USES_THE_DATABASE, False) and (
        session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    ):
        session.exitstatus = pytest.ExitCode.OK
