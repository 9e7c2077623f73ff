"""What every part of the REST API shares: cursors it did not make are refused, one
workspace never sees another's records, the OpenAPI document and docs page, and hostile
input (deep JSON, text or numbers no column holds, paths too long) answers a 422 naming
the field and the limit, on either database, never a 500."""

from __future__ import annotations

import base64
import json
from http import HTTPStatus
from typing import Any

import pytest
from django.test import RequestFactory

from reduction_app.api import BytesJsonParser
from reduction_app.models import OffloadedFile
from tests.app.support import ApiClient, error, offload

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!",
        base64.b64encode(b"o=-1").decode(),
        base64.b64encode(b"p=abc").decode(),
        base64.b64encode(b"r=maybe").decode(),
        base64.b64encode(b"p=99999999999999999999999999").decode(),
        base64.b64encode("p=١٢".encode()).decode(),
    ],
)
@pytest.mark.parametrize("endpoint", ["/events", "/files", "/conversations", "/configs"])
def test_lists_refuse_a_cursor_they_did_not_make(
    api: ApiClient, endpoint: str, cursor: str
) -> None:
    response = api.get(endpoint, {"cursor": cursor})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "cursor: not a cursor from this API; follow the next and previous links", "cursor"
    )


@pytest.mark.usefixtures("offloads")
def test_other_workspace_gets_404_for_everything(api: ApiClient, other_api: ApiClient) -> None:
    path = offload(api, "secret" * 5, conversation="run-1")
    config_id = api.post("/configs", {"name": "mine"}).json()["id"]
    responses = {
        "conversation": other_api.get("/conversations/run-1"),
        "conversation delete": other_api.delete("/conversations/run-1"),
        "file read": other_api.get("/files/read", {"path": path}),
        "file raw": other_api.get("/files/raw", {"path": path}),
        "config": other_api.get(f"/configs/{config_id}"),
        "config update": other_api.put(f"/configs/{config_id}", {"config": {}}),
        "config delete": other_api.delete(f"/configs/{config_id}"),
        "truncate with config": other_api.post(
            "/truncate", {"config_id": config_id, "tool_name": "t", "result": "x"}
        ),
        "clear with config": other_api.post("/clear", {"config_id": config_id, "messages": []}),
    }
    assert {name: r.status_code for name, r in responses.items()} == dict.fromkeys(
        responses, HTTPStatus.NOT_FOUND
    )
    assert responses["file raw"].json() == error(f"file not found: {path}", "path")
    for endpoint in ("/events", "/files", "/conversations", "/configs"):
        assert other_api.get(endpoint).json()["results"] == [], endpoint
    # Nothing of A's was changed by B's attempts.
    assert api.get(f"/configs/{config_id}").json()["version"] == 1
    assert api.get("/conversations/run-1").status_code == HTTPStatus.OK
    assert api.get("/files/raw", {"path": path}).content == b"secret" * 5
    assert OffloadedFile.objects.get(path=path).read_count == 1


@pytest.mark.usefixtures("offloads")
def test_workspaces_use_the_same_ids_and_paths_apart(api: ApiClient, other_api: ApiClient) -> None:
    mine = offload(api, "mine" * 5, conversation="run-1")
    theirs = offload(other_api, "theirs" * 5, conversation="run-1")
    assert mine == theirs == "/tmp/trunc/call_1"
    assert api.get("/files/raw", {"path": mine}).content == b"mine" * 5
    assert other_api.get("/files/raw", {"path": theirs}).content == b"theirs" * 5
    assert other_api.delete("/conversations/run-1").status_code == HTTPStatus.NO_CONTENT
    assert api.get("/files/raw", {"path": mine}).content == b"mine" * 5
    assert [e["conversation_id"] for e in api.get("/events").json()["results"]] == ["run-1"]


