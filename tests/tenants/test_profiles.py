"""Tool profiles at the doors (issue 25, point 1): /mcp?tools= chooses what a connection
lists and may call, a key or invite can carry a default (set and shown through the account
API), a key made before profiles sees every tool, and the REST tool door honours ?tools=
but not a credential's default."""

from __future__ import annotations

import gc
import json
from typing import Any

import httpx
import mcp_types as T
import pytest
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from rest_framework.test import APIClient

from config.asgi import application
from mcp_gateway.tools import tool_list_wire
from rooms import profiles, registry
from rooms.profiles import Profile
from tenants import services
from tenants.db import db_run
from tenants.models import ApiKey, Invite, Room, Team
from tests.conftest import new_room_id

pytestmark = [pytest.mark.anyio, pytest.mark.store]

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _team() -> Team:
    return services.team_ensure("profiles")


def _key(tools_profile: Profile | None = None) -> str:
    return services.api_key_create(team=_team(), name="k", tools_profile=tools_profile).secret


def _room() -> Room:
    return services.room_create(team=_team(), room_id=new_room_id("prof"), actor="test")


async def _post(
    path: str, secret: str | None, body: Any, headers: dict[str, str] | None = None
) -> httpx.Response:
    h = {"content-type": "application/json", "accept": "application/json"}
    if secret is not None:
        h["authorization"] = f"Bearer {secret}"
    h.update(headers or {})
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        return await client.post(path, headers=h, content=json.dumps(body))


async def _list(secret: str, query: str = "", *, modern: bool = False, rid: Any = 1) -> Any:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": "tools/list"}
    headers = {}
    if modern:
        body["params"] = {"_meta": META}
        headers = {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"}
    answer = await _post(f"/mcp{query}", secret, body, headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _names(listed: Any) -> list[str]:
    return [t["name"] for t in listed["result"]["tools"]]


async def _call(secret: str | None, name: str, arguments: dict[str, Any], query: str = "") -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return await _post(f"/mcp{query}", secret, body)


async def test_requests_with_invalid_params_leave_nothing_behind(redis_client_closed: None) -> None:
    """The growth a tenant could try: a stream of requests whose params fail validation.
    Each is answered -32602, and no error outlives its answer (a cache of them would keep
    every one, its traceback and frames with it)."""
    secret = await db_run(_key)
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 5}}

    def errors_alive() -> int:
        gc.collect()
        return sum(isinstance(o, ValidationError) for o in gc.get_objects())

    await _post("/mcp", secret, body)
    before = errors_alive()
    for _ in range(30):
        answer = await _post("/mcp", secret, body)
        assert answer.json()["error"]["code"] == T.INVALID_PARAMS, answer.text
    assert errors_alive() <= before


@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize("profile", profiles.PROFILES)
async def test_tools_list_answers_the_profiles_tools_in_registry_order(
    profile: Profile, modern: bool, redis_client_closed: None
) -> None:
    secret = await db_run(_key)
    listed = await _list(secret, f"?tools={profile}", modern=modern)
    assert _names(listed) == list(profiles.TOOLS[profile])
    if profile == "core":
        assert len(_names(listed)) <= profiles.CORE_MAX
    if profile == "roomd":
        assert len(_names(listed)) == 44
    # Each entry is the full list's entry for that tool, unchanged; core's compact (issue 31:
    # the same name, description and annotations, no outputSchema, a leaner inputSchema).
    everything = {t["name"]: t for t in (await _list(secret, modern=modern))["result"]["tools"]}
    for t in listed["result"]["tools"]:
        full = everything[t["name"]]
        if profile == "core":
            assert "outputSchema" not in t
            assert t["description"] == full["description"]
            assert t["annotations"] == full["annotations"]
            assert set(t["inputSchema"]["properties"]) <= set(full["inputSchema"]["properties"])
        else:
            assert t == full


