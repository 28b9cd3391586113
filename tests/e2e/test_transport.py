"""/mcp at the HTTP level: auth before any tool runs, malformed JSON-RPC is a 4xx, both
protocol eras' envelopes, and no input that produces a 500."""

from __future__ import annotations

import json
import random
import string
from typing import Any

import httpx
import pytest

from rooms import errors, registry
from tests.conftest import new_room_id
from tests.e2e.conftest import TEAM_A_SECRET, TEAM_B_SECRET, RunningServer

pytestmark = pytest.mark.e2e

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def post(
    server: RunningServer,
    body: Any,
    *,
    secret: str | None = TEAM_A_SECRET,
    headers: dict[str, str] | None = None,
    raw: bytes | None = None,
) -> httpx.Response:
    h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if secret is not None:
        h["authorization"] = f"Bearer {secret}"
    h.update(headers or {})
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(server.mcp_url, content=content, headers=h, timeout=10)


def call(
    server: RunningServer, tool: str, arguments: Any, secret: str = TEAM_A_SECRET
) -> dict[str, Any]:
    r = post(
        server,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
        secret=secret,
    )
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()["result"]
    return result


def text(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


@pytest.mark.parametrize("secret", [None, "not-a-key", TEAM_A_SECRET + "x", "rs_live_unknown"])
def test_missing_or_unknown_bearer_is_401_and_runs_nothing(
    server: RunningServer, secret: str | None
) -> None:
    room = new_room_id()
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "add_task", "arguments": {"roomId": room, "title": "x"}},
    }
    r = post(server, body, secret=secret)
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert "bearer" in r.json()["error"]["message"].lower()
    # Nothing ran: the room is still unclaimed, so team B may take it and finds it empty.
    plan = call(server, "read_plan", {"roomId": room}, secret=TEAM_B_SECRET)
    assert plan["structuredContent"]["tasks"] == []


def test_wrong_auth_scheme_is_401(server: RunningServer) -> None:
    r = post(
        server,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        secret=None,
        headers={"authorization": f"Basic {TEAM_A_SECRET}"},
    )
    assert r.status_code == 401


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", -32700),
        (b"\xff\xfe", -32700),
        (b"[]", -32600),
        (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', -32600),
        (b'"hello"', -32600),
        (b'{"jsonrpc":"1.0","id":1,"method":"tools/list"}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":7}', -32600),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600),
        (b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}', -32600),
        (b'{"jsonrpc":"2.0","id":{},"method":"tools/list"}', -32600),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}', -32602),
    ],
)
def test_malformed_json_rpc_is_a_4xx_with_its_code(
    server: RunningServer, raw: bytes, code: int
) -> None:
    r = post(server, None, raw=raw)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == code


def test_notifications_are_accepted_without_a_body(server: RunningServer) -> None:
    r = post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert r.status_code == 202 and r.content == b""


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_other_http_methods_are_405(server: RunningServer, method: str) -> None:
    r = httpx.request(method, server.mcp_url, headers={"authorization": f"Bearer {TEAM_A_SECRET}"})
    assert r.status_code == 405 and r.headers["allow"] == "POST"


def test_wrong_content_type_is_415_and_unacceptable_accept_is_406(server: RunningServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert post(server, body, headers={"content-type": "text/plain"}).status_code == 415
    assert post(server, body, headers={"accept": "text/html"}).status_code == 406


def test_oversized_body_is_413(server: RunningServer) -> None:
    big = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "post_event", "arguments": {"roomId": "ab", "x": "y" * 1_100_000}},
    }
    assert post(server, big).status_code == 413


def test_unknown_method_and_unknown_tool_are_protocol_errors(server: RunningServer) -> None:
    r = post(server, {"jsonrpc": "2.0", "id": 9, "method": "nope/nothing"})
    assert r.status_code == 200 and r.json()["error"]["code"] == -32601 and r.json()["id"] == 9
    r = post(
        server,
        {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "nope", "arguments": {}},
        },
    )
    assert r.json()["error"]["code"] == -32602 and "read_plan" in r.json()["error"]["message"]


def test_initialize_negotiates_a_2025_revision(server: RunningServer) -> None:
    for asked, expected in [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("1999-01-01", "2025-11-25"),
    ]:
        r = post(
            server,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": asked,
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
        )
        result = r.json()["result"]
        assert result["protocolVersion"] == expected
        assert result["serverInfo"]["name"] == "roomservice"
        assert "mcp-session-id" not in r.headers