def test_openapi_document_generates(api: ApiClient) -> None:
    response = api.client.get("/api/v1/openapi.json")
    assert response.status_code == HTTPStatus.OK
    document = response.json()
    assert document["info"]["title"] == "Reduction Lab API"
    paths = document["paths"]
    for path in (
        "/api/v1/truncate",
        "/api/v1/clear",
        "/api/v1/files",
        "/api/v1/files/read",
        "/api/v1/files/raw",
        "/api/v1/events",
        "/api/v1/conversations",
        "/api/v1/conversations/{conversation_id}",
        "/api/v1/configs",
        "/api/v1/configs/{config_id}",
        "/api/v1/tools/read_file",
    ):
        assert path in paths, path
    assert set(paths["/api/v1/truncate"]["post"]["responses"]) == {
        "200",
        "400",
        "401",
        "404",
        "409",
        "411",
        "413",
        "422",
        "503",
    }
    assert set(paths["/api/v1/events"]["get"]["responses"]) == {"200", "401", "422"}
    assert paths["/api/v1/events"]["get"]["tags"] == ["events"]
    assert paths["/api/v1/clear"]["post"]["tags"] == ["engine"]


def test_openapi_every_operation_documents_the_errors_before_it_runs(api: ApiClient) -> None:
    """401 everywhere; 400, 411, 413 and 422 with a body; 422 with a parameter that can fail to
    parse (an integer, a required one, a bounded one, a cursor)."""
    document = api.client.get("/api/v1/openapi.json").json()
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            codes = {int(code) for code in operation["responses"]}
            label = f"{method.upper()} {path}"
            assert HTTPStatus.UNAUTHORIZED in codes, label
            if "requestBody" in operation:
                assert {400, 411, 413, 422} <= codes, label
            for parameter in operation.get("parameters", []):
                schema = parameter["schema"]
                can_fail = (
                    (parameter.get("required", False) and parameter["in"] == "query")
                    or schema.get("type") in ("integer", "number")
                    or "format" in schema
                )
                if can_fail or parameter["name"] in ("cursor", "page_size"):
                    assert 422 in codes, (label, parameter["name"])


PUBLISHED_OPERATIONS = [
    ("POST", "/api/v1/truncate", "reduction_app_api_engine_truncate"),
    ("POST", "/api/v1/clear", "reduction_app_api_engine_clear"),
    ("GET", "/api/v1/tools/read_file", "reduction_app_api_engine_read_file_tool"),
    ("GET", "/api/v1/files", "reduction_app_api_records_list_files"),
    ("POST", "/api/v1/files", "reduction_app_api_records_write_file"),
    ("GET", "/api/v1/files/read", "reduction_app_api_records_read_file"),
    ("GET", "/api/v1/files/raw", "reduction_app_api_records_raw_file"),
    ("GET", "/api/v1/events", "reduction_app_api_records_list_events"),
    ("GET", "/api/v1/conversations", "reduction_app_api_records_list_conversations"),
    ("POST", "/api/v1/conversations", "reduction_app_api_records_create_conversation"),
    ("POST", "/api/v1/conversations/import", "reduction_app_api_records_import_recordings"),
    ("GET", "/api/v1/imports/{import_id}", "reduction_app_api_records_get_import"),
    (
        "GET",
        "/api/v1/conversations/{conversation_id}",
        "reduction_app_api_records_get_conversation",
    ),
    (
        "DELETE",
        "/api/v1/conversations/{conversation_id}",
        "reduction_app_api_records_delete_conversation",
    ),
    ("GET", "/api/v1/configs", "reduction_app_api_records_list_configs"),
    ("POST", "/api/v1/configs", "reduction_app_api_records_create_config"),
    ("GET", "/api/v1/configs/{config_id}", "reduction_app_api_records_get_config"),
    ("PUT", "/api/v1/configs/{config_id}", "reduction_app_api_records_update_config"),
    ("DELETE", "/api/v1/configs/{config_id}", "reduction_app_api_records_delete_config"),
    ("POST", "/api/v1/simulations", "reduction_app_api_simulations_create_simulation"),
    ("GET", "/api/v1/simulations", "reduction_app_api_simulations_list_simulations"),
    (
        "GET",
        "/api/v1/simulations/{simulation_id}",
        "reduction_app_api_simulations_get_simulation",
    ),
    ("POST", "/api/v1/otel/v1/traces", "reduction_app_api_telemetry_otlp_traces"),
    ("POST", "/api/v1/otel/v1/logs", "reduction_app_api_telemetry_otlp_logs"),
    ("GET", "/api/v1/otel/sessions", "reduction_app_api_telemetry_otlp_sessions"),
]
"""Every operation of v1 with the id generated clients name their methods after."""


