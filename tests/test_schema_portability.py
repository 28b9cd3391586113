"""Every tool's inputSchema and outputSchema is one the major clients and model providers
accept: the MCP Inspector's portability check (tests/schema_portability.py, a port of its
core/json/schemaLint.ts; tests/fixtures/inspector/SOURCE.md) finds nothing in what
tools/list sends, for every tool profile and protocol version. The check itself is proved
on a known-bad schema per rule. Publishing portable schemas changes nothing the server
accepts: arguments are validated with the pydantic models (rooms/schemas.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema  # type: ignore[import-untyped]  # no stubs; it comes with drf-spectacular
import pytest
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from config.asgi import application
from mcp_gateway import tools
from rooms import profiles, registry
from rooms import schemas as s
from rooms.profiles import Profile
from tenants import services
from tenants.db import db_run
from tests.schema_portability import portability_warnings

VERSIONS = [*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS]
MODERN = MODERN_PROTOCOL_VERSIONS[-1]


def _listed(profile: Profile, version: str) -> list[dict[str, Any]]:
    """tools/list's tools as mcp_gateway/app.py serializes them for `version`."""
    result = tools.tool_list_result(profile)
    wire = methods.serialize_server_result(
        "tools/list", version, result.model_dump(by_alias=True, mode="json", exclude_none=True)
    )
    listed: list[dict[str, Any]] = wire["tools"]
    return listed


def _warnings(listed: list[dict[str, Any]]) -> dict[str, list[str]]:
    found = {tool["name"]: portability_warnings(tool) for tool in listed}
    return {name: warnings for name, warnings in found.items() if warnings}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("profile", profiles.PROFILES)
def test_every_listed_schema_is_portable(profile: Profile, version: str) -> None:
    listed = _listed(profile, version)

    assert [t["name"] for t in listed] == list(profiles.TOOLS[profile])
    assert all("inputSchema" in t for t in listed)
    # core omits output schemas (mcp_gateway.tools.OUTPUT_SCHEMAS, issue 31)
    assert all(("outputSchema" in t) == (profile != "core") for t in listed)
    assert _warnings(listed) == {}


@pytest.mark.anyio
@pytest.mark.parametrize("modern", [False, True])
@pytest.mark.parametrize("profile", profiles.PROFILES)
async def test_what_the_door_sends_is_portable(
    profile: Profile, modern: bool, transactional_db: None, redis_client_closed: None
) -> None:
    team = await db_run(services.team_ensure, "portability")
    key = await db_run(lambda: services.api_key_create(team=team, name="k").secret)
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
    if modern:
        body["params"] = {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        }
        headers |= {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"}
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        answer = await client.post(
            f"/mcp?tools={profile}", headers=headers, content=json.dumps(body)
        )

    assert answer.status_code == 200, answer.text
    listed = answer.json()["result"]["tools"]
    assert len(listed) == len(profiles.TOOLS[profile])
    assert _warnings(listed) == {}


# One known-bad schema per rule, with what the Inspector reports for it, and a near miss
# the rule leaves alone.
FLAGGED: list[tuple[dict[str, Any], list[str]]] = [
    (
        {"inputSchema": {"type": "object", "properties": {"data": True}}},
        ["error boolean-schema at inputSchema.properties.data"],
    ),
    (
        {"outputSchema": {"type": "object", "properties": {"owner": {"type": ["string", "null"]}}}},
        ["warning type-union at outputSchema.properties.owner"],
    ),
    (
        {"inputSchema": {"type": "object", "properties": {"x": {"$ref": "https://e.com/x.json"}}}},
        ["warning remote-ref at inputSchema.properties.x"],
    ),
    (
        {"outputSchema": {"type": "object", "properties": {"payload": {"description": "any"}}}},
        ["warning untyped-schema at outputSchema.properties.payload"],
    ),
    # What pydantic makes of a JsonValue argument: the definition is `{}`.
    (
        {
            "inputSchema": {
                "type": "object",
                "$defs": {"JsonValue": {}},
                "properties": {"payload": {"$ref": "#/$defs/JsonValue"}},
            }
        },
        ["warning untyped-schema at inputSchema.$defs.JsonValue"],
    ),
    (
        {"inputSchema": {"type": "object", "properties": {"a b": {"items": {}}}}},
        ['warning untyped-schema at inputSchema.properties["a b"].items'],
    ),
]
LEFT_ALONE: list[dict[str, Any]] = [
    {"type": "object", "additionalProperties": True, "properties": {"n": {"not": {}}}},
    {"type": "object", "properties": {"o": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
    {"type": "object", "properties": {"m": {"type": ["string", "string"]}}},
    {"$id": "https://e.com/root", "type": "object", "properties": {"x": {"$ref": "other.json"}}},
    {
        "type": "object",
        "$defs": {"X": {"type": "string"}},
        "properties": {"x": {"$ref": "#/$defs/X"}},
    },
]


@pytest.mark.parametrize(("tool", "expected"), FLAGGED)
def test_the_check_flags_each_rule(tool: dict[str, Any], expected: list[str]) -> None:
    assert portability_warnings({"name": "t", **tool}) == expected


@pytest.mark.parametrize("schema", LEFT_ALONE)
def test_the_check_leaves_portable_spellings_alone(schema: dict[str, Any]) -> None:
    assert portability_warnings({"name": "t", "inputSchema": schema, "outputSchema": schema}) == []


def test_a_published_result_schema_still_admits_every_result() -> None:
    """Results are validated by clients against outputSchema: the portable spelling of an
    unconstrained payload and of a nullable field admits what the old one did."""
    events = registry.tool_get("read_events").output_schema()
    task = registry.tool_get("update_task").output_schema()["properties"]["owner"]

    event = {"id": "1-0", "type": "note", "from": "a", "to": "all", "timestamp": "t"}
    for payload in ({"n": None, "deep": [1, [2]]}, "text", 3, [[1]], None, True):
        jsonschema.validate([{**event, "payload": payload}], events["properties"]["result"])
    for owner in ("backend", None):
        jsonschema.validate(owner, task)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(3, task)


def test_a_published_argument_schema_loses_no_argument_or_constraint() -> None:
    """The server's validation is the pydantic model's, unchanged; the published schema
    still names every argument with its bounds, and null where null means something."""
    update = registry.tool_get("update_task").input_schema()
    post = registry.tool_get("post_event").input_schema()

    assert {"type": "null"} in update["properties"]["owner"]["anyOf"]
    assert "$defs" not in post and "$ref" not in json.dumps(post)
    assert post["properties"]["type"] == {"type": "string", "minLength": 1, "maxLength": 128}
    # A payload is still any JSON to the server, nested arrays included.
    given = {"roomId": "r1", "type": "note", "from": "a", "payload": [[1], "x"]}
    assert s.PostEventInput.model_validate(given).payload == [[1], "x"]