async def test_the_server_builds_every_list_before_its_first_request(
    redis_client_closed: None,
) -> None:
    """Built on demand, a profile's first list cost up to 116 ms: the p99 of tools/list. The
    lifespan's startup builds them all, and each answer is those bytes with its id spliced in."""
    tool_list_wire.cache_clear()
    messages = iter(({"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}))
    said: list[str] = []

    async def receive() -> dict[str, str]:
        return next(messages)

    async def send(message: dict[str, Any]) -> None:
        said.append(message["type"])

    try:
        await application({"type": "lifespan"}, receive, send)
    finally:
        gc.unfreeze()  # the startup freezes what it built; this test process goes on
    assert said == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    built = tool_list_wire.cache_info().currsize

    secret = await db_run(_key)
    for profile in profiles.PROFILES:
        for version in (*HANDSHAKE_PROTOCOL_VERSIONS, None):
            headers = {"mcp-protocol-version": version} if version else {}
            for rid in (1, "second"):
                answer = await _post(
                    f"/mcp?tools={profile}",
                    secret,
                    {"jsonrpc": "2.0", "id": rid, "method": "tools/list"},
                    headers,
                )
                listed = tool_list_wire(profile, version or T.DEFAULT_NEGOTIATED_VERSION, None)
                assert answer.content == b'{"jsonrpc":"2.0","id":%s,"result":%s}' % (
                    json.dumps(rid).encode(),
                    listed,
                )
        modern = await _list(secret, f"?tools={profile}", modern=True)
        assert len(modern["result"]["tools"]) == len(profiles.TOOLS[profile])
    assert tool_list_wire.cache_info().currsize == built  # nothing was built on demand
    core, roomd, full = (
        tool_list_wire(p, T.DEFAULT_NEGOTIATED_VERSION, None) for p in ("core", "roomd", "full")
    )
    assert len(core) < len(roomd) < len(full)


async def test_a_key_made_before_profiles_sees_and_calls_every_tool(
    redis_client_closed: None,
) -> None:
    secret = await db_run(_key)
    assert await db_run(lambda: ApiKey.objects.get(name="k").tools_profile) is None
    room = await db_run(_room)
    assert _names(await _list(secret)) == list(registry.TOOLS_ORDER)
    answer = (await _call(secret, "lease_list", {"roomId": room.room_id})).json()["result"]
    assert answer["isError"] is False, answer


@pytest.mark.parametrize(
    "query", ["?tools=bogus", "?tools=", "?tools=Core", "?tools=core&tools=full"]
)
async def test_an_unknown_profile_in_the_url_is_refused_naming_the_profiles(
    query: str, redis_client_closed: None
) -> None:
    secret = await db_run(_key)
    given = {"?tools=core&tools=full": "core,full"}.get(query, query.removeprefix("?tools="))
    known = ", ".join(profiles.describe(p) for p in profiles.PROFILES)
    for bearer in (secret, None):  # the URL is wrong whoever calls: said before the bearer
        answer = await _post(
            f"/mcp{query}", bearer, {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
        )
        assert answer.status_code == 400
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {
                "code": -32602,
                "message": profiles.PROFILE_UNKNOWN.format(given=given, known=known),
                "data": {"given": given, "profiles": ["core", "roomd", "full"]},
            },
        }


async def test_other_query_parameters_are_left_alone(redis_client_closed: None) -> None:
    secret = await db_run(_key)
    assert _names(await _list(secret, "?session=x")) == list(registry.TOOLS_ORDER)
    assert _names(await _list(secret, "?session=x&tools=roomd")) == list(profiles.TOOLS["roomd"])


async def test_a_call_outside_the_profile_is_a_tool_error_naming_the_profile_that_has_it(
    redis_client_closed: None,
) -> None:
    secret = await db_run(_key)
    room = await db_run(_room)
    answer = await _call(secret, "lease_list", {"roomId": room.room_id}, "?tools=core")
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["isError"] is True
    assert result["content"][0] == {
        "type": "text",
        "text": profiles.NOT_IN_PROFILE.format(
            tool="lease_list",
            profile="core",
            count=len(profiles.TOOLS["core"]),
            where="full",
            suggest="full",
        ),
    }
    assert json.loads(result["content"][1]["text"]) == {
        "code": "tool_not_in_profile",
        "extra": {"tool": "lease_list", "profile": "core", "profiles": ["full"]},
    }
    # roomd's connection is told that claim_task is core's (and full's).
    told = (await _call(secret, "claim_task", {"roomId": room.room_id}, "?tools=roomd")).json()
    assert "claim_task is in core and full" in told["result"]["content"][0]["text"]
    assert "?tools=core in the server's URL" in told["result"]["content"][0]["text"]
    # A tool the profile has runs as ever.
    ok = (await _call(secret, "read_plan", {"roomId": room.room_id}, "?tools=core")).json()
    assert ok["result"]["isError"] is False


async def test_a_name_of_no_tool_is_a_protocol_error_naming_the_profiles_tools(
    redis_client_closed: None,
) -> None:
    secret = await db_run(_key)
    answer = (await _call(secret, "read_plans", {}, "?tools=core")).json()
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"] == registry.UNKNOWN_TOOL.format(
        name="read_plans", names=", ".join(profiles.TOOLS["core"])
    )


async def test_the_credentials_default_applies_and_the_url_overrides_it(
    redis_client_closed: None,
) -> None:
    core_key = await db_run(_key, "core")
    assert _names(await _list(core_key)) == list(profiles.TOOLS["core"])
    assert _names(await _list(core_key, modern=True)) == list(profiles.TOOLS["core"])
    assert _names(await _list(core_key, "?tools=full")) == list(registry.TOOLS_ORDER)
    assert _names(await _list(core_key, "?tools=roomd")) == list(profiles.TOOLS["roomd"])
    room = await db_run(_room)
    refused = (await _call(core_key, "lease_list", {"roomId": room.room_id})).json()["result"]
    assert refused["isError"] is True and 'profile is "core"' in refused["content"][0]["text"]
    allowed = await _call(core_key, "lease_list", {"roomId": room.room_id}, "?tools=full")
    assert allowed.json()["result"]["isError"] is False

    minted = await db_run(lambda: services.invite_create(room=room, tools_profile="roomd"))
    assert _names(await _list(minted.secret)) == list(profiles.TOOLS["roomd"])
    assert _names(await _list(minted.secret, "?tools=core")) == list(profiles.TOOLS["core"])


async def test_the_rest_door_honours_tools_in_its_url_but_not_a_keys_default(
    redis_client_closed: None,
) -> None:
    core_key = await db_run(_key, "core")
    room = await db_run(_room)
    path = f"/api/v1/rooms/{room.room_id}/tools/lease_list"
    # Hooks and scripts call the REST door with a key whose MCP connections may be core.
    assert (await _post(path, core_key, {})).status_code == 200
    refused = await _post(path + "?tools=core", core_key, {})
    assert refused.status_code == 404
    assert refused.json() == {
        "message": profiles.NOT_IN_PROFILE.format(
            tool="lease_list",
            profile="core",
            count=len(profiles.TOOLS["core"]),
            where="full",
            suggest="full",
        ),
        "code": "tool_not_in_profile",
        "extra": {"tool": "lease_list", "profile": "core", "profiles": ["full"]},
    }
    assert (await _post(path + "?tools=full", core_key, {})).status_code == 200
    bad = await _post(path + "?tools=bogus", core_key, {})
    assert bad.status_code == 400 and bad.json()["code"] == "unknown_profile"


def test_the_account_api_sets_and_shows_a_keys_and_an_invites_default(settings: Any) -> None:
    settings.API_KEYS = "boot:static-secret-profiles"
    api = APIClient()
    made = api.post(
        "/api/v1/teams",
        {"slug": "prof-api"},
        format="json",
        HTTP_AUTHORIZATION="Bearer static-secret-profiles",
    )
    assert made.status_code == 201, made.content
    assert made.json()["key"]["toolsProfile"] is None  # a team's first key: every tool
    auth = {"HTTP_AUTHORIZATION": f"Bearer {made.json()['key']['secret']}"}

    core = api.post(
        "/api/v1/keys", {"name": "agent", "toolsProfile": "core"}, format="json", **auth
    )
    assert core.status_code == 201, core.content
    assert core.json()["toolsProfile"] == "core"
    assert ApiKey.objects.get(pk=core.json()["id"]).tools_profile == "core"
    plain = api.post("/api/v1/keys", {"name": "plain"}, format="json", **auth)
    assert plain.json()["toolsProfile"] is None
    listed = {k["name"]: k["toolsProfile"] for k in api.get("/api/v1/keys", **auth).json()}
    assert listed == {"first key": None, "agent": "core", "plain": None}
    bad = api.post("/api/v1/keys", {"name": "x", "toolsProfile": "most"}, format="json", **auth)
    assert bad.status_code == 400 and "toolsProfile" in bad.json()["extra"]
    me = api.get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {core.json()['secret']}")
    assert me.json()["toolsProfile"] == "core"

    room = api.post("/api/v1/rooms", {}, format="json", **auth).json()["roomId"]
    invite = api.post(
        f"/api/v1/rooms/{room}/invites", {"toolsProfile": "roomd"}, format="json", **auth
    )
    assert invite.status_code == 201, invite.content
    assert invite.json()["toolsProfile"] == "roomd"
    assert Invite.objects.get(pk=invite.json()["id"]).tools_profile == "roomd"
    shown = api.get(f"/api/v1/rooms/{room}/invites", **auth).json()
    assert [i["toolsProfile"] for i in shown] == ["roomd"]