def test_openapi_operation_ids_stay_as_published(api: ApiClient) -> None:
    """Moving an operation's code to another module changes neither its path nor its id."""
    document = api.client.get("/api/v1/openapi.json").json()
    operations = [
        (method.upper(), path, operation["operationId"])
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]
    assert operations == PUBLISHED_OPERATIONS


def test_openapi_document_is_built_once_and_handed_out_as_copies() -> None:
    from reduction_app.api import api as ninja_api

    first = ninja_api.get_openapi_schema(path_prefix="/api/v1/")
    first["paths"].clear()
    again = ninja_api.get_openapi_schema(path_prefix="/api/v1/")
    assert "/api/v1/clear" in again["paths"]
    assert ninja_api.get_openapi_schema(path_prefix="/api/v1/") == again
    assert set(ninja_api._documents) >= {"/api/v1/"}


def test_docs_page_answers(api: ApiClient) -> None:
    response = api.client.get("/api/v1/docs")
    assert response.status_code == HTTPStatus.OK
    assert b"Reduction Lab API" in response.content
    # Swagger UI from django-ninja's static files: no CDN, no inline script (the CSP).
    assert b'src="/static/ninja/swagger-ui-init.js"' in response.content
    assert b"cdn.jsdelivr.net" not in response.content


def test_conversation_ids_with_dot_segments_are_refused(api: Any) -> None:
    """Browsers resolve "." and ".." in a page address away; such ids would open another page."""
    for bad in (".", "..", "a/../b", "./x"):
        response = api.post("/conversations", {"conversation_id": bad, "messages": []})
        assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, bad
        assert response.json()["field"] == "conversation_id"
    assert (
        api.post("/conversations", {"conversation_id": "a.b/c..d", "messages": []}).status_code
        == 201
    )


# The body parser --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        '{"messages": [{"role": "tool", "content": "中文 \\ud800 é"}]}'.encode(),
        b'{"a": 1, "a": [-0.0, 1e300, 123456789012345678901234567890]}',
        b"\xef\xbb\xbf{}",
    ],
    ids=["wide-and-lone-surrogate", "duplicate-key-big-numbers", "utf-8-bom"],
)
def test_parser_reads_a_body_as_json_loads_does(body: bytes) -> None:
    request = RequestFactory().post("/api/v1/clear", body, content_type="application/json")
    parsed = BytesJsonParser().parse_body(request)
    assert repr(parsed) == repr(json.loads(body))


