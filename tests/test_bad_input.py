"""Bad input is bad input: odd ids, deep nesting, paths outside the static root, and
property-based fuzzing of every tool's input schema, of raw /mcp bodies and of the account
API — never a 5xx, never an "internal failure", always an answer that says what was wrong."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from calls.runner import tool_run
from config.asgi import application
from mcp_gateway.tools import INTERNAL_FAILURE
from rooms import errors, registry
from rooms.store import engine as engine_store
from tenants import services
from tenants.auth import Bearer, caller_resolve
from tests.rooms.test_registry import NEAR_MISSES, VALID_ARGS, near_miss_arguments

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.store]
STATIC = "static-fuzz-secret-0123456789abcdef"
ROOM = "fuzz-room"
MAX_STREAM_ID = "18446744073709551615-18446744073709551615"
ODD_EVENT_IDS = ["0-0", "\u0661\u0662-0", "1-0\n", MAX_STREAM_ID, "99999999999999999999-0", "-1-0"]


@pytest.fixture(autouse=True)
def _static_team(settings: Any) -> None:
    settings.API_KEYS = f"fuzz:{STATIC}"


async def _post(path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        response = await client.post(path, content=body, headers=headers)
        return response.status_code, response.text


def post(path: str, body: bytes, **headers: str) -> tuple[int, str]:
    """One request to the real ASGI application (on a loop of its own, pools closed after)."""
    all_headers = {
        "authorization": f"Bearer {STATIC}",
        "content-type": "application/json",
        "accept": "application/json",
        **headers,
    }
    return engine_store.run_sync(_post, path, body, all_headers)


def mcp(name: str, arguments: Any) -> tuple[int, dict[str, Any]]:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    ).encode()
    status, text = post("/mcp", body)
    return status, json.loads(text)


def assert_answered(status: int, text: str) -> None:
    assert status < 500, text[:500]
    assert INTERNAL_FAILURE not in text and "The server failed" not in text, text[:500]


# --- Odd ids ------------------------------------------------------------------------------------


@pytest.mark.parametrize("event_id", ODD_EVENT_IDS)
@pytest.mark.parametrize(
    ("tool", "field"),
    [
        ("mark_event_read", "eventId"),
        ("get_event_reads", "eventId"),
        ("reply_to_event", "replyToId"),
    ],
)
def test_odd_event_ids_are_unknown_ids_not_failures(tool: str, field: str, event_id: str) -> None:
    status, body = mcp(tool, {"roomId": ROOM, **VALID_ARGS[tool], field: event_id})
    assert status == 200
    result = body["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith(f'Unknown event id "{event_id}"')


@pytest.mark.parametrize("since", ODD_EVENT_IDS)
def test_reading_after_an_odd_id_answers_plainly(since: str) -> None:
    status, body = mcp("read_events", {"roomId": ROOM, "since": since, "order": "asc"})
    assert status == 200
    text = body["result"]["content"][0]["text"]
    assert_answered(status, text)
    if since == MAX_STREAM_ID:
        assert json.loads(text) == []  # nothing can come after the largest id


# --- Near misses (issue 25, point 2) ------------------------------------------------------------


@pytest.mark.parametrize(("name", "left_out", "given", "meant"), NEAR_MISSES[:5])
def test_a_near_miss_is_a_tool_error_naming_the_argument_it_meant_at_every_door(
    name: str, left_out: str, given: str, meant: str
) -> None:
    arguments = {**near_miss_arguments(name, left_out, given), "roomId": ROOM}
    said = f"unknown argument {given!r}: did you mean {meant!r}? (allowed: "
    if left_out == "roomId":
        del arguments["roomId"]

    status, body = mcp(name, arguments)
    assert status == 200 and body["result"]["isError"] is True
    assert said in body["result"]["content"][0]["text"]

    async def run() -> errors.ToolArgumentsError:
        caller = await caller_resolve(Bearer(STATIC))
        assert caller is not None
        with pytest.raises(errors.ToolArgumentsError) as caught:
            await tool_run(caller, name, arguments)
        return caught.value

    refused = engine_store.run_sync(run)
    assert said in refused.message and refused.extra["didYouMean"] == {given: meant}


def test_json_nested_past_any_sane_depth_is_a_parse_error_at_every_door() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    status, text = post("/mcp", deep.encode())
    assert status == 400 and "nests too deeply" in text
    payload = '{"roomId": "' + ROOM + '", "type": "t", "from": "a", "payload": ' + deep + "}"
    status, text = post(f"/api/v1/rooms/{ROOM}/tools/post_event", payload.encode())
    assert status == 400
    status, body = mcp(
        "post_event",
        {"roomId": ROOM, "type": "t", "from": "a", "payload": json.loads("[" * 500 + "]" * 500)},
    )
    assert status == 200 and body["result"]["isError"] is True
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {STATIC}")
    refused = api.generic("POST", "/api/v1/rooms", deep, content_type="application/json")
    assert refused.status_code == 400 and "nests too deeply" in refused.json()["message"]


@pytest.mark.parametrize(
    "path",
    [
        "/static//etc/passwd",
        "/static/../config/settings.py",
        "/static/%2e%2e/etc/passwd",
        "/static/a\\..\\b",
        "/static/",
    ],
)
def test_static_paths_outside_the_root_are_not_found(path: str) -> None:
    async def get() -> int:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
            return (await c.get(path)).status_code

    assert engine_store.run_sync(get) == 404


def test_a_forged_server_event_cannot_break_the_room_report() -> None:
    _status, body = mcp(
        "post_event", {"roomId": ROOM, "type": "task_added", "from": "a", "payload": "not a task"}
    )
    assert (
        body["result"]["isError"] is True
        and "written by the server" in (body["result"]["content"][0]["text"])
    )
    from rooms.report import report_markdown

    snapshot: Any = {
        "plan": {"project": ROOM, "created_at": "", "updated_at": "", "tasks": []},
        "presence": [],
        "events": [],
        "event_count": 0,
        "vars": {},
        "locks": [],
        "context": [
            {
                "id": "c",
                "type": "api_contract",
                "author": "a",
                "timestamp": "",
                "summary": "s",
                "consuming_agents": [],
                "payload": "odd",
                "version": "1.0",
            }
        ],
    }
    timeline: Any = [
        {
            "id": "1-0",
            "type": "task_updated",
            "from": "a",
            "to": "all",
            "payload": ["odd"],
            "timestamp": "",
        }
    ]
    assert "# Room" in report_markdown(ROOM, snapshot, {}, timeline)


# --- Property-based: every tool's schema, and garbage around it --------------------------------

FUZZ = settings(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    database=None,
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)


ODD_TEXT = st.sampled_from(
    ["", " ", "\n", "0-0", MAX_STREAM_ID, "\u0661-0", "../..", "x" * 20_000, "\ud800", "null"]
) | st.text(max_size=60)


# A valid long wait is no bad input, only a wait (up to 30 s, capped: tests/rooms/test_wait.py):
# a wait's timeout is fuzzed with anything but a number (or numeric text) over 50 ms.
WAITS = {"timeoutMs"}


def waits_briefly(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return True
    try:
        return float(value) <= 50
    except (ValueError, OverflowError):
        return True


def arguments(name: str) -> st.SearchStrategy[Any]:
    """Argument objects shaped by the tool's input schema: each property left out, valid
    (VALID_ARGS), odd text, a number, or any JSON; now and then an unknown property, or no
    object at all."""
    schema = registry.tool_get(name).input_schema()
    valid = VALID_ARGS.get(name, {})
    values = {
        prop: (st.just(valid[prop]) if prop in valid else st.nothing())
        | ODD_TEXT
        | st.integers(min_value=-(2**70), max_value=2**70)
        | JSON
        for prop in schema["properties"]
    }
    for prop in WAITS & values.keys():
        values[prop] = values[prop].filter(waits_briefly)
    shaped = st.fixed_dictionaries({}, optional=values)
    extra = st.dictionaries(st.text(max_size=12), JSON, max_size=2)
    return shaped | st.builds(lambda a, b: {**a, **b}, shaped, extra) | JSON


@pytest.mark.parametrize("name", [t.name for t in registry.TOOLS])
def test_every_tool_answers_whatever_its_schema_admits(name: str) -> None:
    schema = registry.tool_get(name).input_schema()

    @FUZZ
    @given(arguments(name))
    def check(arguments: Any) -> None:
        if isinstance(arguments, dict) and "roomId" in schema["properties"]:
            arguments = {**arguments, "roomId": ROOM}
        status, body = mcp(name, arguments)
        assert_answered(status, json.dumps(body))
        if "result" in body:
            assert isinstance(body["result"]["content"][0]["text"], str)

    check()


@FUZZ
@given(st.binary(max_size=200) | JSON.map(lambda v: json.dumps(v).encode()))
def test_mcp_answers_any_body(body: bytes) -> None:
    status, text = post("/mcp", body)
    assert_answered(status, text)


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/keys",
        "/api/v1/rooms",
        f"/api/v1/rooms/{ROOM}/invites",
        f"/api/v1/rooms/{ROOM}/webhooks",
        "/api/v1/teams",
        "/api/v1/keys/1/revoke",
    ],
)
def test_the_account_api_answers_any_body(path: str) -> None:
    services.team_ensure("fuzz")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {STATIC}")

    @FUZZ
    @given(JSON)
    def check(body: Any) -> None:
        response = api.post(path, json.dumps(body), content_type="application/json")
        assert response.status_code < 500, response.content[:300]

    check()
