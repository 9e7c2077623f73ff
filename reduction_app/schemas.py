"""What every REST body shares: the error shape, the message formats (and
:func:`parse_conversation`, a body's conversation read through the engine's format
registry), the string types that go into text columns and addresses, and the strict base
of request bodies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal

from django.conf import settings
from ninja import Field, Schema
from ninja.errors import HttpError
from pydantic import AfterValidator, ConfigDict

from reduction_app.engine import formats
from reduction_app.engine.formats import FORMAT_NAMES
from reduction_app.errors import LimitExceeded

if TYPE_CHECKING:
    # A Literal built at run time is opaque to mypy; it checks the name as a string.
    MessageFormat = str
else:
    MessageFormat = Literal[FORMAT_NAMES]


def _storable(value: str) -> str:
    # PostgreSQL cannot store NUL or a lone surrogate in text (SQLite's driver cannot
    # encode the surrogate either); refuse them here so both databases answer alike, as
    # the engine refuses them in the ids and names of a conversation.
    problem = formats.text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


Text = Annotated[str, AfterValidator(_storable)]
"""A string that goes into a text column."""


def _addressable(value: str) -> str:
    # The dashboard puts the id in a URL path: "." and ".." segments would be resolved away
    # by browsers and land on another page.
    if any(segment in (".", "..") for segment in value.split("/")):
        raise ValueError("must not contain '.' or '..' path segments")
    return value


ConversationId = Annotated[str, AfterValidator(_storable), AfterValidator(_addressable)]
"""A client's conversation id: stored, and used in dashboard addresses."""


class ErrorOut(Schema):
    detail: str
    field: str | None = None


class ConflictOut(ErrorOut):
    revision: int | None = Field(
        None,
        description="On a stale previous_revision: the conversation's current revision "
        "(null when it has none); send the whole context then.",
    )


# The errors an operation can answer before its own code runs, by what it takes; each
# operation's ``response=`` spreads the one that fits and adds its own (404, 409, ...).
# Every operation needs a key (401). django-ninja answers 422 for a path or query
# parameter that does not validate (``/configs/abc``, a required one left out); for a
# body it answers 400 when the bytes are not JSON and 422 when the JSON does not fit, and
# ApiRequestSizeMiddleware answers 413 for a body over REDUCTION_MAX_REQUEST_BYTES, and
# 411 for a chunked body where the server cannot read one.
AUTH_ERRORS: dict[int, type[Schema]] = {401: ErrorOut}
PARAM_ERRORS: dict[int, type[Schema]] = {**AUTH_ERRORS, 422: ErrorOut}
BODY_ERRORS: dict[int, type[Schema]] = {
    **PARAM_ERRORS,
    400: ErrorOut,
    411: ErrorOut,
    413: ErrorOut,
}


def response_links(
    statuses: tuple[int, ...], parameter: str, field: str, operation_ids: tuple[str, ...]
) -> dict[str, Any]:
    """``openapi_extra`` saying that ``field`` of the body a ``statuses`` response carries
    is ``parameter`` of the operations ``operation_ids``: OpenAPI links, which clients
    and schemathesis's stateful tests follow (create a config, then read it)."""
    links = {
        operation_id: {
            "operationId": operation_id,
            "parameters": {parameter: f"$response.body#/{field}"},
        }
        for operation_id in operation_ids
    }
    # Keyed by int, as django-ninja keys its responses, so the two merge into one.
    return {"responses": {status: {"links": links} for status in statuses}}


class ApiError(HttpError):
    """An input the API refuses, answered as :class:`ErrorOut` naming ``field``."""

    def __init__(self, status_code: int, detail: str, field: str | None = None) -> None:
        super().__init__(status_code, detail)
        self.field = field


class StrictIn(Schema):
    model_config = ConfigDict(extra="forbid")


_SYSTEM_FORMATS = " or ".join(repr(f.name) for f in formats.FORMATS.values() if f.takes_system)


def parse_conversation(
    message_format: str,
    messages: list[Any],
    tools: list[Any],
    system: Any,
    *,
    earlier: Sequence[Any] | None = None,
) -> tuple[list[Any], list[Any]]:
    """The engine's messages and tools of a conversation in ``message_format``; with
    ``earlier``, the engine messages ``messages`` follow (``formats.parse_following``).

    The tools and the system parameter are recorded in JSON columns (the messages as
    text): what those cannot hold is refused here, on either database. More messages than
    ``REDUCTION_MAX_MESSAGES`` are refused first, before any of them is read.
    """
    limit = settings.REDUCTION_MAX_MESSAGES
    if limit and len(messages) > limit:
        detail = (
            f"{len(messages)} messages is over the limit of {limit} messages per request "
            "(REDUCTION_MAX_MESSAGES)"
        )
        raise LimitExceeded(detail, field="messages")
    wire = formats.get_format(message_format)
    if system is not None and not wire.takes_system:
        raise ApiError(422, f"system is only taken with format {_SYSTEM_FORMATS}", "system")
    if earlier is None:
        parsed = wire.parse_messages(messages, system), wire.parse_tools(tools)
    else:
        parsed = formats.parse_following(wire.name, messages, earlier), wire.parse_tools(tools)
    for value, where in ((tools, "tools"), (system, "system")):
        found = formats.json_problem(value, where)
        if found is not None:
            raise ApiError(422, f"{found[0]}: {found[1]}", found[0])
    return parsed


# How far a job on the task workers got (its progress_done of progress_total); no
# docstring, which would become its description in the OpenAPI document.
class ProgressOut(Schema):
    done: int
    total: int