_TOOL_USE = b'{"type": "tool_use", "id": "t1", "name": "grep", "input": {"x": %s}}'
# Bodies with a number no JSON answer can give back, or an integer Python does not convert,
# and the field that holds it; each is written as raw JSON, as a client would send it.
NUMBER_BODIES = [
    pytest.param(
        "/clear",
        b'{"format": "anthropic", "messages": [{"role": "user", "content": "hi"}, '
        b'{"role": "assistant", "content": [' + _TOOL_USE % b"NaN" + b"]}]}",
        "messages[1].content[0].input.x",
        "must be a finite number, got NaN",
        id="anthropic-tool-use-input-nan",
    ),
    pytest.param(
        "/clear",
        b'{"format": "anthropic", "messages": [{"role": "user", "content": "hi"}, '
        b'{"role": "assistant", "content": [' + _TOOL_USE % b"1e999" + b"]}]}",
        "messages[1].content[0].input.x",
        "must be a finite number, got Infinity",
        id="anthropic-tool-use-input-1e999",
    ),
    pytest.param(
        "/clear",
        b'{"messages": [{"role": "assistant", "content": null, "tool_calls": [{"id": "c", '
        b'"type": "function", "function": {"name": "f", "arguments": {"x": -Infinity}}}]}]}',
        "messages[0].tool_calls[0].function.arguments.x",
        "must be a finite number, got -Infinity",
        id="openai-arguments-object",
    ),
    pytest.param(
        "/clear",
        b'{"messages": [], "tools": [{"type": "function", "function": {"name": "f", '
        b'"parameters": {"maximum": Infinity}}}]}',
        "tools[0].function.parameters.maximum",
        "must be a finite number, got Infinity",
        id="tools",
    ),
    pytest.param(
        "/clear",
        b'{"format": "anthropic", "messages": [], "system": [{"type": "text", "text": "s", '
        b'"cache_control": {"ttl": NaN}}]}',
        "system[0].cache_control.ttl",
        "must be a finite number, got NaN",
        id="system",
    ),
    pytest.param(
        "/truncate",
        b'{"tool_name": "grep", "result": {"parts": [{"type": "text", "text": "a", '
        b'"extra": {"score": NaN}}]}}',
        "result.parts[0].extra.score",
        "must be a finite number, got NaN",
        id="truncate-result-parts",
    ),
    pytest.param(
        "/clear",
        b'{"messages": [], "config": {"clear_retention_suffix_limit": ' + b"9" * 5000 + b"}}",
        "config.clear_retention_suffix_limit",
        "must be an integer of at most 4300 digits, got 5000 digits",
        id="config-5000-digits",
    ),
    pytest.param(
        "/clear",
        b'{"messages": [{"role": "user", "content": "hi"}, {"role": "user", '
        b'"content": [{"type": "text", "text": "t", "n": -' + b"1" * 5000 + b"}]}]}",
        "messages[1].content[0].n",
        "must be an integer of at most 4300 digits, got 5000 digits",
        id="message-5000-digits",
    ),
    pytest.param(
        "/configs",
        b'{"name": "x", "config": {"max_tokens_for_clear": 1e999}}',
        "config.max_tokens_for_clear",
        "must be a finite number, got Infinity",
        id="configs",
    ),
]


@pytest.mark.parametrize(("path", "body", "field", "problem"), NUMBER_BODIES)
def test_parser_refuses_numbers_json_cannot_give_back_naming_the_field(
    api: ApiClient, path: str, body: bytes, field: str, problem: str
) -> None:
    """Echoed back, ``NaN`` or ``Infinity`` would make the answer invalid JSON; an integer
    over 4,300 digits made the body unreadable with no field named."""
    response = api.post_raw(path, body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(f"{field}: {problem}", field)


def test_parser_keeps_a_lone_surrogate_and_the_last_duplicate_key(api: ApiClient) -> None:
    body = '{"tool_name": "grep", "result": "first", "result": "中 \\udcff"}'.encode()
    response = api.post_raw("/truncate", body)
    assert response.status_code == HTTPStatus.OK
    assert response.json() == {
        "truncated": False,
        "result": "中 \udcff",
        "offload_path": None,
        "events": [],
    }


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"not json", "Expecting value: line 1 column 1 (char 0)"),
        (
            b'{"tool_name": "grep",}',
            "Expecting property name enclosed in double quotes: line 1 column 22 (char 21)",
        ),
        (b"\xff\xfe\x00", "'utf-16-le' codec can't decode byte 0x00 in position 2: truncated data"),
    ],
)
def test_parser_errors_give_json_reasons_under_debug(
    api: ApiClient, settings: Any, data: bytes, reason: str
) -> None:
    """The reason DEBUG adds to "Cannot parse request body" is json's, as before."""
    settings.DEBUG = True
    response = api.post_raw("/truncate", data)
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json() == error(f"Cannot parse request body ({reason})")


