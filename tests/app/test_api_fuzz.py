"""Schemathesis against the API's own OpenAPI document, through a live server.

Every operation gets the cases Schemathesis derives from its schema (the coverage phase:
each boundary and each way to break a parameter or a body) and then a fixed number of
generated ones, valid and invalid, all seeded; then chains of valid calls along the
document's links and those Schemathesis infers (a config created, then read, updated and
deleted). Each response must be no 5xx, carry a status code the operation documents,
with the documented content type, headers and body schema. Without a key, or with a bad
one, every operation answers 401 only.

Each test prints how many requests it made and how long it took (``-s`` shows them; the
README's figures are their sums).

Selected with ``-m fuzz`` (and left out with ``-m 'not fuzz'``). The server runs in a
thread on the test database, so requests commit as in production (``transaction=True``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import hypothesis
import pytest
import schemathesis
from django.test import Client
from hypothesis import HealthCheck

from reduction_app.api import api
from reduction_app.workspaces.services import api_key_create, workspace_get_or_create

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(transaction=True)]

SEED = 20261203
FUZZ_EXAMPLES = 25
"""Generated cases per operation, after the coverage phase's derived ones."""
UNAUTHORIZED_EXAMPLES = 3
"""Generated cases per operation and way of failing to authenticate."""
STATEFUL_SCENARIOS = 40
STATEFUL_STEPS = 6


def _config(
    *, mode: str = "all", coverage: bool, max_examples: int, allow_x00: bool = True
) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "generation": {
                "mode": mode,
                "max-examples": max_examples,
                "deterministic": True,
                "allow-x00": allow_x00,
                # No example database: a run replays nothing from an earlier one.
                "database": "none",
                # The key goes in every request as it is; missing and wrong keys are
                # test_api_fuzz_operation_without_a_key_is_401's.
                "with-security-parameters": False,
            },
            "phases": {
                "examples": {"enabled": True},
                "coverage": {"enabled": coverage},
                "fuzzing": {"enabled": True},
            },
        }
    )


# The document as the API generates it; test_api_fuzz_schema_is_the_served_one checks it
# is the one /api/v1/openapi.json serves.
DOCUMENT = api.get_openapi_schema(path_prefix="/api/v1/")
SCHEMA = schemathesis.openapi.from_dict(
    DOCUMENT, config=_config(coverage=True, max_examples=FUZZ_EXAMPLES)
)
# Chains of calls go furthest when each call is one the API takes; the stateless tests
# send the invalid ones.
STATEFUL_SCHEMA = schemathesis.openapi.from_dict(
    DOCUMENT, config=_config(mode="positive", coverage=False, max_examples=FUZZ_EXAMPLES)
)
# Authentication comes before everything else, so a few generated cases an operation say
# as much as the coverage phase's hundreds would.
# An address holding a NUL character is refused before anything reads the key (a 422,
# as a body over the size limit is a 413): this test is about keys, so its cases hold none.
UNAUTHORIZED_SCHEMA = schemathesis.openapi.from_dict(
    DOCUMENT,
    config=_config(coverage=False, max_examples=UNAUTHORIZED_EXAMPLES, allow_x00=False),
)

CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_headers_conformance,
    schemathesis.checks.response_schema_conformance,
]

# The cases share the test's database and server across examples on purpose (what one
# case creates, the next may read), so the function-scoped fixtures are meant; the
# coverage phase's bodies and the live server's round trips are large and slow by design.
SETTINGS = hypothesis.settings(
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def _new_key() -> dict[str, str]:
    _, raw = api_key_create(
        workspace=workspace_get_or_create(name=f"fuzz {uuid.uuid4()}"), name="fuzz"
    )
    return {"Authorization": f"Bearer {raw}"}


@pytest.fixture
def auth(db: None) -> dict[str, str]:
    """A key of a workspace of its own."""
    return _new_key()


@pytest.fixture
def base_url(live_server: Any) -> str:
    return str(live_server.url)


@pytest.fixture
def counted(request: pytest.FixtureRequest) -> Iterator[list[int]]:
    """A counter of this test's requests, reported with its time when it ends."""
    calls = [0]
    start = time.monotonic()
    yield calls
    elapsed = time.monotonic() - start
    print(f"{request.node.name}: {calls[0]} requests in {elapsed:.1f}s")


def test_api_fuzz_schema_is_the_served_one(client: Client) -> None:
    served = client.get("/api/v1/openapi.json")
    assert served.status_code == HTTPStatus.OK
    assert served.json() == SCHEMA.raw_schema


@SCHEMA.parametrize()
@SETTINGS
def test_api_fuzz_operation(
    case: schemathesis.Case, base_url: str, auth: dict[str, str], counted: list[int]
) -> None:
    counted[0] += 1
    case.call_and_validate(base_url=base_url, headers=auth, checks=CHECKS)


@UNAUTHORIZED_SCHEMA.parametrize()
@SETTINGS
@pytest.mark.parametrize(
    "authorization", [None, "Bearer rl_not-a-key", "Basic dXNlcjpwYXNz"], ids=str
)
def test_api_fuzz_operation_without_a_key_is_401(
    case: schemathesis.Case, base_url: str, authorization: str | None, counted: list[int]
) -> None:
    """Whatever else is wrong with the request, no key (or a bad one) is a documented 401."""
    counted[0] += 1
    case.headers = {k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"}
    headers = {} if authorization is None else {"Authorization": authorization}
    response = case.call(base_url=base_url, headers=headers)
    assert response.status_code == HTTPStatus.UNAUTHORIZED, response.text
    assert response.headers["www-authenticate"] == ["Bearer"]
    case.validate_response(response, checks=CHECKS)


def test_api_fuzz_stateful(transactional_db: None, base_url: str, counted: list[int]) -> None:
    """Chains of valid calls along the document's links and those Schemathesis infers."""

    class Workflow(STATEFUL_SCHEMA.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            # Each scenario starts from an empty workspace: Hypothesis replays a scenario's
            # first steps and expects the same calls to be possible again (a name taken
            # by an earlier scenario would answer 409 and leave nothing to follow).
            self.auth = _new_key()

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            return {"base_url": base_url, "headers": self.auth}

        def after_call(self, response: schemathesis.Response, case: schemathesis.Case) -> None:
            counted[0] += 1
            super().after_call(response, case)

        def validate_response(
            self,
            response: schemathesis.Response,
            case: schemathesis.Case,
            additional_checks: Any = None,
            **kwargs: Any,
        ) -> None:
            case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None)

    Workflow.run(
        settings=hypothesis.settings(
            SETTINGS,
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=STATEFUL_STEPS,
            derandomize=True,
            database=None,
        )
    )
