"""MCP 2026-07-28 to the letter (issue 25, point 3), through the real ASGI application: the
envelope's headers checked against the body (-32020), an unsupported version said first
(-32022), methods the revision removed answered 404, list results carrying ttlMs and
cacheScope, tools in one order, browser origins refused (403); the 2025 revisions and the
older handshakes beside it; trace context from `_meta` on the events a call writes.

The official SDK drives both eras end to end in tests/e2e/test_eras.py."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from config.asgi import application
from rooms import profiles, traces
from rooms.keys import RoomKeys
from rooms.store import events as events_store
from tenants import services
from tenants.db import db_run
from tenants.models import Team
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(autouse=True)
def _database(transactional_db: None, redis_client_closed: None) -> None:
    """The access check reaches the database from its worker threads."""


def _team() -> Team:
    return services.team_ensure("revision")


async def _secret() -> str:
    return (await db_run(lambda: services.api_key_create(team=_team(), name="k"))).secret


async def _post(
    secret: str, body: Any, headers: dict[str, str] | None = None, path: str = "/mcp"
) -> httpx.Response:
    h = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "authorization": f"Bearer {secret}",
        **(headers or {}),
    }
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.post(path, headers=h, content=json.dumps(body))


def _modern(method: str, params: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": method,
        "params": {**(params or {}), "_meta": {**META, **(params or {}).get("_meta", {})}},
    }


def _heads(method: str, name: str | None = None) -> dict[str, str]:
    h = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        h["mcp-name"] = name
    return h


async def test_a_tools_call_needs_its_name_header_plain_or_base64() -> None:
    secret = await _secret()
    room = new_room_id("rev")
    call = _modern(
        "tools/call", {"name": "heartbeat", "arguments": {"roomId": room, "agentId": "a"}}
    )
    missing = await _post(secret, call, _heads("tools/call"))
    assert missing.status_code == 400 and missing.json()["error"]["code"] == -32020
    assert "Mcp-Name" in missing.json()["error"]["message"]
    plain = await _post(secret, call, _heads("tools/call", "heartbeat"))
    assert plain.status_code == 200 and plain.json()["result"]["isError"] is False
    encoded = "=?base64?" + base64.b64encode(b"heartbeat").decode() + "?="
    assert (await _post(secret, call, _heads("tools/call", encoded))).status_code == 200
    for bad in ("=?base64?%%%?=", "=?base64?" + base64.b64encode(b"read_plan").decode() + "?="):
        refused = await _post(secret, call, _heads("tools/call", bad))
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32020


async def test_a_missing_or_unplain_method_header_is_a_mismatch() -> None:
    secret = await _secret()
    listing = _modern("tools/list")
    gone = await _post(secret, listing, {"mcp-protocol-version": MODERN})
    assert gone.status_code == 400 and gone.json()["error"]["code"] == -32020
    padded = await _post(secret, listing, _heads(" tools/list"))
    assert padded.status_code == 400 and padded.json()["error"]["code"] == -32020
    assert (await _post(secret, listing, _heads("tools/list"))).status_code == 200


async def test_an_unsupported_version_is_said_before_anything_else_is_checked() -> None:
    secret = await _secret()
    # No _meta, no Mcp-Method: still the version is what the client must change first.
    bare = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
    answer = await _post(secret, bare, {"mcp-protocol-version": "2099-01-01"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32022 and answer.json()["id"] == 3
    assert error["data"] == {"supported": [MODERN], "requested": "2099-01-01"}


async def test_a_body_whose_version_differs_from_its_header_is_a_mismatch() -> None:
    secret = await _secret()
    listing = _modern("tools/list")
    listing["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2025-11-25"
    answer = await _post(secret, listing, _heads("tools/list"))
    assert answer.status_code == 400 and answer.json()["error"]["code"] == -32020


async def test_methods_the_revision_removed_are_not_found_while_2025_keeps_them() -> None:
    secret = await _secret()
    for method in ("ping", "initialize", "logging/setLevel"):
        answer = await _post(secret, _modern(method), _heads(method))
        assert answer.status_code == 404 and answer.json()["error"]["code"] == -32601, method
    old = await _post(
        secret,
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"mcp-protocol-version": "2025-11-25"},
    )
    assert old.status_code == 200 and old.json()["result"] == {}


async def test_list_results_say_how_long_they_keep_and_who_may_share_them() -> None:
    secret = await _secret()
    chosen = await _post(secret, _modern("tools/list"), _heads("tools/list"), "/mcp?tools=core")
    result = chosen.json()["result"]
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 3_600_000 and result["cacheScope"] == "public"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "roomservice"
    # Without ?tools= the credential's default chose the list: not for shared caches.
    defaulted = (await _post(secret, _modern("tools/list"), _heads("tools/list"))).json()
    assert defaulted["result"]["cacheScope"] == "private"
    discover = await _post(secret, _modern("server/discover"), _heads("server/discover"))
    found = discover.json()["result"]
    assert found["supportedVersions"] == [MODERN] and found["resultType"] == "complete"
    assert found["ttlMs"] == 3_600_000 and found["cacheScope"] == "private"
    # The 2025 wire has no such fields.
    old = await _post(
        secret,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"mcp-protocol-version": "2025-11-25"},
    )
    assert "ttlMs" not in old.json()["result"] and "resultType" not in old.json()["result"]


async def test_tools_come_in_one_order_every_time_in_both_eras() -> None:
    secret = await _secret()
    for _ in range(2):
        modern = await _post(secret, _modern("tools/list"), _heads("tools/list"))
        old = await _post(
            secret,
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            {"mcp-protocol-version": "2025-11-25"},
        )
        for answer in (modern, old):
            names = [t["name"] for t in answer.json()["result"]["tools"]]
            assert names == list(profiles.TOOLS["full"])


async def test_a_tool_error_is_a_complete_result_marked_as_an_error() -> None:
    secret = await _secret()
    call = _modern("tools/call", {"name": "read_plan", "arguments": {"roomId": "no such room!"}})
    answer = await _post(secret, call, _heads("tools/call", "read_plan"))
    result = answer.json()["result"]
    assert answer.status_code == 200 and result["isError"] is True
    assert result["resultType"] == "complete"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_every_older_handshake_still_negotiates_and_calls(version: str) -> None:
    secret = await _secret()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "old", "version": "1"},
        },
    }
    answer = await _post(secret, init)
    assert answer.json()["result"]["protocolVersion"] == version
    # 2024-11-05 and 2025-03-26 clients send no MCP-Protocol-Version header.
    heads = {} if version < "2025-06-18" else {"mcp-protocol-version": version}
    room = new_room_id("old")
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "heartbeat", "arguments": {"roomId": room, "agentId": "a"}},
    }
    called = await _post(secret, call, heads)
    assert called.status_code == 200 and called.json()["result"]["isError"] is False


async def test_a_session_id_from_an_old_client_is_ignored_and_never_echoed() -> None:
    secret = await _secret()
    answer = await _post(
        secret,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"mcp-protocol-version": "2025-11-25", "mcp-session-id": "abc"},
    )
    assert answer.status_code == 200 and "mcp-session-id" not in answer.headers


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://evil.example", False),
        ("https://127.0.0.1.evil.example", False),
        ("null", False),
        ("http://localhost:6274", True),
        ("http://127.0.0.1:8000", True),
    ],
)
async def test_a_browser_page_of_another_origin_is_refused(origin: str, allowed: bool) -> None:
    """DNS rebinding: a page of another site reaching a local server. ALLOWED_HOSTS is "*"
    in tests, so only the loopback names pass (and what MCP_ALLOWED_ORIGINS lists)."""
    secret = await _secret()
    answer = await _post(
        secret,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"mcp-protocol-version": "2025-11-25", "origin": origin},
    )
    if allowed:
        assert answer.status_code == 200
    else:
        assert answer.status_code == 403
        assert "id" not in answer.json() or answer.json()["id"] is None
        assert "MCP_ALLOWED_ORIGINS" in answer.json()["error"]["message"]


async def test_an_origin_the_operator_lists_is_allowed(settings: Any) -> None:
    settings.MCP_ALLOWED_ORIGINS = ["https://inspector.example"]
    settings.ALLOWED_HOSTS = ["rooms.example"]
    secret = await _secret()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for origin, status in (
        ("https://inspector.example", 200),
        ("https://rooms.example", 200),
        ("http://localhost:6274", 403),
    ):
        answer = await _post(secret, body, {"mcp-protocol-version": "2025-11-25", "origin": origin})
        assert answer.status_code == status, origin


# --- Trace context ------------------------------------------------------------------------


async def _posted_entry_fields(
    secret: str, params_meta: dict[str, Any], heads: dict[str, str]
) -> dict[str, str]:
    room = new_room_id("trace")
    call = _modern(
        "tools/call",
        {
            "name": "post_event",
            "arguments": {"roomId": room, "type": "note", "from": "a", "payload": {}},
            "_meta": params_meta,
        },
    )
    answer = await _post(secret, call, {**_heads("tools/call", "post_event"), **heads})
    assert answer.status_code == 200 and answer.json()["result"]["isError"] is False
    entries = await events_store.event_range(
        RoomKeys(room), start="-", end="+", count=10, reverse=True
    )
    return dict(entries[0][1])


async def test_a_calls_traceparent_is_recorded_on_the_events_it_writes() -> None:
    secret = await _secret()
    traced = await _posted_entry_fields(secret, {"traceparent": TRACE}, {})
    assert traced["trace"] == TRACE
    plain = await _posted_entry_fields(secret, {}, {})
    assert "trace" not in plain
    malformed = await _posted_entry_fields(secret, {"traceparent": "not-a-trace"}, {})
    assert "trace" not in malformed
    # W3C's own header carries it too; _meta wins over it.
    other = "00-11111111111111111111111111111111-2222222222222222-01"
    by_header = await _posted_entry_fields(secret, {}, {"traceparent": other})
    assert by_header["trace"] == other
    both = await _posted_entry_fields(secret, {"traceparent": TRACE}, {"traceparent": other})
    assert both["trace"] == TRACE
    assert traces.TRACEPARENT.get() == ""  # nothing leaks past the request


async def test_the_trace_is_not_part_of_the_event_a_reader_sees() -> None:
    secret = await _secret()
    room = new_room_id("trace")
    call = _modern(
        "tools/call",
        {
            "name": "post_event",
            "arguments": {"roomId": room, "type": "note", "from": "a", "payload": {}},
            "_meta": {"traceparent": TRACE},
        },
    )
    posted = (await _post(secret, call, _heads("tools/call", "post_event"))).json()["result"]
    assert "trace" not in json.dumps(posted["structuredContent"])


async def test_a_repeated_mirrored_header_is_refused() -> None:
    """A proxy may route on the first Mcp-Name while the server reads the last: a request
    carrying two copies of a mirrored header is refused, whichever era it speaks."""
    secret = await _secret()
    room = new_room_id("rev")
    call = _modern(
        "tools/call", {"name": "heartbeat", "arguments": {"roomId": room, "agentId": "a"}}
    )
    raw = [
        ("content-type", "application/json"),
        ("accept", "application/json"),
        ("authorization", f"Bearer {secret}"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "read_plan"),
        ("mcp-name", "heartbeat"),
    ]
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        twice = await client.post("/mcp", headers=raw, content=json.dumps(call))
        once = await client.post("/mcp", headers=raw[:-2] + raw[-1:], content=json.dumps(call))
    assert twice.status_code == 400 and twice.json()["error"]["code"] == -32020
    assert "mcp-name header is repeated" in twice.json()["error"]["message"]
    assert once.status_code == 200