def test_openapi_links_lead_from_what_is_created_to_its_address(api: ApiClient) -> None:
    """The links the stateful fuzz test follows name operations and parameters that exist."""
    document = api.client.get("/api/v1/openapi.json").json()
    by_id = {
        operation["operationId"]: operation
        for methods in document["paths"].values()
        for operation in methods.values()
    }
    followed = {}
    for operation in by_id.values():
        for code, response in operation["responses"].items():
            for link in response.get("links", {}).values():
                [(parameter, expression)] = link["parameters"].items()
                target = by_id[link["operationId"]]
                assert parameter in {p["name"] for p in target["parameters"]}
                followed[(operation["operationId"], code, link["operationId"])] = expression
    records = "reduction_app_api_records"
    assert followed == {
        (f"{records}_create_config", "201", f"{records}_get_config"): "$response.body#/id",
        (f"{records}_create_config", "201", f"{records}_update_config"): "$response.body#/id",
        (f"{records}_create_config", "201", f"{records}_delete_config"): "$response.body#/id",
        **{
            (f"{records}_create_conversation", "201", f"{records}_{target}"): (
                "$response.body#/conversation_id"
            )
            for target in ("get_conversation", "delete_conversation", "list_events", "list_files")
        },
        **{
            (
                "reduction_app_api_simulations_create_simulation",
                code,
                "reduction_app_api_simulations_get_simulation",
            ): "$response.body#/id"
            for code in ("201", "202")
        },
        **{
            (f"{records}_import_recordings", code, f"{records}_get_import"): "$response.body#/id"
            for code in ("201", "202")
        },
    }


# Hostile input: every one answers a 4xx naming the field, never a 500 -------------------


def _nested(levels: int) -> str:
    """``levels`` objects inside one another, as JSON text (json.dumps would recurse)."""
    return '{"a":' * levels + "1" + "}" * levels