def test_tools_list_has_an_input_schema_per_tool(server: RunningServer) -> None:
    r = post(server, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    tools = r.json()["result"]["tools"]
    assert [t["name"] for t in tools] == [t.name for t in registry.TOOLS]
    for tool in tools:
        schema = tool["inputSchema"]
        room_scoped = registry.TOOLS_BY_NAME[tool["name"]].scope == "room"
        names_a_room = room_scoped and tool["name"] != "create_room_from_template"  # or a new
        assert schema["type"] == "object"
        assert ("roomId" in schema.get("required", [])) is names_a_room
        assert schema["additionalProperties"] is False
        assert tool["description"]
        assert isinstance(tool["annotations"]["readOnlyHint"], bool)


def modern_post(
    server: RunningServer, body: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    return post(server, body, headers={"mcp-protocol-version": MODERN, **headers})


def test_modern_single_exchange_call_needs_no_handshake(server: RunningServer) -> None:
    room = new_room_id()
    body = {
        "jsonrpc": "2.0",
        "id": "a",
        "method": "tools/call",
        "params": {
            "name": "heartbeat",
            "arguments": {"roomId": room, "agentId": "x"},
            "_meta": META,
        },
    }
    r = modern_post(server, body, {"mcp-method": "tools/call", "mcp-name": "heartbeat"})
    assert r.status_code == 200
    result = r.json()["result"]
    assert result["resultType"] == "complete"
    assert result["structuredContent"]["agentId"] == "x"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "roomservice"


def test_modern_discover_lists_the_supported_version(server: RunningServer) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}
    r = modern_post(server, body, {"mcp-method": "server/discover"})
    assert r.json()["result"]["supportedVersions"] == [MODERN]


@pytest.mark.parametrize(
    ("params", "headers", "status", "code"),
    [
        ({"name": "heartbeat", "arguments": {}}, {"mcp-method": "tools/call"}, 400, -32602),
        (
            {"name": "heartbeat", "arguments": {}, "_meta": META},
            {"mcp-method": "tools/list"},
            400,
            -32020,
        ),
        (
            {"name": "heartbeat", "arguments": {}, "_meta": META},
            {"mcp-method": "tools/call", "mcp-name": "read_plan"},
            400,
            -32020,
        ),
    ],
)
def test_modern_envelope_errors(
    server: RunningServer, params: dict[str, Any], headers: dict[str, str], status: int, code: int
) -> None:
    r = modern_post(
        server, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}, headers
    )
    assert r.status_code == status and r.json()["error"]["code"] == code


def test_modern_unsupported_version_names_the_supported_one(server: RunningServer) -> None:
    meta = {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    r = post(
        server,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
        headers={"mcp-protocol-version": "2099-01-01", "mcp-method": "tools/list"},
    )
    assert r.status_code == 400
    assert r.json()["error"]["code"] == -32022
    assert r.json()["error"]["data"]["supported"] == [MODERN]


def test_modern_initialize_is_not_a_method(server: RunningServer) -> None:
    r = modern_post(
        server,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": MODERN,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
                "_meta": META,
            },
        },
        {"mcp-method": "initialize"},
    )
    assert r.status_code == 404 and r.json()["error"]["code"] == -32601


@pytest.mark.parametrize("tool", [t.name for t in registry.TOOLS if t.scope == "room"])
def test_another_teams_room_is_refused_for_every_tool(server: RunningServer, tool: str) -> None:
    room = new_room_id("owned")
    call(server, "heartbeat", {"roomId": room, "agentId": "a"})  # team A claims it
    args = {"roomId": room}
    result = call(server, tool, args, secret=TEAM_B_SECRET)
    # Argument validation runs first for tools that need more than roomId, so give each
    # tool valid arguments by asking the schema what it requires.
    if result["isError"] and "Invalid arguments" in text(result):
        args = valid_arguments(tool, room)
        result = call(server, tool, args, secret=TEAM_B_SECRET)
    assert result["isError"] is True
    assert text(result) == errors.ROOM_ACCESS_DENIED


def valid_arguments(tool: str, room: str) -> dict[str, Any]:
    samples: dict[str, Any] = {
        "roomId": room,
        "title": "t",
        "description": "d",
        "taskId": "t_x",
        "status": "done",
        "agentId": "b",
        "type": "note",
        "summary": "s",
        "consuming_agents": [],
        "payload": {"text": "hi"},
        "author": "b",
        "id": "c_x",
        "from": "b",
        "to": "all",
        "eventId": "1-0",
        "replyToId": "1-0",
        "resource": "r",
        "key": "k",
        "value": "v",
        "priority": 1,
        "dependsOn": "t_y",
        "targetType": "task",
        "targetId": "t_x",
        "requestedBy": "b",
        "reviewer": "c",
        "reviewId": "r_x",
        "q": "x*",
        "templateId": "blank",
        "path": "src/**",
        "leaseId": "l_x",
        "sha256": "a" * 64,
        "text": "hi",
        "body": "hi",
        "messageId": "m_x",
        "evidence": [{"kind": "note", "text": "ok"}],
        "verdict": "accept",
        "handoffId": "h_x",
    }
    if tool == "set_room_status":
        samples["status"] = "paused"  # a room's status, not a task's
    model = registry.TOOLS_BY_NAME[tool].input_model
    return {
        "roomId": room,  # named even where it may be left out (create_room_from_template)
        **{
            (f.alias or n): samples[f.alias or n]
            for n, f in model.model_fields.items()
            if f.is_required() or n == "leaseId"  # one of leaseId or path is required
        },
    }


def test_no_input_produces_a_500(server: RunningServer) -> None:
    """Random argument shapes for every tool: always a JSON-RPC answer, never a 5xx."""
    rng = random.Random(20261129)
    values: list[Any] = [
        None,
        True,
        -1,
        0,
        10**30,
        1.5,
        "",
        "x" * 70,
        "a__b",
        [],
        [1, "x"],
        {},
        {"a": {"b": []}},
        "".join(rng.choices(string.printable, k=40)),
        "\ud800",
        "1-0",
        "99999999999999-0",
    ]
    room = new_room_id("fuzz")
    for tool in registry.TOOLS:
        fields = [f.alias or n for n, f in tool.input_model.model_fields.items()]
        if tool.scope != "room":
            continue
        for _ in range(6):  # six random shapes per tool, about 400 calls in all
            args: dict[str, Any] = {"roomId": room}
            for name in fields:
                if rng.random() < 0.7:
                    args[name] = rng.choice(values)
            if rng.random() < 0.2:
                args["roomId"] = rng.choice(values)
            r = post(
                server,
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": tool.name, "arguments": args},
                },
            )
            assert r.status_code < 500, (tool.name, args, r.text)
            assert "result" in r.json() or "error" in r.json()