def _chat_call(call_id: str) -> list[dict[str, Any]]:
    """Two calls and their results: a clear pass clears the first (``call_id``)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for each in (call_id, "call_b"):
        function = {"name": "grep", "arguments": "{}"}
        messages += [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": each, "type": "function", "function": function}],
            },
            {"role": "tool", "tool_call_id": each, "content": "A" * 200},
        ]
    return messages


def _deep_tools(levels: int) -> bytes:
    tool = '{"type":"function","function":{"name":"grep","parameters":' + _nested(levels) + "}}"
    messages = json.dumps(_chat_call("call_a"))
    return f'{{"conversation_id":"deep","messages":{messages},"tools":[{tool}]}}'.encode()


def _deep_tool_use(levels: int) -> bytes:
    use = '{"type":"tool_use","id":"t1","name":"grep","input":' + _nested(levels) + "}"
    return (
        '{"format":"anthropic","conversation_id":"deep","messages":[{"role":"user","content":"hi"},'
        f'{{"role":"assistant","content":[{use}]}}]}}'
    ).encode()


# Within the limit (128 levels), a field's path is the field; beyond what the decoder
# reads (about 990 levels of the whole body), it is where the body passes the limit,
# shown to 8 components.
@pytest.mark.parametrize(
    ("levels", "tools_at", "tool_use_at"),
    [
        (129, "tools[0].function.parameters", "messages[1].content[0].input"),
        (480, "tools[0].function.parameters", "messages[1].content[0].input"),
        (1_000, "tools[0].function.parameters.a.a.a.a…", "messages[1].content[0].input.a.a.a…"),
        (100_000, "tools[0].function.parameters.a.a.a.a…", "messages[1].content[0].input.a.a.a…"),
    ],
)
def test_deep_json_is_refused_naming_the_field_and_the_limit(
    api: ApiClient, levels: int, tools_at: str, tool_use_at: str
) -> None:
    for body, where in ((_deep_tools(levels), tools_at), (_deep_tool_use(levels), tool_use_at)):
        response = api.post_raw("/clear", body)
        assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
        assert response.json() == error(
            f"{where}: nested deeper than the limit of 128 levels", where
        )


@pytest.mark.parametrize("body", [_deep_tools(128), _deep_tool_use(128)], ids=["tools", "input"])
def test_json_nested_to_the_limit_is_cleared_and_recorded(api: ApiClient, body: bytes) -> None:
    response = api.post_raw("/clear", body)
    assert response.status_code == HTTPStatus.OK
    sent = json.loads(body)
    assert response.json()["messages"] == sent["messages"]
    conversation = api.get("/conversations/deep").json()
    assert (conversation["messages"], conversation["tools"]) == (
        sent["messages"],
        sent.get("tools", []),
    )


def _cleared(call_id: str) -> bytes:
    """A body whose call ``call_id`` is cleared, its events filed under a conversation;
    ``call_id`` is JSON text, for escapes json.dumps would not write (a lone surrogate)."""
    body = {
        "config": {"max_tokens_for_clear": 10},
        "conversation_id": "run-1",
        "messages": _chat_call("CALL_ID"),
    }
    return json.dumps(body).replace("CALL_ID", call_id).encode()


@pytest.mark.parametrize(
    ("body", "where", "problem"),
    [
        (
            b'{"conversation_id": "a\\ud800", "messages": []}',
            "conversation_id",
            "Value error, must not contain a lone surrogate ('\\ud800' at 1)",
        ),
        (
            _cleared("c\\ud800"),
            "messages[1].tool_calls[0].id",
            "must not contain a lone surrogate ('\\ud800' at 1)",
        ),
        (
            _cleared("c\\u0000"),
            "messages[1].tool_calls[0].id",
            "must not contain NUL characters",
        ),
        (
            _cleared("i" * 10_000),
            "messages[1].tool_calls[0].id",
            "longer than the limit of 200 characters (10000 characters)",
        ),
    ],
    ids=["conversation-id-surrogate", "call-id-surrogate", "call-id-nul", "call-id-long"],
)
def test_text_no_column_can_hold_is_refused_naming_the_field(
    api: ApiClient, body: bytes, where: str, problem: str
) -> None:
    response = api.post_raw("/clear", body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(f"{where}: {problem}", where)
    assert not OffloadedFile.objects.exists()


def test_a_call_id_at_the_limit_is_cleared_and_recorded(api: ApiClient) -> None:
    response = api.post_raw("/clear", _cleared("i" * 200))
    assert response.status_code == HTTPStatus.OK
    assert [e["call_id"] for e in response.json()["events"]] == ["i" * 200, ""]


def _with(fields: str, messages: Any = None) -> bytes:
    """A body that clears a call and records the conversation, with ``fields`` (JSON text:
    json.dumps writes no lone surrogate, no NaN in a strict parser's reach)."""
    messages = json.dumps(_chat_call("call_a") if messages is None else messages)
    return f'{{"conversation_id": "run-1", "messages": {messages}, {fields}}}'.encode()


@pytest.mark.parametrize(
    ("fields", "where", "problem"),
    [
        (
            '"tools": [{"type": "function", "function": {"name": "grep", "parameters": '
            '{"type": "object", "x": [1, Infinity]}}}]',
            "tools[0].function.parameters.x[1]",
            "must be a finite number, got Infinity",
        ),
        (
            '"tools": [{"type": "function", '
            '"function": {"name": "grep", "description": "\\ud800"}}]',
            "tools[0].function.description",
            "must not contain a lone surrogate ('\\ud800' at 0)",
        ),
        (
            '"format": "anthropic", "system": [{"type": "text", "text": "s", '
            '"cache_control": {"type": "ephemeral", "ttl": NaN}}]',
            "system[0].cache_control.ttl",
            "must be a finite number, got NaN",
        ),
    ],
    ids=["tools-infinity", "tools-surrogate", "system-nan"],
)
def test_json_no_json_column_can_hold_is_refused_naming_the_field(
    api: ApiClient, fields: str, where: str, problem: str
) -> None:
    messages = [{"role": "user", "content": "hi"}] if "anthropic" in fields else None
    response = api.post_raw("/clear", _with(fields, messages))
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(f"{where}: {problem}", where)


def test_a_config_integer_beyond_64_bits_is_refused_naming_the_field(api: ApiClient) -> None:
    response = api.post_raw("/clear", _with(f'"config": {{"max_tokens_for_clear": {2**70}}}'))
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        f"config.max_tokens_for_clear must be at most {2**63 - 1}, got {2**70}",
        "config.max_tokens_for_clear",
    )


def test_a_config_integer_of_64_bits_is_taken(api: ApiClient) -> None:
    response = api.post_raw("/clear", _with(f'"config": {{"max_tokens_for_clear": {2**63 - 1}}}'))
    assert response.status_code == HTTPStatus.OK
    assert response.json()["events"][-1]["threshold"] == 2**63 - 1


# Offload paths are at most 500 characters; a default path runs up to 201 past root_dir:
# "/clear/" (7), a safe id (120, "-" and an 8-digit digest) and, for a reused id's other
# content, "-" and the content's 64-digit digest.
@pytest.mark.parametrize("endpoint", ["/clear", "/truncate"])
def test_a_root_dir_too_long_for_the_offload_paths_is_refused_naming_it(
    api: ApiClient, endpoint: str
) -> None:
    root_dir = "/" + "r" * 299
    body: dict[str, Any] = {"config": {"max_tokens_for_clear": 10, "root_dir": root_dir}}
    if endpoint == "/clear":
        body["messages"] = _chat_call("call_a")
    else:
        body |= {"tool_name": "grep", "result": "x"}
    response = api.post(endpoint, body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(
        "config.root_dir must be at most 299 characters, so that the offload paths under it "
        "(201 more) stay within the storage's limit of 500; got 300 characters",
        "config.root_dir",
    )


def test_a_root_dir_at_the_limit_takes_the_longest_call_id(api: ApiClient) -> None:
    root_dir = "/" + "r" * 298
    body = {
        "config": {"max_tokens_for_clear": 10, "root_dir": root_dir},
        "conversation_id": "run-1",
        "messages": _chat_call("i." * 100),
    }
    response = api.post("/clear", body)
    assert response.status_code == HTTPStatus.OK
    path = response.json()["events"][0]["offload_path"]
    # 299 + "/clear/" + the id's first 120 characters + "-" and a digest: 435, leaving
    # room for "-" and a content's whole digest.
    assert (len(path), path.startswith(f"{root_dir}/clear/{'i.' * 60}-")) == (435, True)
    assert OffloadedFile.objects.get().path == path


@pytest.mark.parametrize("levels", [129, 480, 1_000])
def test_deep_json_in_a_tool_results_parts_is_refused_naming_the_field(
    api: ApiClient, levels: int
) -> None:
    part = '{"type": "text", "text": "0123456789", "extra": ' + _nested(levels) + "}"
    body = (
        '{"tool_name": "grep", "conversation_id": "run-1", '
        f'"config": {{"max_length_for_trunc": 5}}, "result": {{"parts": [{part}]}}}}'
    )
    response = api.post_raw("/truncate", body.encode())
    where = "result.parts[0].extra" + (".a.a.a.a…" if levels == 1_000 else "")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json() == error(f"{where}: nested deeper than the limit of 128 levels", where)
